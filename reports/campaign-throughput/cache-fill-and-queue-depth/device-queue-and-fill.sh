#!/bin/bash
# One call on one H100's host. Main at the commit that keeps three batches queued on each GPU
# ("three"); the commit before it, two batches ("two", from `git archive` into build/base-two;
# BASE names it). In order:
#   1. a 12,000,000-program campaign (seed 1901) on an empty kernel cache: what a first run costs;
#   2. `cache fill` on a second, empty folder: its time is the fill's cost;
#   3. on the filled folder, 12,000,000 programs of seed 1901 again, two against three, alternating
#      (two, three, two, three): every kernel form cached, the same work in each;
#   4. a long campaign with a fresh seed (1902) on the filled folder, at three.
# Results are tarred after every step, so a call cut off at its limit still brings back what ran.
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/r; mkdir -p $R
save() { (cd $OUT && tar czf results.tgz r); }
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt
nproc > $R/nproc.txt
campaign() {  # campaign NAME TREE CACHE [options]
  name=$1; tree=$2; cache=$3; shift 3
  (cd $tree && TCGEN05_CACHE=$cache PYTHONPATH=$tree python3 -m conformance campaign "$@" --json $R/$name.json \
     > $R/$name.log 2>&1)
  tail -1 $R/$name.log; save
}
campaign cold-1901 $PWD /tmp/kc-cold --programs 12000000 --seed 1901
( time TCGEN05_CACHE=/tmp/kc python3 -m conformance cache fill --json > $R/fill.json 2> $R/fill.log ) 2> $R/fill-time.txt
cat $R/fill.json | head -c 400; echo; save
campaign two-1 $PWD/build/base-two /tmp/kc --programs 12000000 --seed 1901
campaign three-1 $PWD /tmp/kc --programs 12000000 --seed 1901
campaign two-2 $PWD/build/base-two /tmp/kc --programs 12000000 --seed 1901
campaign three-2 $PWD /tmp/kc --programs 12000000 --seed 1901
campaign long-1902 $PWD /tmp/kc --programs ${LONG:-60000000} --seed 1902

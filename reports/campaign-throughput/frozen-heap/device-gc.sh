#!/bin/bash
# One call on one H100's host: does the garbage collector idle the GPU? Main at the commit that
# freezes each process's heap once started ("frozen", 690ff75); the commit before it, which only
# measures the collector's pauses ("measured", cb421fe, from `git archive` into build/base-gc).
# `cache fill` first, then 12,000,000 programs of seed 1903 four times, alternating (measured,
# frozen, measured, frozen), then a long campaign with a fresh seed (1904) on whichever tree had
# the higher mean end_to_end_over_gpu. Results are tarred after every step.
export PYTHONUNBUFFERED=1
R=$OUT/r; mkdir -p $R
save() { (cd $OUT && tar czf results.tgz r); }
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt
PYTHONPATH=$PWD TCGEN05_CACHE=/tmp/kc python3 -m conformance cache fill --json > $R/fill.json 2> $R/fill.log
campaign() {  # campaign NAME TREE [options]
  name=$1; tree=$2; shift 2
  (cd $tree && TCGEN05_CACHE=/tmp/kc PYTHONPATH=$tree python3 -m conformance campaign "$@" --json $R/$name.json \
     > $R/$name.log 2>&1)
  tail -1 $R/$name.log; save
}
campaign measured-1 $PWD/build/base-gc --programs 12000000 --seed 1903
campaign frozen-1 $PWD --programs 12000000 --seed 1903
campaign measured-2 $PWD/build/base-gc --programs 12000000 --seed 1903
campaign frozen-2 $PWD --programs 12000000 --seed 1903
better=$(python3 -c "
import json
r = lambda n: json.load(open('$R/' + n + '.json'))['throughput']['end_to_end_over_gpu']
print('frozen' if r('frozen-1') + r('frozen-2') >= r('measured-1') + r('measured-2') else 'measured')")
tree=$PWD; [ "$better" = measured ] && tree=$PWD/build/base-gc
echo "long run on $better"
campaign long-$better-1904 $tree --programs ${LONG:-80000000} --seed 1904

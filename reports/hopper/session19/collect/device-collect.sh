#!/bin/bash
# One call on one H100's host. Main at the commit whose GPU worker collects garbage itself right
# after it queues a batch ("collect", 20bbda1); the commit before it, whose worker leaves
# the collector to its thresholds with the heap frozen ("frozen", 690ff75, from `git archive`
# into build/base-frozen). First the device suite at main (tests/device), then `cache fill`, then
# 12,000,000 programs of seed 1905 four times, alternating (frozen, collect, frozen, collect).
export PYTHONUNBUFFERED=1
R=$OUT/r; mkdir -p $R
save() { (cd $OUT && tar czf results.tgz r); }
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt
PYTHONPATH=$PWD timeout 200 python3 -m pytest tests/device -q -rs -p no:cacheprovider > $R/device-tests.txt 2>&1
tail -1 $R/device-tests.txt; save
PYTHONPATH=$PWD TCGEN05_CACHE=/tmp/kc python3 -m conformance cache fill --json > $R/fill.json 2> $R/fill.log
campaign() {  # campaign NAME TREE [options]
  name=$1; tree=$2; shift 2
  (cd $tree && TCGEN05_CACHE=/tmp/kc PYTHONPATH=$tree python3 -m conformance campaign "$@" --json $R/$name.json \
     > $R/$name.log 2>&1)
  tail -1 $R/$name.log; save
}
campaign frozen-1 $PWD/build/base-frozen --programs 12000000 --seed 1905
campaign collect-1 $PWD --programs 12000000 --seed 1905
campaign frozen-2 $PWD/build/base-frozen --programs 12000000 --seed 1905
campaign collect-2 $PWD --programs 12000000 --seed 1905

#!/bin/bash
# The producers' speed-up on one H100 (main at 80068d7, "after") against the session's start
# (8bfa22d, "before", from `git archive` into build/base-8bfa22d), and the model's sample at one
# program in 1,024 instead of 512 (after, `--cross-check-every 1024`): a cold warm-up with seed 1812
# fills the kernel cache, then every run draws the same seed (1812), so all do the same work with
# every kernel form cached, alternating before and after. The host's CPUs are recorded (lscpu, and
# /proc/stat before and after for steal time).
export TCGEN05_CACHE=/tmp/kc
mkdir -p $OUT/r
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/r/gpu.txt
lscpu > $OUT/r/lscpu.txt
head -1 /proc/stat > $OUT/r/stat-before.txt
run() {  # run NAME TREE [options]: one campaign of 20,000,000 programs, seed 1812
  name=$1; tree=$2; shift 2
  (cd $tree && PYTHONPATH=$PWD python3 -m conformance campaign --programs 20000000 --seed 1812 "$@" \
     --json $OUT/r/$name.json > $OUT/r/$name.log 2>&1)
}
run warm-up-after $PWD
run before-1 build/base-8bfa22d
run after-1 $PWD
run after-sample1024 $PWD --cross-check-every 1024
run before-2 build/base-8bfa22d
run after-2 $PWD
head -1 /proc/stat > $OUT/r/stat-after.txt
cd $OUT && tar czf results.tgz r && rm -rf r

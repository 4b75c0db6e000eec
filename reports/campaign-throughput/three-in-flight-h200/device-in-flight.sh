#!/bin/bash
# three chunks in flight per GPU worker (this checkout) against two (c782e91, `git archive` into
# build/base-c782e91): the campaign at its defaults, one GPU, alternating, after a warm-up run that
# fills the kernel cache; then the GPU tests of this checkout
ROOT=$PWD
export TCGEN05_CACHE=/tmp/kc
mkdir -p $OUT/r
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/r/gpu.txt
campaign() {  # name, tree, arguments
  local name=$1 tree=$2; shift 2
  (cd $tree && PYTHONPATH=$tree python3 -m conformance campaign --gpus all --json $OUT/r/campaign-$name.json "$@" > $OUT/r/campaign-$name.log 2>&1)
}
campaign warm-up $ROOT --programs 12000000 --seed 10501
campaign three-a $ROOT --programs 12000000 --seed 10501
campaign two-a $ROOT/build/base-c782e91 --programs 12000000 --seed 10501
campaign three-b $ROOT --programs 12000000 --seed 10501
campaign two-b $ROOT/build/base-c782e91 --programs 12000000 --seed 10501
PYTHONPATH=$ROOT timeout 200 python3 -m pytest -q -p no:cacheprovider tests/device > $OUT/r/device-tests.txt 2>&1
cd $OUT && tar czf results.tgz r && rm -rf r

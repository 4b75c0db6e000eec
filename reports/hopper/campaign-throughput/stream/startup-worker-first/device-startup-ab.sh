#!/bin/bash
# the worker started first, its CUDA context made while its modules import (the working tree of
# b3906fe plus worker-first.patch, since reverted: see section 5f of the README)
# against b3906fe (`git archive` into build/base-b3906fe): the campaign's startup, one GPU,
# alternating after a warm-up run that fills the kernel cache
ROOT=$PWD
export TCGEN05_CACHE=/tmp/kc
mkdir -p $OUT/r
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/r/gpu.txt
campaign() {  # name, tree, arguments
  local name=$1 tree=$2; shift 2
  (cd $tree && PYTHONPATH=$tree python3 -m conformance campaign --gpus all --json $OUT/r/campaign-$name.json "$@" > $OUT/r/campaign-$name.log 2>&1)
}
campaign warm-up $ROOT --programs 4000000 --seed 11201
for i in a b c; do
  campaign after-$i $ROOT --programs 4000000 --seed 11201
  campaign before-$i $ROOT/build/base-b3906fe --programs 4000000 --seed 11201
done
cd $OUT && tar czf results.tgz r && rm -rf r

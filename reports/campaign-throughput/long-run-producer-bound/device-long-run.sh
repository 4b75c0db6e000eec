#!/bin/bash
# Issue 16's ratio over a long run on one H100: a 12,000,000-program warm-up (seed 1711) fills the
# kernel cache, then one 120,000,000-program campaign at the defaults with a fresh seed (1712), so that
# startup is a small share of the run; the report gives the GPU's busy seconds, the idle between
# batches, startup, and the kernel forms still assembled during the run.
export PYTHONPATH=$PWD TCGEN05_CACHE=/tmp/kc
mkdir -p $OUT/r
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/r/gpu.txt
python3 -m conformance campaign --programs 12000000 --seed 1711 --json $OUT/r/campaign-warm-up-1711.json \
  > $OUT/r/campaign-warm-up-1711.log 2>&1
python3 -m conformance campaign --programs 120000000 --seed 1712 --json $OUT/r/campaign-long-1712.json \
  > $OUT/r/campaign-long-1712.log 2>&1
cd $OUT && tar czf results.tgz r && rm -rf r

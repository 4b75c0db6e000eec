#!/bin/bash
# `cache fill` on one H100's host, and what it changes for a campaign (main at the commit that adds
# it): a 12,000,000-program campaign (seed 1822) on an empty kernel cache, the same campaign on a
# second cache filled by `cache fill` (its time is the fill's cost), then one long campaign of
# 100,000,000 programs with a fresh seed (1823) on the filled cache.
export PYTHONPATH=$PWD
mkdir -p $OUT/r
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/r/gpu.txt
TCGEN05_CACHE=/tmp/kc-cold python3 -m conformance campaign --programs 12000000 --seed 1822 \
  --json $OUT/r/cold-1822.json > $OUT/r/cold-1822.log 2>&1
export TCGEN05_CACHE=/tmp/kc-filled
/usr/bin/time -v python3 -m conformance cache fill --json > $OUT/r/fill.json 2> $OUT/r/fill.log
python3 -m conformance campaign --programs 12000000 --seed 1822 --json $OUT/r/filled-1822.json \
  > $OUT/r/filled-1822.log 2>&1
python3 -m conformance campaign --programs 100000000 --seed 1823 --json $OUT/r/filled-long-1823.json \
  > $OUT/r/filled-long-1823.log 2>&1
cd $OUT && tar czf results.tgz r && rm -rf r

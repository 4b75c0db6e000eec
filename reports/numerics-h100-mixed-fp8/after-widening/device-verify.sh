#!/bin/bash
# After the fp8 widening of sm_90a.mma_sync (993aa8e) and with mixed e4m3 x e5m2 mma.sp modelled
# (A-MMA-SP-MIXED-FP8's guard lifted), on one sm_90 GPU, fresh seeds:
#   1. the GPU tests;
#   2. the 8 mixed fp8 combinations against the widened model (expected: 0 mismatches);
#   3. the 24 combinations, 10^9 inner products each, every one checked by the integer checker on the GPU;
#   4. two campaigns at the defaults (cold kernel cache, then warm): mixed fp8 mma.sp programs now run
#      and are judged bit for bit (programs_by_form_and_formats counts them).
export PYTHONPATH=$PWD TCGEN05_CACHE=/tmp/kc
mkdir -p $OUT/r
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/r/gpu.txt
timeout 200 python3 -m pytest -q -p no:cacheprovider tests/device > $OUT/r/device-tests.txt 2>&1
python3 -m conformance numerics measure --mixed-fp8 --count 3e7 --seed 1701 --tiny 4096 \
  --json $OUT/r/mixed-fp8.json --samples $OUT/r/mixed-fp8.npz > $OUT/r/mixed-fp8.log 2>&1
python3 -m conformance numerics measure --checker gpu --count 1e9 --seed 1702 \
  --json $OUT/r/gpu-check-1e9.json --markdown $OUT/r/gpu-check-1e9.md > $OUT/r/gpu-check-1e9.log 2>&1
for seed in 1703 1704; do
  python3 -m conformance campaign --programs 12000000 --seed $seed --json $OUT/r/campaign-$seed.json \
    > $OUT/r/campaign-$seed.log 2>&1
done
cd $OUT && tar czf results.tgz r && rm -rf r

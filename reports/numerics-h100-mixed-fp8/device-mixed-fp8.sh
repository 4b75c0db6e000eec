#!/bin/bash
# A-MMA-SP-MIXED-FP8: mixed fp8 inner products (e4m3 x e5m2, e5m2 x e4m3; mma.sync and wgmma; f32
# and f16 accumulators) on an sm_90 GPU against the model under sm_90a (sm_90a.mma_sync for
# mma.sync), with the same-type fp8 combinations of both instructions measured alongside as the control
export PYTHONPATH=$PWD
mkdir -p $OUT/r
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/r/gpu.txt
python3 -m conformance numerics measure --mixed-fp8 --count 3e7 --seed 16 --tiny 4096 \
  --json $OUT/r/mixed.json --samples $OUT/r/mixed.npz > $OUT/r/mixed.log 2>&1
python3 -m conformance numerics measure --only .e4m3. --only .e5m2. --count 3e7 --seed 16 \
  --json $OUT/r/same.json --samples $OUT/r/same.npz > $OUT/r/same.log 2>&1
cd $OUT && tar czf results.tgz r && rm -rf r
# (a second call) the lowering against every vector of 4 chunks per fp8 mma.sync combination:
#   python3 reports/numerics-h100-mixed-fp8/hmma_lowering.py --gpu --count 4e6 > $OUT/hmma-lowering-gpu.json
# (on the dev machine) the same over the kept samples:
#   python3 reports/numerics-h100-mixed-fp8/hmma_lowering.py reports/numerics-h100-mixed-fp8/mixed.npz reports/numerics-h100-mixed-fp8/same.npz

#!/bin/bash
# `numerics proof` after the inference learned widened inputs: both Hopper profiles inferred from
# nothing on the GPU (now with the directed mixed fp8 vectors that settle `widened_inputs`) and
# compared with sm_90a and sm_90a.mma_sync (widened_inputs included), then 10^8 fresh inner products
# per input format against the inferred profiles. One sm_90 GPU.
export PYTHONPATH=$PWD
mkdir -p $OUT/r
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/r/gpu-proof.txt
python3 -m conformance numerics proof --out $OUT/r/proof --per-format 1e8 > $OUT/r/proof.log 2>&1
echo "exit $?" >> $OUT/r/proof.log
cd $OUT && tar czf results.tgz r && rm -rf r

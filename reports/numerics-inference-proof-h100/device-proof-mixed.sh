#!/bin/bash
# `numerics proof` once its fresh inner products include the 8 mixed fp8 combinations (which
# depend on the widened inputs the inference reads off directed vectors): both Hopper profiles
# inferred from nothing on the GPU, compared with sm_90a and sm_90a.mma_sync, then 10^8 fresh
# inner products per input format and per mixed pair against the inferred profiles. One sm_90 GPU.
export PYTHONPATH=$PWD
mkdir -p $OUT/r
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/r/gpu-proof-mixed.txt
python3 -m conformance numerics proof --out $OUT/r/proof-mixed --per-format 1e8 > $OUT/r/proof-mixed.log 2>&1
echo "exit $?" >> $OUT/r/proof-mixed.log
cd $OUT && tar czf results.tgz r && rm -rf r

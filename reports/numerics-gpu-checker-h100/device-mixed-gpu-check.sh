#!/bin/bash
# The 8 mixed fp8 combinations checked at silicon speed (`numerics measure --checker gpu --mixed-fp8`,
# B drawn in its own format on the GPU), 10^9 and then 10^10 inner products each; the 24 same-type
# combinations at 10^9 after the kernels' change; then the GPU tests. One sm_90 GPU, fresh seeds.
export PYTHONPATH=$PWD
mkdir -p $OUT/r
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/r/gpu.txt
python3 -m conformance numerics measure --checker gpu --mixed-fp8 --count 1e9 --seed 1721 \
  --json $OUT/r/mixed-gpu-1e9.json --markdown $OUT/r/mixed-gpu-1e9.md > $OUT/r/mixed-gpu-1e9.log 2>&1
python3 -m conformance numerics measure --checker gpu --count 1e9 --seed 1722 \
  --json $OUT/r/same-gpu-1e9.json --markdown $OUT/r/same-gpu-1e9.md > $OUT/r/same-gpu-1e9.log 2>&1
python3 -m conformance numerics measure --checker gpu --mixed-fp8 --count 1e10 --seed 1723 \
  --json $OUT/r/mixed-gpu-1e10.json --markdown $OUT/r/mixed-gpu-1e10.md > $OUT/r/mixed-gpu-1e10.log 2>&1
timeout 200 python3 -m pytest -q -p no:cacheprovider tests/device > $OUT/r/device-tests-70706e7.txt 2>&1
cd $OUT && tar czf results.tgz r && rm -rf r

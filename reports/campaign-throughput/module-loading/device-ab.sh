#!/bin/bash
ROOT=$PWD
export TCGEN05_CACHE=/tmp/kc PYTHONPATH=$ROOT
mkdir -p $OUT/r
for mode in LAZY EAGER; do
  CUDA_MODULE_LOADING=$mode python3 reports/campaign-throughput/module-loading/module_load_wait.py > $OUT/r/module-load-$mode.json 2> $OUT/r/module-load-$mode.err
done
for mode in LAZY EAGER LAZY EAGER; do
  CUDA_MODULE_LOADING=$mode python3 bench/stream_worker.py --chunks 16 --data-sets 256 --cross-check-every 512 --repeat 1 >> $OUT/r/worker-ds256-$mode.jsonl 2>> $OUT/r/worker-ds256-$mode.err
  CUDA_MODULE_LOADING=$mode python3 bench/stream_worker.py --chunks 60 --repeat 1 >> $OUT/r/worker-ds32-$mode.jsonl 2>> $OUT/r/worker-ds32-$mode.err
done
cd $OUT && tar czf results.tgz r && rm -rf r

#!/bin/bash
# two campaign workers on one GPU: does a second context keep the GPU busy while one loads modules?
ROOT=$PWD
export TCGEN05_CACHE=/tmp/kc PYTHONPATH=$ROOT
mkdir -p $OUT/r
nvidia-smi --query-gpu=timestamp,utilization.gpu --format=csv,noheader -lms 50 > $OUT/r/util.txt &
SMI=$!
python3 bench/stream_worker.py --chunks 64 --seed 11 --repeat 2 > $OUT/r/one-a.json 2>&1
python3 bench/stream_worker.py --chunks 64 --seed 12 --repeat 2 > $OUT/r/one-b.json 2>&1
date +%s.%N > $OUT/r/two-start.txt
start=$(python3 -c "import time; print(time.time() + 30)")
python3 bench/stream_worker.py --chunks 64 --seed 11 --repeat 3 --start-at $start > $OUT/r/two-a.json 2>&1 &
A=$!
python3 bench/stream_worker.py --chunks 64 --seed 12 --repeat 3 --start-at $start > $OUT/r/two-b.json 2>&1 &
B=$!
wait $A $B
kill $SMI
cd $OUT && tar czf results.tgz r && rm -rf r

#!/bin/bash
ROOT=$PWD
export TCGEN05_CACHE=/tmp/kc PYTHONPATH=$ROOT
mkdir -p $OUT/r
campaign() { local name=$1; shift; python3 -m conformance campaign --gpus all --json $OUT/r/campaign-$name.json "$@" > $OUT/r/campaign-$name.log 2>&1; }
campaign warm-up --programs 2000000 --seed 10601
campaign a --programs 4000000 --seed 10601
campaign b --programs 4000000 --seed 10601
for i in 1 2; do /usr/bin/time -f "import campaign %e s" python3 -c "import conformance.tools.campaign" 2>> $OUT/r/imports.txt; done
python3 -X importtime -c "import conformance.tools.campaign" 2> $OUT/r/importtime.txt
python3 - >> $OUT/r/imports.txt 2>&1 <<'PY'
import time
t0 = time.perf_counter()
from conformance.tools import campaign as c
t1 = time.perf_counter()
l = c.make_launcher("gpu", 0)
t2 = time.perf_counter()
print(f"import {t1-t0:.3f} s, launcher {t2-t1:.3f} s")
PY
cd $OUT && tar czf results.tgz r && rm -rf r

#!/bin/bash
# Issue 33, item 1 (scaling): the campaign on 1, 2 and 4 GPUs of one host, with the same seed and
# count, after `cache fill` has assembled every kernel form. Run in the root of a checkout installed
# with `python3 -m pip install --no-deps --no-build-isolation -e .`, with $OUT set (the device tool
# sets it); each run's report, log and the summary land under $OUT. About 5 minutes on 4 x H200, 9 at most.
set -u
SEED=${SEED:-77001}  # the seed of the measurement
COUNT=${COUNT:-40000000}
export TCGEN05_CACHE=${TCGEN05_CACHE:-/tmp/kc}
mkdir -p "$OUT"
{
  nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader
  echo "cores: $(nproc)"
  echo "commit: $(git rev-parse HEAD 2>/dev/null || echo unknown)"
  git status --short --untracked-files=no 2>/dev/null | sed 's/^/changed: /'
} > "$OUT/machine.txt"
# at most 9 minutes in all: the fill took 15 s on an H100 host's 16 cores; one H200 ran 391,000
# programs/s end to end (102 s for 4 x 10^7), two 757,000, four 1,236,000
{ time timeout 120 python3 -m tcgen05_conformance cache fill --json > "$OUT/fill.json"; } 2> "$OUT/fill.log"
declare -A LIMIT_S=([1]=170 [2]=110 [4]=80)
for gpus in 1 2 4; do
  timeout "${LIMIT_S[$gpus]}" python3 -m tcgen05_conformance campaign --gpus "$gpus" --count "$COUNT" --seed "$SEED" \
    --out "$OUT/gpus-$gpus.json" > "$OUT/gpus-$gpus.log" 2>&1
  echo "gpus $gpus: exit status $?" >> "$OUT/machine.txt"
done
# the settings the host-cost measurements suggest for four GPUs (reports/campaign-host-cost/): twice the data sets per
# instruction and half the model's cross-checks, on 4 GPUs, for comparison only (the defaults are unchanged)
timeout 80 python3 -m tcgen05_conformance campaign --gpus 4 --count "$COUNT" --seed "$SEED" --data-sets 512 \
  --cross-check-every 1024 --out "$OUT/gpus-4-data-sets-512-cross-check-1024.json" \
  > "$OUT/gpus-4-data-sets-512-cross-check-1024.log" 2>&1
echo "gpus 4, --data-sets 512 --cross-check-every 1024: exit status $?" >> "$OUT/machine.txt"
python3 reports/campaign-scaling/summarize.py "$OUT"/gpus-{1,2,4}.json "$OUT/gpus-4-data-sets-512-cross-check-1024.json" \
  > "$OUT/summary.md"
cat "$OUT/summary.md"

#!/bin/bash
# Issue 33, item 1 (scaling): the campaign on 1, 2, 4 and 8 GPUs of one host (as many as it has),
# with the same seed and count, after `cache fill` has assembled every kernel form: at the defaults
# (512 data sets per instruction, every 1024th program cross-checked by the Python model), then at
# the defaults before them (256 and 512; the producers' cost of both: reports/campaign-host-cost/).
# Run in the root of a checkout installed with
# `python3 -m pip install --no-deps --no-build-isolation -e .`, with $OUT set (the device tool sets
# it) and $COMMIT the commit measured; reports, logs and summary.md land under $OUT.
set -u
SEED=${SEED:-77001}  # the seed of the measurement
COUNT=${COUNT:-40000000}
export TCGEN05_CACHE=${TCGEN05_CACHE:-/tmp/kc}
mkdir -p "$OUT"
ON_HOST=$(nvidia-smi -L | wc -l)
{
  nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader
  echo "cores: $(nproc)"
  echo "commit: ${COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}"
} > "$OUT/machine.txt"
{ time timeout 120 python3 -m tcgen05_conformance cache fill --json > "$OUT/fill.json"; } 2> "$OUT/fill.log"
declare -A LIMIT_S=([1]=200 [2]=120 [4]=80 [8]=60)
VARIANT="data-sets-256-cross-check-512"
run() {  # GPUs, report name, extra options
  timeout "${LIMIT_S[$1]}" python3 -m tcgen05_conformance campaign --gpus "$1" --count "$COUNT" --seed "$SEED" "${@:3}" \
    --out "$OUT/$2.json" > "$OUT/$2.log" 2>&1
  echo "$2: exit status $?" >> "$OUT/machine.txt"
}
DEFAULTS=() VARIANTS=()
for gpus in 1 2 4 8; do
  [ "$gpus" -le "$ON_HOST" ] || continue
  run "$gpus" "gpus-$gpus"
  run "$gpus" "gpus-$gpus-$VARIANT" --data-sets 256 --cross-check-every 512
  DEFAULTS+=("$OUT/gpus-$gpus.json") VARIANTS+=("$OUT/gpus-$gpus-$VARIANT.json")
done
{
  echo "At the defaults:"; echo
  python3 reports/campaign-scaling/summarize.py "${DEFAULTS[@]}"
  echo; echo "With --data-sets 256 --cross-check-every 512 (the defaults before):"; echo
  python3 reports/campaign-scaling/summarize.py "${VARIANTS[@]}"
} > "$OUT/summary.md"
cat "$OUT/summary.md"

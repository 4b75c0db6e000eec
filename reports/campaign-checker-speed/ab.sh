#!/bin/bash
# The integer checker before and after a change, on one GPU in one call: the campaign's GPU worker
# alone (bench/stream_worker.py: chunks prepared beforehand, so no producer is waited for) on the
# same seed and chunks, the two trees alternating, each pass with its own launcher.
#   ab.sh BEFORE_CHECKOUT AFTER_CHECKOUT     # under $OUT: stream-worker-{before,after}-{1,2}.json, their
#                                             # stderr in ab.log, machine.txt, fill.json, summary.md
# BEFORE_CHECKOUT/COMMIT names the commit of a checkout without git; $COMMIT the after side's.
# A checkout is imported as the tcgen05_conformance namespace through a folder of links that maps
# its folders as setup.py does. `cache fill` first assembles every kernel form (the tensor core's
# kernels are the same in both trees), so no pass waits for the assembler.
set -eu
BEFORE=$1 AFTER=$2
CHUNKS=${CHUNKS:-60} SEED=${SEED:-9301}
SETTINGS=(--data-sets 256 --cross-check-every 512)  # both sides alike (the campaign's defaults before 512 and 1024)
export TCGEN05_CACHE=${TCGEN05_CACHE:-/tmp/kc}
mkdir -p "$OUT"
namespace() {  # checkout -> a folder whose tcgen05_conformance is that checkout's package
  local folder
  folder=$(mktemp -d)
  mkdir "$folder/tcgen05_conformance"
  ln -s "$1"/conformance/* "$folder/tcgen05_conformance/"
  for sub in oracles generators device probes; do ln -s "$1/$sub" "$folder/tcgen05_conformance/$sub"; done
  echo "$folder"
}
declare -A TREE=([before]=$BEFORE [after]=$AFTER) PACKAGE=([before]=$(namespace "$BEFORE") [after]=$(namespace "$AFTER"))
{
  nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader
  echo "cores: $(nproc)"
  echo "before: $(cat "$BEFORE/COMMIT" 2>/dev/null || echo "$BEFORE")"
  echo "after: ${COMMIT:-$(git -C "$AFTER" rev-parse HEAD 2>/dev/null || echo "$AFTER")}"
} > "$OUT/machine.txt"
(cd "$AFTER" && PYTHONPATH=${PACKAGE[after]} timeout 150 python3 -m tcgen05_conformance cache fill --json > "$OUT/fill.json" 2>> "$OUT/ab.log") \
  || echo "cache fill: exit status $?" >> "$OUT/machine.txt"
for round in 1 2; do
  for side in before after; do
    (cd "${TREE[$side]}" && PYTHONPATH=${PACKAGE[$side]} timeout 200 python3 bench/stream_worker.py --chunks "$CHUNKS" \
      --seed "$SEED" --repeat 2 "${SETTINGS[@]}" > "$OUT/stream-worker-$side-$round.json" 2>> "$OUT/ab.log") \
      || echo "$side $round: exit status $?" >> "$OUT/machine.txt"
  done
done
python3 "$AFTER/reports/campaign-checker-speed/summarize.py" "$OUT"/stream-worker-*.json > "$OUT/summary.md"
cat "$OUT/summary.md"

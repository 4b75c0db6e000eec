#!/bin/bash
# Before/after on one machine in one session: the producers' CPU per program (producer_cost.py),
# the digests of what they make (producer_digests.py) and host-only campaigns, each tree run
# through the same interpreter.
#   ab.sh BEFORE_CHECKOUT AFTER_CHECKOUT RESULTS_DIR
# A checkout is imported as the tcgen05_conformance namespace through a folder of links that
# maps its folders as setup.py does (PYTHONPATH comes before the editable install's finder).
# The kernel cache ($TCGEN05_CACHE) should hold the forms of seed 33's first 25 chunks: the
# first producer_cost run fills it (its "kernels_assembled" says how many it had to assemble).
set -eu
BEFORE=$1 AFTER=$2 RESULTS=$3
PYTHON=${PYTHON:-python3}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$RESULTS"
namespace() {  # checkout -> a folder whose tcgen05_conformance is that checkout's package
  local folder
  folder=$(mktemp -d)
  mkdir "$folder/tcgen05_conformance"
  ln -s "$1"/conformance/* "$folder/tcgen05_conformance/"
  for sub in oracles generators device probes; do ln -s "$1/$sub" "$folder/tcgen05_conformance/$sub"; done
  echo "$folder"
}
declare -A TREE=([before]=$BEFORE [after]=$AFTER) PACKAGE=([before]=$(namespace "$BEFORE") [after]=$(namespace "$AFTER"))
cost() {  # side, label, last chunk, [data sets, cross-check interval]
  PYTHONPATH=${PACKAGE[$1]} $PYTHON "$HERE/producer_cost.py" 33 0 "$3" "$RESULTS/producer-cost-$1-$2.json" "${@:4}"
}
campaign() {
  (cd "${TREE[$1]}" && PYTHONPATH=${PACKAGE[$1]} $PYTHON -m tcgen05_conformance campaign --host-only --count 24576 --seed 33 \
    --jobs 2 --out "$RESULTS/host-only-$1-$2.json" > "$RESULTS/host-only-$1-$2.log" 2>&1)
}
for side in before after; do
  PYTHONPATH=${PACKAGE[$side]} $PYTHON "$HERE/producer_digests.py" write "$RESULTS/digests-$side.json"
done
PYTHONPATH=${PACKAGE[after]} $PYTHON "$HERE/producer_digests.py" compare "$RESULTS/digests-before.json" \
  "$RESULTS/digests-after.json" > "$RESULTS/digests-compare.txt"
cost before 1 25; cost after 1 25; cost after 2 25; cost before 2 25; cost before 3 25; cost after 3 25
# what other defaults would cost (not changed): every 1024th program cross-checked; 512 data sets per
# instruction (chunks of 16,384 programs: 13 of them timed); both
cost after ds256-x1024 25 256 1024; cost after ds512-x512 14 512 512; cost after ds512-x1024 14 512 1024
campaign before 1; campaign after 1  # about 10 minutes each on the loaded 2-core machine

#!/bin/bash
# A/B of the campaign's startup on the dev machine: host-only, 2 producers, 1 stand-in worker.
set -e
PY=/work/main/.venv/bin/python
for i in 5 6 7; do
  for t in old new; do
    (cd /tmp/ab/$t && $PY -m conformance campaign --host-only --programs 2048 --seed 77 --jobs 16 --json /tmp/ab/$t-$i.json > /tmp/ab/$t-$i.log 2>&1)
    $PY -c "import json,sys; r=json.load(open('/tmp/ab/$t-$i.json')); print('$t', $i, r['seconds'], r['startup'])"
  done
done

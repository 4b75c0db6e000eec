#!/bin/bash
# producers at niceness 19 (this checkout) against 5 (0ebb8ec): the campaign at its defaults, one H100
ROOT=$PWD
export TCGEN05_CACHE=/tmp/kc
mkdir -p $OUT/r
campaign() {  # name, tree, arguments
  local name=$1 tree=$2; shift 2
  (cd $tree && PYTHONPATH=$tree python3 -m conformance campaign --gpus all --json $OUT/r/campaign-$name.json "$@" > $OUT/r/campaign-$name.log 2>&1)
}
campaign warm-up $ROOT --programs 12000000 --seed 9801
campaign nice19-a $ROOT --programs 12000000 --seed 9801
campaign nice5-a $ROOT/build/base-0ebb8ec --programs 12000000 --seed 9801
campaign nice19-b $ROOT --programs 12000000 --seed 9801
campaign nice5-b $ROOT/build/base-0ebb8ec --programs 12000000 --seed 9801
cd $OUT && tar czf results.tgz r && rm -rf r

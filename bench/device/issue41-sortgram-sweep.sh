#!/usr/bin/env bash
# Issue 41, histogram and sort tuning: bench/sweep.py times the landed sort and histogram beside their
# variants (blocks per SM, items per thread, shared counts' copies; bench/sweep_variants.py), 2^28 float32
# and int32 items (histogram: uint8 and int32 into 256 bins), ratios to each variant's copy. At most 6
# minutes. Run from the project root on the device machine; logs go to $OUT.
set -u
source bench/device/setup.sh
cat "$OUT/versions.log"
timeout 340 python3 bench/sweep.py --only sort,histogram --dtypes float32,int32 --json "$OUT/sweep28.json" \
  --variants landed,sort-4blocks,sort-2blocks,sort-12items,sort-24items,histogram-6blocks,histogram-2blocks,histogram-16copies \
  > "$OUT/sweep.log" 2>&1
cat "$OUT/sweep.log"

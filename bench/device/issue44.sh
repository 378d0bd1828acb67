#!/usr/bin/env bash
# Issue 44, order="portable": the GPU tests (reduce, scan, segmented_reduce and reduce_by_key in the portable
# order equal the host's replay bit for bit, for float32, float64, float16 and a record, at 1 to 2^26 items, and
# for other block sizes and items per thread), then bench/order.py (reduce and scan of 2^28 float32 in both
# orders, three runs, ratios to each run's copy). At most 9.5 minutes (each step has its own timeout).
# Run from the project root on the device machine (one H100 or H200), carrying .whl; logs go to $OUT.
set -u
source bench/device/setup.sh
cat "$OUT/versions.log"
timeout 400 python3 -m pytest tests/gpu/test_order_on_device.py -q -p no:cacheprovider -rfE --durations=15 \
  > "$OUT/gpu-tests.log" 2>&1
echo "tests rc $?"
tail -30 "$OUT/gpu-tests.log"
timeout 160 python3 bench/order.py --runs 3 --json "$OUT/order.json" > "$OUT/bench.log" 2>&1
echo "bench rc $?"
cat "$OUT/bench.log"

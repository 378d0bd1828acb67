#!/usr/bin/env bash
# Issue 41, histogram and sort: the GPU tests (sizes 0 to 2^24 and past 2^31 against the host, every path of
# histogram.cu, sort's stability, strided and 2-D inputs, reused plans), then three sweeps of the histogram
# and sort rows beside CuPy and cuda.compute (bench/histogram_sort.py, ratios to each sweep's copy, G keys/s).
# At most 7.5 minutes (each step has its own timeout). Run from the project root on the device machine; logs
# go to $OUT.
set -u
source bench/device/setup.sh
cat "$OUT/versions.log"
timeout 250 python3 -m pytest tests/gpu/test_histogram_on_device.py tests/gpu/test_sort_on_device.py -m gpu -q -p no:cacheprovider -rfE \
  --durations=15 > "$OUT/gpu-tests.log" 2>&1
tail -40 "$OUT/gpu-tests.log"
timeout 190 python3 bench/histogram_sort.py --runs 3 --out "$OUT/bench" > "$OUT/bench.log" 2>&1
cat "$OUT/bench.log"

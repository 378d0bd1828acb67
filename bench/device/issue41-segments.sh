#!/usr/bin/env bash
# Issue 41, segmented_reduce and reduce_by_key: the GPU tests, then bench/primitives.py --only segments three
# times (gpulab beside cuda.compute 1.0.2 and CuPy in each run, ratios to that run's copy), then a sweep of
# the segment kernels' tile shapes. At most 7.5 minutes (each step has its own timeout).
# Run from the project root on the device machine; logs go to $OUT.
set -u
source bench/device/setup.sh
cat "$OUT/versions.log"
timeout 230 python3 -m pytest tests/gpu/test_segments_on_device.py tests/nocuda/test_registry.py -m gpu -q -p no:cacheprovider -rfE \
  --durations=10 > "$OUT/gpu-tests.log" 2>&1
tail -25 "$OUT/gpu-tests.log"
for run in 1 2 3; do
  timeout 55 python3 bench/primitives.py --only segments --out "$OUT/bench-$run" > "$OUT/bench-$run.log" 2>&1
  cat "$OUT/bench-$run.log"
done
# The segment primitives' tile shapes (bench/sweep_variants.py), float32, 2^28 items
timeout 75 python3 bench/sweep.py --variants landed,segments-1280,segments-768,segments64B,segments64B-1536,segments-early-loads \
  --only segmented_reduce,reduce_by_key --dtypes float32 --json "$OUT/sweep28.json" > "$OUT/sweep.log" 2>&1
cat "$OUT/sweep.log"

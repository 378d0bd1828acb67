#!/usr/bin/env bash
# Issue 39 on a GPU machine: the host's float16 interpreter and every mixed pair of element types give the
# device's bits (tests/gpu/test_promotion_on_device.py); the fuzz agreement; then the CPU tests of the issue
# (the property test, every pair against NumPy, the u64 refusal) with a GPU present. About 6 minutes.
set -u
source bench/device/setup.sh
cat "$OUT/versions.log"
timeout 420 python3 -m pytest tests/gpu/test_promotion_on_device.py tests/gpu/test_fuzz_agreement.py -q \
  -p no:cacheprovider -rfE --durations=5 > "$OUT/gpu-tests.log" 2>&1
tail -25 "$OUT/gpu-tests.log"
timeout 300 python3 -m pytest tests/nocuda/test_properties.py tests/nocuda/test_promotion.py -q -p no:cacheprovider \
  -rfE --durations=5 > "$OUT/cpu-tests.log" 2>&1
tail -15 "$OUT/cpu-tests.log"

#!/usr/bin/env bash
# Issue 38 (the associativity probe, one line numbering, examples the lab does not flag) on a GPU machine.
# Run from the project root on the device machine; logs go to $OUT. About 5 minutes.
set -u
source bench/device/setup.sh
cat "$OUT/versions.log"
# The device calls: a plan warns when made, a device reduce of a - b differs from the host's, the magic's --run
# shows the difference; then the tests without a GPU, here with one.
timeout 200 python3 -m pytest tests/gpu/test_associativity_on_device.py tests/nocuda/test_associativity.py \
  tests/nocuda/test_line_numbers.py -q -p no:cacheprovider -rfE --durations=5 > "$OUT/gpu-tests.log" 2>&1
tail -20 "$OUT/gpu-tests.log"
# The README's and docs' examples and the magics' help on a GPU: their device calls build, and no build the
# examples make may have a warning-level diagnostic.
timeout 180 python3 -m pytest README.md docs tests/nocuda/test_examples.py -q -p no:cacheprovider -rfE \
  > "$OUT/examples.log" 2>&1
tail -20 "$OUT/examples.log"
timeout 60 python3 bench/associativity.py --out "$OUT" > "$OUT/bench-associativity.log" 2>&1
cat "$OUT/bench-associativity.log"

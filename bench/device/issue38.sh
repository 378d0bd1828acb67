#!/usr/bin/env bash
# Issue 38 (findings 2, 3, 6, 11) on a GPU: the python blocks of README.md and docs/*.md with a GPU (the
# make_* block of docs/memory.md runs only there), the magics' errors and help examples, notebook 10 from a
# class's copy of notebooks/, and the progress bars. At most 7.5 minutes (each step has its own timeout).
# The pages' examples need sybil among the carried wheels: ../shared/device/fetch-wheels sybil
# Run from the project root on the device machine; logs go to $OUT.
set -u
source bench/device/setup.sh
cat "$OUT/versions.log"
python3 -c "import sybil" 2>/dev/null || echo "sybil is missing from .whl: README.md and docs/ are not collected" \
  | tee "$OUT/pages-missing.log"
timeout 240 python3 -m pytest README.md docs tests/nocuda/test_examples.py tests/nocuda/test_run_all.py \
  tests/nocuda/security/test_interrupt.py -q -p no:cacheprovider -rfEs --durations=10 > "$OUT/pages-and-errors.log" 2>&1
tail -25 "$OUT/pages-and-errors.log"
timeout 120 python3 -m pytest tests/nocuda/test_magics.py -m gpu -q -p no:cacheprovider -rfE > "$OUT/magics-gpu.log" 2>&1
tail -8 "$OUT/magics-gpu.log"
timeout 90 python3 -m pytest tests/nocuda/test_notebooks.py -k "10-why or carries" -q -p no:cacheprovider -rfE \
  > "$OUT/notebook10.log" 2>&1
tail -8 "$OUT/notebook10.log"

#!/usr/bin/env bash
# The pending GPU checks of several issues in one device call, most needed first, within DEADLINE seconds
# (default 420): records of 32 to 128 bytes built in smaller tiles against the host, the host's float16 and
# mixed-type promotion against the device (issue 39) and sort's tests (issue 41) on pytest-xdist workers; one
# bench round of the histogram and sort rows beside CuPy and cuda.compute (issue 41); notebook 10 executed
# (issue 43). Each issue's own script (bench/device/issueNN*.sh) runs its full set. Run from the project root
# on an H100 (nvidia-h100-x1: Nsight Compute reads counters there), carrying .whl and gpulab/notebook/static
# (the live view's built assets, which git ignores); logs go to $OUT.
set -u
START=$(date +%s)
DEADLINE=${DEADLINE:-420}
source bench/device/setup.sh
cat "$OUT/versions.log"
which ncu && ncu --version | tail -1
left() { echo $(( DEADLINE - ($(date +%s) - START) )); }
step() { echo "== $(( $(date +%s) - START )) s: $*"; }
cap() { local want=$1 have; have=$(left); echo $(( want < have ? want : (have > 5 ? have : 5) )); }

step "GPU tests: records in smaller tiles, promotion (39), sort_by_key of a dtype class (41)"
WORKERS=""
python3 -c "import xdist" 2>/dev/null && WORKERS="-n 6 --dist loadfile"
timeout "$(cap 220)" python3 -m pytest $WORKERS tests/gpu/test_large_items_on_device.py \
  tests/gpu/test_promotion_on_device.py tests/gpu/test_sort_on_device.py -m gpu -q -p no:cacheprovider -rfE \
  --durations=15 > "$OUT/gpu-tests.log" 2>&1
echo "tests rc $?"; tail -30 "$OUT/gpu-tests.log"

step "bench: histogram and sort beside CuPy and cuda.compute (41)"
timeout "$(cap 70)" python3 bench/histogram_sort.py --runs 1 --out "$OUT/bench-sortgram" > "$OUT/bench-sortgram.log" 2>&1
echo "rc $?"; tail -30 "$OUT/bench-sortgram.log"

step "notebook 10 on the GPU (43)"
timeout "$(cap 150)" python3 bench/device/run_notebook.py notebooks/10-why-is-it-slow.ipynb "$OUT/10-why-is-it-slow.ipynb" \
  > "$OUT/notebook10.log" 2>&1
echo "rc $?"; tail -5 "$OUT/notebook10.log"
step done

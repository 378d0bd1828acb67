#!/usr/bin/env bash
# Issue 43 on one H100 (nvidia-h100-x1): the GPU tests of gpulab.profile, which also save every profile of
# tests/golden/profile_cases.py (the golden files), its overhead, and notebook 10 executed with its outputs.
# Run from the project root on the device machine, carrying .whl; everything goes to $OUT (at most 8 files).
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
START=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target .site .whl/*.whl 2>&1 | tail -2
export PYTHONPATH=$PWD/.site:$PWD PYTHONUNBUFFERED=1
LOG="$OUT/issue43.log"
step() { echo "== $(( $(date +%s) - START )) s: $*" | tee -a "$LOG"; }

step versions
{
  date -u; git log -1 --format='%H %s' 2>/dev/null; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  python3 -c "import numba_cuda, cupy, numpy; print('numba-cuda', numba_cuda.__version__, 'cupy', cupy.__version__, 'numpy', numpy.__version__)"
  which ncu; ncu --version | tail -1
  grep -i profil /proc/driver/nvidia/params 2>/dev/null
} >> "$LOG" 2>&1

step "GPU tests of gpulab.profile (saving every profile)"
mkdir -p /tmp/profiles
GPULAB_PROFILES_OUT=/tmp/profiles timeout 300 python3 -m pytest tests/gpu/test_profile.py -q -p no:cacheprovider -rfE \
  --durations=10 > "$OUT/gpu-tests.log" 2>&1
echo "tests rc $?" >> "$LOG"; tail -5 "$OUT/gpu-tests.log" | tee -a "$LOG"
tar -czf "$OUT/profiles.tar.gz" -C /tmp profiles

step "overhead"
timeout 150 python3 bench/profile_overhead.py "$OUT/overhead.json" >> "$LOG" 2>&1
echo "overhead rc $?" >> "$LOG"

step "notebook 10 on the GPU"
timeout 240 python3 bench/device/run_notebook.py notebooks/10-why-is-it-slow.ipynb "$OUT/10-why-is-it-slow.ipynb" >> "$LOG" 2>&1
echo "notebook rc $?" >> "$LOG"

step done

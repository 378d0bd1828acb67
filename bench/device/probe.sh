#!/usr/bin/env bash
# One GPU call: versions, the GPU suite on this tree, and what the profilers can do here.
# Run from the project root on the device machine; logs go to $OUT.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target .site .whl/*.whl ${EXTRA_WHEELS:-} 2>&1 | tail -2
export PYTHONPATH=$PWD/.site:$PWD PYTHONUNBUFFERED=1
{
  date -u; git log -1 --format='%H %s' 2>/dev/null; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  python3 -c "import numba, numba_cuda, cupy, numpy, cuda.bindings; print('numba', numba.__version__, 'numba-cuda', numba_cuda.__version__, 'cupy', cupy.__version__, 'numpy', numpy.__version__)"
  which ncu nvdisasm compute-sanitizer; ncu --version | tail -1
  cat /proc/driver/nvidia/params 2>/dev/null | grep -i profil
  ls -d /usr/local/cuda*/extras/CUPTI/lib64 2>/dev/null; find / -name 'libcupti.so*' 2>/dev/null | head -5
  find / -name 'ncu_report.py' 2>/dev/null | head -3
} > "$OUT/versions.log" 2>&1
cat "$OUT/versions.log"
timeout 300 python3 -m pytest tests/gpu tests/nocuda/test_registry.py tests/nocuda/test_bench.py tests/nocuda/test_magics.py -m gpu -q -p no:cacheprovider -rfE 2>&1 | tail -40 > "$OUT/gpu-tests.log"
tail -15 "$OUT/gpu-tests.log"
timeout 240 python3 bench/device/profiler_probe.py > "$OUT/profiler-probe.log" 2>&1
tail -60 "$OUT/profiler-probe.log"

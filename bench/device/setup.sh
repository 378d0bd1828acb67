# Sourced by the bench/device scripts: $OUT made, the carried wheels installed into .site, PYTHONPATH set,
# and what a log must name written to $OUT/versions.log (date, commit, GPU, driver, library versions).
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target .site .whl/*.whl ${EXTRA_WHEELS:-} 2>&1 | tail -2
export PYTHONPATH=$PWD/.site:$PWD PYTHONUNBUFFERED=1
{
  date -u; git log -1 --format='%H %s' 2>/dev/null; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  python3 -c "import numba, numba_cuda, cupy, numpy, cuda.bindings; print('numba', numba.__version__, 'numba-cuda', numba_cuda.__version__, 'cupy', cupy.__version__, 'numpy', numpy.__version__)"
  python3 -c "from importlib.metadata import version; print('cuda-cccl', version('cuda-cccl'))" 2>/dev/null
} > "$OUT/versions.log" 2>&1

"""Kernels that read memory (issue 16): a fused dot product and a 3-point stencil, beside peers, in one run.

Run on a GPU: ``python bench/memory.py [--out DIR] [--n 2^28]``. Prints GB/s
and ratios to the device-to-device copy of the same run, and writes JSON with
the GPU, driver and toolchain versions (``memory-<GPU>.json``).

- Dot product of two float32 arrays: ``reduce(add, mapped(mul, a, b), 0)``
  (one kernel, no temporary; bytes read), beside the unfused form (a map to a
  temporary, then a reduce), ``cupy.dot`` and cuda.compute's reduce over a
  TransformIterator of a ZipIterator. GB/s count the inputs' bytes for all.
- A 3-point float32 stencil over a captured array, bounds checked and not
  (read + write bytes), beside a CuPy ElementwiseKernel reading a raw array.
- A new captured array of the same type: the wall time of the first call
  with it (no build: the cache's build counter is recorded around it).

Timing as bench/primitives.py: CUDA events, warm-up, the median of repeats.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import cupy
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import Table, sizes, versions  # noqa: E402

import gpulab  # noqa: E402  (bench/primitives.py puts the repository first on sys.path)
import gpulab.cache  # noqa: E402
from gpulab import f32, i64  # noqa: E402

x = None  # the stencil's captured array, bound by stencils()


def mul(a: f32, b: f32) -> f32:
    return a * b


def add(a: f32, b: f32) -> f32:
    return a + b


def smooth(i: i64) -> f32:
    return (x[i - 1] + x[i] + x[i + 1]) / f32(3)


def dot_products(table: Table, n: int) -> None:
    rng = cupy.random.default_rng(0)
    a, b = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    read = a.nbytes + b.nbytes
    scalar, zero = cupy.empty((), np.float32), np.float32(0)
    fused = gpulab.make_reduce(add, gpulab.mapped(mul, np.float32, np.float32))
    temp = cupy.empty(max(fused.temp_storage_bytes(n), 1), np.uint8)
    inputs = gpulab.mapped(mul, a, b)
    table.try_add("gpulab reduce(add, mapped(mul, a, b)): fused (read)", "float32", read,
                  lambda: fused(inputs, zero, out=scalar, temp_storage=temp))
    mapper, reducer = gpulab.make_map(mul, a, b), gpulab.make_reduce(add, np.float32)
    products = cupy.empty(n, np.float32)
    partials = cupy.empty(max(reducer.temp_storage_bytes(n), 1), np.uint8)
    table.try_add("gpulab map to a temporary, then reduce: unfused (inputs' bytes)", "float32", read,
                  lambda: reducer(mapper(a, b, out=products), zero, out=scalar, temp_storage=partials))
    table.try_add("cupy.dot (cuBLAS; read)", "float32", read, lambda: cupy.dot(a, b, out=scalar))
    try:
        import cuda.compute as cc
    except ImportError as exc:
        table.rows.append({"name": "cuda.compute", "dtype": "float32", "error": f"not importable: {exc}"})
        return

    def product(pair):
        return pair[0] * pair[1]

    d_out, h_init = cupy.empty(1, np.float32), np.zeros(1, np.float32)
    zipped = cc.TransformIterator(cc.ZipIterator(a, b), product)
    table.try_add("cuda.compute reduce_into TransformIterator(ZipIterator), one-shot", "float32", read,
                  lambda: cc.reduce_into(d_in=zipped, d_out=d_out, op=cc.OpKind.PLUS, num_items=n, h_init=h_init))
    try:
        reduce_into = cc.make_reduce_into(d_in=zipped, d_out=d_out, op=cc.OpKind.PLUS, h_init=h_init)
        storage = cupy.empty(max(reduce_into(temp_storage=None, d_in=zipped, d_out=d_out, num_items=n,
                                             op=cc.OpKind.PLUS, h_init=h_init), 1), np.uint8)
        table.try_add("cuda.compute make_reduce_into TransformIterator(ZipIterator), reused", "float32", read,
                      lambda: reduce_into(temp_storage=storage, d_in=zipped, d_out=d_out, num_items=n,
                                          op=cc.OpKind.PLUS, h_init=h_init))
    except Exception as exc:  # a peer that cannot run here is reported, not fatal
        table.rows.append({"name": "cuda.compute make_reduce_into TransformIterator", "dtype": "float32",
                           "error": f"{type(exc).__name__}: {exc}"[:300]})


def stencils(table: Table, n: int) -> dict:
    """Time the stencil, checked and not; return each build's SASS instruction count (what the checks cost)."""
    global x
    x = cupy.random.default_rng(1).standard_normal(n, dtype=np.float32)
    out = cupy.empty(n - 2, np.float32)
    moved = x.nbytes + out.nbytes
    inner = gpulab.iota(n - 2, start=1)
    sass = {}
    for label, checked in (("bounds checked", True), ("unchecked (boundscheck=False)", False)):
        plan = gpulab.make_map(smooth, inner, boundscheck=checked)
        table.try_add(f"gpulab map 3-point stencil over a captured array, {label} (r+w)", "float32", moved,
                      lambda plan=plan: plan(inner, out=out))
        sass[label] = plan.build().sass_instructions
    raw = cupy.ElementwiseKernel("raw T x", "T y", "y = (x[i] + x[i + 1] + x[i + 2]) / (T)3", "smooth3")
    table.try_add("CuPy ElementwiseKernel raw x, 3-point stencil (r+w)", "float32", moved, lambda: raw(x, out))
    return sass


def new_array_latency(n: int = 2**20, arrays: int = 20) -> dict:
    """Wall time of the first call with each of ``arrays`` new captured arrays of one type, and of a call with
    the same array again; the cache's build counter before and after (equal: no build)."""
    global x
    inner = gpulab.iota(n - 2, start=1)
    x = cupy.ones(n, np.float32)
    gpulab.map(smooth, inner)
    fresh = [cupy.full(n, k, np.float32) for k in range(arrays)]
    cupy.cuda.Device().synchronize()
    builds = gpulab.cache.default_cache().info().builds
    first, again = [], []
    for array in fresh:
        x = array
        for samples in (first, again):
            start = time.perf_counter()
            gpulab.map(smooth, inner)
            cupy.cuda.Device().synchronize()
            samples.append(time.perf_counter() - start)
    return {"n": n, "arrays": arrays, "first_call_ms_median": statistics.median(first) * 1e3,
            "first_call_ms_max": max(first) * 1e3, "same_array_ms_median": statistics.median(again) * 1e3,
            "builds_before": builds, "builds_after": gpulab.cache.default_cache().info().builds}


def run(n: int) -> dict:
    """Every part, in one run; the record written as JSON."""
    table = Table()
    src = cupy.empty(n, np.float32)
    dst = cupy.empty_like(src)
    table.try_add("device-to-device copy (read+write)", "float32", 2 * src.nbytes,
                  lambda: dst.__setitem__(Ellipsis, src))
    del src, dst
    dot_products(table, n)
    sass = stencils(table, n)
    table.print(table.rows[0]["gb_per_s"])
    latency = new_array_latency()
    print(f"\nSASS instructions of the stencil: {sass}")
    print(f"a new captured array of the same type: {latency}")
    return {"n": n, "versions": versions(), "throughput": table.rows, "stencil_sass_instructions": sass,
            "new_captured_array": latency, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    parser.add_argument("--n", type=lambda text: sizes(text)[0], default=2**28, help="items, e.g. 2^28")
    args = parser.parse_args()
    device = gpulab.device.current_device()
    if not device.is_gpu:
        sys.exit("bench/memory.py needs a CUDA GPU")
    print(device, end="\n\n")
    record = {"device": str(device), "gpu": device.description, "compute_capability": device.compute_capability,
              **run(args.n)}
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"memory-{device.description.replace(' ', '_')}.json"
    path.write_text(json.dumps(record, indent=2, default=str))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

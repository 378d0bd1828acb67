"""Primitive throughput and per-call latency: gpulab beside CuPy and cuda.compute, in one run.

Run on a GPU: ``python bench/primitives.py [--out DIR]``. Prints a table of
GB/s and ratios to the device-to-device copy of the same run, and writes
JSON with the GPU, driver and toolchain versions.

Timing: CUDA events around each call, warm-up, the median of the repeats;
inputs of 2^28 items are far larger than L2. Latency: wall time per call at
n=1024, calls issued back to back and the stream synchronised once.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import cupy
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import gpulab  # noqa: E402
import gpulab.runtime.module  # noqa: E402

N = 2**28
REPEATS = 20
WARMUP = 3


def add(a, b):
    return a + b


def times_two_plus_one_f32(x: gpulab.f32) -> gpulab.f32:
    return x * 2 + 1


def times_two_plus_one_i32(x: gpulab.i32) -> gpulab.i32:
    return x * 2 + 1


MAP_OPS = {"float32": times_two_plus_one_f32, "int32": times_two_plus_one_i32}  # results keep the input type


def is_positive(x):
    return x > 0


def gpu_seconds(call, repeats=REPEATS, warmup=WARMUP) -> float:
    """Median seconds of ``call`` between two CUDA events on the current stream."""
    for _ in range(warmup):
        call()
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    samples = []
    for _ in range(repeats):
        start.record()
        call()
        end.record()
        end.synchronize()
        samples.append(cupy.cuda.get_elapsed_time(start, end) / 1e3)
    return statistics.median(samples)


def call_latency(call, calls=2000) -> float:
    """Seconds per call when calls are issued back to back (launch-bound at small n)."""
    for _ in range(50):
        call()
    cupy.cuda.get_current_stream().synchronize()
    begin = time.perf_counter()
    for _ in range(calls):
        call()
    cupy.cuda.get_current_stream().synchronize()
    return (time.perf_counter() - begin) / calls


def _versions() -> dict:
    found = {"python": platform.python_version()}
    for name in ("gpulab", "numba-cuda", "numba", "cupy-cuda13x", "cuda-bindings", "cuda-cccl", "numpy",
                 "nvidia-cuda-nvrtc", "nvidia-nvjitlink"):
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            pass
    from gpulab.compiler import link, nvrtc

    found["nvrtc"] = ".".join(map(str, nvrtc.version()))
    found["nvjitlink"] = ".".join(map(str, link.version()))
    found["driver"] = cupy.cuda.runtime.driverGetVersion()
    return found


class Table:
    """Rows of (name, dtype, seconds, bytes) and the copy they are compared with."""

    def __init__(self):
        self.rows = []

    def add(self, name, dtype, seconds, moved_bytes, **extra):
        self.rows.append({"name": name, "dtype": dtype, "seconds": seconds, "bytes": moved_bytes,
                          "gb_per_s": moved_bytes / seconds / 1e9 if seconds else None, **extra})

    def try_add(self, name, dtype, moved_bytes, call):
        try:
            self.add(name, dtype, gpu_seconds(call), moved_bytes)
        except Exception as exc:  # a peer that cannot run here is reported, not fatal
            self.rows.append({"name": name, "dtype": dtype, "error": f"{type(exc).__name__}: {exc}"[:300]})

    def print(self, copy_gbps):
        print(f"{'what':58} {'dtype':8} {'GB/s':>8} {'x copy':>7}")
        for row in self.rows:
            if "error" in row:
                print(f"{row['name']:58} {row['dtype']:8} {'error: ' + row['error'][:60]}")
                continue
            row["vs_copy"] = row["gb_per_s"] / copy_gbps
            print(f"{row['name']:58} {row['dtype']:8} {row['gb_per_s']:8.0f} {row['vs_copy']:7.2f}")


def throughput(table: Table, dtype: str) -> None:
    rng = cupy.random.default_rng(0)
    xs = (rng.standard_normal(N, dtype=np.float32) if dtype == "float32"
          else rng.integers(-1000, 1000, N, dtype=np.int32))
    size = xs.nbytes
    out = cupy.empty_like(xs)
    scalar = cupy.empty((), xs.dtype)
    zero = np.zeros((), xs.dtype)[()]

    table.try_add("device-to-device copy (read+write)", dtype, 2 * size, lambda: out.__setitem__(Ellipsis, xs))
    mapper = gpulab.make_map(MAP_OPS[dtype], xs)
    mapped = cupy.empty(N, mapper.result_dtype())
    table.try_add("gpulab map x*2+1 (r+w)", dtype, size + mapped.nbytes, lambda: mapper(xs, out=mapped))
    reducer = gpulab.make_reduce(add, xs)
    temp = cupy.empty(max(reducer.temp_storage_bytes(N), 1), np.uint8)
    table.try_add("gpulab reduce a+b (read)", dtype, size, lambda: reducer(xs, zero, out=scalar, temp_storage=temp))
    scanner = gpulab.make_scan(add, xs)
    table.try_add("gpulab inclusive scan a+b (r+w)", dtype, 2 * size, lambda: scanner(xs, out=out))
    filterer = gpulab.make_filter(is_positive, xs)
    kept = cupy.zeros((), np.int64)
    half = int((xs > 0).sum())
    table.try_add("gpulab filter x>0, half kept (r + kept w)", dtype, size + half * xs.itemsize,
                  lambda: filterer(xs, out=out, kept=kept))
    table.try_add("cupy.sum (read)", dtype, size, lambda: cupy.sum(xs, out=scalar))
    table.try_add("cupy.cumsum (r+w)", dtype, 2 * size, lambda: cupy.cumsum(xs, out=out))
    elementwise = cupy.ElementwiseKernel("T x", "T y", "y = x * 2 + 1", "times_two_plus_one")
    table.try_add("CuPy ElementwiseKernel y=x*2+1 (r+w)", dtype, 2 * size, lambda: elementwise(xs, out))
    cuda_compute(table, dtype, xs, out, size)


def cuda_compute(table: Table, dtype, xs, out, size) -> None:
    try:
        import cuda.compute as cc
    except ImportError as exc:
        table.rows.append({"name": "cuda.compute", "dtype": dtype, "error": f"not importable: {exc}"})
        return
    n = xs.size
    d_out = cupy.empty(1, xs.dtype)
    h_init = np.zeros(1, xs.dtype)

    def python_add(a, b):
        return a + b

    def python_transform(x):
        return x * 2 + 1

    for label, op in (("Python a+b", python_add), ("OpKind.PLUS", cc.OpKind.PLUS)):
        table.try_add(f"cuda.compute reduce_into {label}, one-shot", dtype, size,
                      lambda op=op: cc.reduce_into(d_in=xs, d_out=d_out, op=op, num_items=n, h_init=h_init))
        try:
            reducer = cc.make_reduce_into(d_in=xs, d_out=d_out, op=op, h_init=h_init)
            temp = cupy.empty(reducer(temp_storage=None, d_in=xs, d_out=d_out, num_items=n, op=op,
                                      h_init=h_init), np.uint8)
            table.try_add(f"cuda.compute make_reduce_into {label}, reused", dtype, size,
                          lambda r=reducer, t=temp, op=op: r(temp_storage=t, d_in=xs, d_out=d_out, num_items=n,
                                                             op=op, h_init=h_init))
        except Exception as exc:
            table.rows.append({"name": f"cuda.compute make_reduce_into {label}", "dtype": dtype, "error": str(exc)[:300]})
        table.try_add(f"cuda.compute inclusive_scan {label}, one-shot (r+w)", dtype, 2 * size,
                      lambda op=op: cc.inclusive_scan(d_in=xs, d_out=out, op=op, init_value=None, num_items=n))
        try:
            scanner = cc.make_inclusive_scan(d_in=xs, d_out=out, op=op, init_value=None)
            temp = cupy.empty(scanner(temp_storage=None, d_in=xs, d_out=out, op=op, init_value=None,
                                      num_items=n), np.uint8)
            table.try_add(f"cuda.compute make_inclusive_scan {label}, reused (r+w)", dtype, 2 * size,
                          lambda s=scanner, t=temp, op=op: s(temp_storage=t, d_in=xs, d_out=out, op=op,
                                                             init_value=None, num_items=n))
        except Exception as exc:
            table.rows.append({"name": f"cuda.compute make_inclusive_scan {label}", "dtype": dtype, "error": str(exc)[:300]})
    table.try_add("cuda.compute unary_transform Python x*2+1, one-shot (r+w)", dtype, 2 * size,
                  lambda: cc.unary_transform(d_in=xs, d_out=out, op=python_transform, num_items=n))
    try:
        transform = cc.make_unary_transform(d_in=xs, d_out=out, op=python_transform)
        table.try_add("cuda.compute make_unary_transform Python x*2+1, reused (r+w)", dtype, 2 * size,
                      lambda: transform(d_in=xs, d_out=out, op=python_transform, num_items=n))
    except Exception as exc:
        table.rows.append({"name": "cuda.compute make_unary_transform", "dtype": dtype, "error": str(exc)[:300]})


def latencies() -> dict:
    n = 1024
    xs = cupy.random.default_rng(1).standard_normal(n, dtype=np.float32)
    out, scalar, zero = cupy.empty_like(xs), cupy.empty((), xs.dtype), np.float32(0)
    result = {}

    def measure(name, call):
        try:
            result[name] = call_latency(call) * 1e6
        except Exception as exc:
            result[name] = f"error: {type(exc).__name__}: {exc}"[:200]

    reducer = gpulab.make_reduce(add, xs)
    mapper = gpulab.make_map(times_two_plus_one_f32, xs)
    scanner = gpulab.make_scan(add, xs)
    measure("gpulab make_reduce, reused", lambda: reducer(xs, zero, out=scalar))
    measure("gpulab reduce one-shot", lambda: gpulab.reduce(add, xs, zero))
    measure("gpulab make_map, reused", lambda: mapper(xs, out=out))
    measure("gpulab map one-shot", lambda: gpulab.map(times_two_plus_one_f32, xs))
    measure("gpulab make_scan, reused", lambda: scanner(xs, out=out))
    measure("cupy.sum", lambda: cupy.sum(xs, out=scalar))
    elementwise = cupy.ElementwiseKernel("T x", "T y", "y = x * 2 + 1", "times_two_plus_one")
    measure("CuPy ElementwiseKernel", lambda: elementwise(xs, out))
    measure("cupy.cumsum", lambda: cupy.cumsum(xs, out=out))
    from cuda.bindings import driver

    prepared = reducer.prepared(32, ())
    function, pack = prepared.module.functions["gpulab_reduce"], prepared.pack("gpulab_reduce")
    stream = cupy.cuda.get_current_stream().ptr
    measure("bare cuLaunchKernel (cuda.bindings, pre-packed)",
            lambda: driver.cuLaunchKernel(function, 1, 1, 1, 256, 1, 1, 0, stream, pack.address, 0))
    try:
        import cuda.compute as cc

        d_out, h_init = cupy.empty(1, np.float32), np.zeros(1, np.float32)
        r = cc.make_reduce_into(d_in=xs, d_out=d_out, op=cc.OpKind.PLUS, h_init=h_init)
        temp = cupy.empty(r(temp_storage=None, d_in=xs, d_out=d_out, num_items=n, op=cc.OpKind.PLUS,
                            h_init=h_init), np.uint8)
        measure("cuda.compute make_reduce_into, reused", lambda: r(temp_storage=temp, d_in=xs, d_out=d_out,
                                                                   num_items=n, op=cc.OpKind.PLUS, h_init=h_init))
        measure("cuda.compute reduce_into one-shot", lambda: cc.reduce_into(d_in=xs, d_out=d_out, num_items=n,
                                                                           op=cc.OpKind.PLUS, h_init=h_init))
    except Exception as exc:
        result["cuda.compute"] = f"error: {exc}"[:200]
    return result


def build_times() -> dict:
    """Seconds for gpulab's first build of a new spec (warm process), per primitive, ready to run."""
    from gpulab.compiler.build import build_for, make_spec

    def new_map(x):
        return x * 3 + 2

    def new_reduce(a, b):
        return a * b + a

    def new_scan(a, b):
        return max(a, b) + 1

    found = {}
    for primitive, fn, types in (("map", new_map, "f32"), ("reduce", new_reduce, "f32,f32"),
                                 ("scan", new_scan, "f32,f32")):
        start = time.perf_counter()
        build_for(make_spec(primitive, fn, types=types, target=None))
        found[primitive] = time.perf_counter() - start
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args()
    device = gpulab.device.current_device()
    if not device.is_gpu:
        sys.exit("bench/primitives.py needs a CUDA GPU")
    table = Table()
    for dtype in ("float32", "int32"):
        throughput(table, dtype)
    copies = {row["dtype"]: row["gb_per_s"] for row in table.rows if row["name"].startswith("device-to-device")}
    print(f"\n{device}\n")
    for dtype in ("float32", "int32"):
        sub = Table()
        sub.rows = [r for r in table.rows if r["dtype"] == dtype]
        sub.print(copies[dtype])
        print()
    lat = latencies()
    print("per-call latency at n=1024 (us):")
    for name, value in lat.items():
        print(f"  {name:50} {value:8.2f}" if isinstance(value, float) else f"  {name:50} {value}")
    builds = build_times()
    print("gpulab first build of a new spec, warm process (s):", {k: round(v, 3) for k, v in builds.items()})
    record = {"device": str(device), "gpu": device.description, "compute_capability": device.compute_capability,
              "n": N, "repeats": REPEATS, "versions": _versions(), "throughput": table.rows,
              "latency_us": lat, "build_seconds": builds, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"primitives-{device.description.replace(' ', '_')}.json"
    path.write_text(json.dumps(record, indent=2, default=str))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

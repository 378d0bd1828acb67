"""Primitive throughput and per-call latency: gpulab beside CuPy and cuda.compute, in one run.

Run on a GPU: ``python bench/primitives.py [--out DIR] [--latency-only] [--only segments] [--frontend NAME]``.
Prints a table of GB/s and ratios to the device-to-device copy of the same
run, then the per-call latency table, and writes JSON with the GPU, driver
and toolchain versions.

Timing: CUDA events around each call, warm-up, the median of the repeats;
inputs of 2^28 items are far larger than L2. Latency: wall time per call at
2^10 to 2^24 float32 items, calls issued back to back and the stream
synchronised once (at small sizes this is the launch path's cost, at 2^24 the
kernel's). ``bench/launch.py`` splits a call into its steps.
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import gpulab  # noqa: E402
import gpulab.runtime.module  # noqa: E402
from gpulab.compiler import frontends  # noqa: E402
from gpulab.options import FRONTENDS  # noqa: E402
from primitives_segments import segment_rows  # noqa: E402
from histogram_sort import histogram_rows, sort_rows  # noqa: E402
from timing import N, REPEATS, Table, copy_row, sizes, versions  # noqa: E402



def add(a, b):
    return a + b


def times_two_plus_one_f32(x: gpulab.f32) -> gpulab.f32:
    return x * 2 + 1


def times_two_plus_one_i32(x: gpulab.i32) -> gpulab.i32:
    return x * 2 + 1


MAP_OPS = {"float32": times_two_plus_one_f32, "int32": times_two_plus_one_i32}  # results keep the input type


def is_positive(x):
    return x > 0


def call_latency(call, calls=1000, rounds=3) -> float:
    """Seconds per call when calls are issued back to back (launch-bound at small n), median of ``rounds``."""
    for _ in range(20):
        call()
    samples = []
    for _ in range(rounds):
        cupy.cuda.get_current_stream().synchronize()
        begin = time.perf_counter()
        for _ in range(calls):
            call()
        cupy.cuda.get_current_stream().synchronize()
        samples.append((time.perf_counter() - begin) / calls)
    return statistics.median(samples)


def throughput(table: Table, dtype: str) -> None:
    rng = cupy.random.default_rng(0)
    xs = (rng.standard_normal(N, dtype=np.float32) if dtype == "float32"
          else rng.integers(-1000, 1000, N, dtype=np.int32))
    size = xs.nbytes
    out = cupy.empty_like(xs)
    scalar = cupy.empty((), xs.dtype)
    zero = np.zeros((), xs.dtype)[()]

    copy_row(table, dtype)
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


LATENCY_SIZES = (2**10, 2**16, 2**20, 2**22, 2**24)


def latency_rows(n: int, peers: bool = True):
    """``(name, call)`` of every row of the latency table at ``n`` float32 items."""
    xs = cupy.random.default_rng(1).standard_normal(n, dtype=np.float32)
    out, scalar, kept, zero = cupy.empty_like(xs), cupy.empty((), xs.dtype), cupy.zeros((), np.int64), np.float32(0)
    mapper, reducer = gpulab.make_map(times_two_plus_one_f32, xs), gpulab.make_reduce(add, xs)
    scanner, filterer = gpulab.make_scan(add, xs), gpulab.make_filter(is_positive, xs)
    rows = [
        ("gpulab make_map, reused", lambda: mapper(xs, out=out)),
        ("gpulab map, one-shot", lambda: gpulab.map(times_two_plus_one_f32, xs)),
        ("gpulab make_reduce, reused", lambda: reducer(xs, zero, out=scalar)),
        ("gpulab reduce, one-shot", lambda: gpulab.reduce(add, xs, zero)),
        ("gpulab make_scan, reused", lambda: scanner(xs, out=out)),
        ("gpulab scan, one-shot", lambda: gpulab.scan(add, xs)),
        ("gpulab make_filter, reused (count on the device)", lambda: filterer(xs, out=out, kept=kept)),
        ("gpulab filter, one-shot (reads the count)", lambda: gpulab.filter(is_positive, xs)),
    ]
    if not peers:
        return rows
    elementwise = cupy.ElementwiseKernel("T x", "T y", "y = x * 2 + 1", "times_two_plus_one")
    rows += [
        ("CuPy ElementwiseKernel, out given", lambda: elementwise(xs, out)),
        ("CuPy ElementwiseKernel, allocating", lambda: elementwise(xs)),
        ("cupy.sum, out given", lambda: cupy.sum(xs, out=scalar)),
        ("cupy.sum, allocating", lambda: cupy.sum(xs)),
        ("cupy.cumsum, out given", lambda: cupy.cumsum(xs, out=out)),
        ("cupy.cumsum, allocating", lambda: cupy.cumsum(xs)),
        ("CuPy xs[xs > 0] (reads the count)", lambda: xs[xs > 0]),
    ]
    return rows + cuda_compute_latency_rows(xs, out)


def cuda_compute_latency_rows(xs, out):
    """cuda.compute 1.0.2's reused objects and one-shot calls (OpKind.PLUS where it has one), if it imports."""
    try:
        import cuda.compute as cc
    except ImportError:
        return []
    n, d_out, h_init, plus = xs.size, cupy.empty(1, xs.dtype), np.zeros(1, xs.dtype), cc.OpKind.PLUS

    def python_transform(x):
        return x * 2 + 1

    transform = cc.make_unary_transform(d_in=xs, d_out=out, op=python_transform)
    reducer = cc.make_reduce_into(d_in=xs, d_out=d_out, op=plus, h_init=h_init)
    reduce_temp = cupy.empty(max(1, reducer(temp_storage=None, d_in=xs, d_out=d_out, num_items=n, op=plus,
                                            h_init=h_init)), np.uint8)
    scanner = cc.make_inclusive_scan(d_in=xs, d_out=out, op=plus, init_value=None)
    scan_temp = cupy.empty(max(1, scanner(temp_storage=None, d_in=xs, d_out=out, op=plus, init_value=None,
                                          num_items=n)), np.uint8)
    return [
        ("cuda.compute make_unary_transform, reused", lambda: transform(d_in=xs, d_out=out, op=python_transform,
                                                                        num_items=n)),
        ("cuda.compute unary_transform, one-shot", lambda: cc.unary_transform(d_in=xs, d_out=out, op=python_transform,
                                                                              num_items=n)),
        ("cuda.compute make_reduce_into, reused", lambda: reducer(temp_storage=reduce_temp, d_in=xs, d_out=d_out,
                                                                  num_items=n, op=plus, h_init=h_init)),
        ("cuda.compute reduce_into, one-shot", lambda: cc.reduce_into(d_in=xs, d_out=d_out, op=plus, num_items=n,
                                                                      h_init=h_init)),
        ("cuda.compute make_inclusive_scan, reused", lambda: scanner(temp_storage=scan_temp, d_in=xs, d_out=out,
                                                                     op=plus, init_value=None, num_items=n)),
        ("cuda.compute inclusive_scan, one-shot", lambda: cc.inclusive_scan(d_in=xs, d_out=out, op=plus,
                                                                            init_value=None, num_items=n)),
    ]


def latencies(sizes=LATENCY_SIZES, peers: bool = True, calls: int = 1000) -> dict:
    """Microseconds per call, back to back, of every row at every size: ``{row: {n: us}}``."""
    table: dict = {}
    for n in sizes:
        for name, call in latency_rows(n, peers):
            try:
                value = call_latency(call, calls) * 1e6
            except Exception as exc:  # a peer that cannot run here is reported, not fatal
                value = f"error: {type(exc).__name__}: {exc}"[:200]
            table.setdefault(name, {})[n] = value
    return table


def print_latencies(table: dict) -> None:
    sizes = sorted({n for row in table.values() for n in row})
    print(f"{'us per call, float32, back to back':52}" + "".join(f"{'2^%d' % (n.bit_length() - 1):>9}" for n in sizes))
    for name, row in table.items():
        cells = [row.get(n) for n in sizes]
        print(f"{name:52}" + "".join(f"{c:9.2f}" if isinstance(c, float) else f"{'err':>9}" for c in cells))
    for name, row in table.items():
        for n, value in row.items():
            if isinstance(value, str):
                print(f"  {name} at {n}: {value}")


def build_times() -> dict:
    """Seconds of gpulab's build of a new spec in a warm process, per primitive, ready to run (no disassembly).

    ``first``: the first float32 kernel text of its primitive in this process (NVRTC runs);
    ``next``: a new operator for a kernel text NVRTC has compiled (what a notebook that edits a function pays).
    """
    from gpulab.compiler.pipeline import KERNEL_CODE, build_for, make_spec

    def first_map(x):
        return x * 3 + 2

    def next_map(x):
        return x * 5 - 1

    def first_fold(a, b):
        return a * b + a

    def next_fold(a, b):
        return max(a, b) + 1

    def first_test(x):
        return x > 1

    def next_test(x):
        return x < 2

    found = {}
    KERNEL_CODE.clear()
    for primitive, first, following, types in (("map", first_map, next_map, "f32"),
                                               ("reduce", first_fold, next_fold, "f32,f32"),
                                               ("scan", first_fold, next_fold, "f32,f32"),
                                               ("filter", first_test, next_test, "f32")):
        for label, fn in (("first", first), ("next", following)):
            start = time.perf_counter()
            build_for(make_spec(primitive, fn, types=types, target=None))
            found[f"{primitive} {label}"] = time.perf_counter() - start
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    parser.add_argument("--latency-only", action="store_true",
                        help="only the per-call latency table and the build times (no 2^28 throughput part)")
    parser.add_argument("--throughput-only", action="store_true", help="only the 2^28 throughput part")
    parser.add_argument("--no-peers", action="store_true", help="latency of gpulab's calls alone")
    parser.add_argument("--sizes", type=sizes, default=list(LATENCY_SIZES), help="latency sizes, e.g. 2^10,2^20")
    parser.add_argument("--frontend", choices=FRONTENDS,
                        help="what compiles gpulab's operators (default: the first installed); the file names it")
    parser.add_argument("--only", choices=["segments", "histogram", "sort"],
                        help="throughput of these rows alone, beside the copy: segmented_reduce and reduce_by_key, "
                             "histogram, or sort")
    args = parser.parse_args()
    frontends.prefer(args.frontend)
    device = gpulab.device.current_device()
    if not device.is_gpu:
        sys.exit("bench/primitives.py needs a CUDA GPU")
    print(f"{device}\n")
    table = Table()
    if args.only == "segments":
        copy_row(table, "float32")
        segment_rows(table, N)
        args.throughput_only = True
    elif args.only == "histogram":
        for dtype in ("uint8", "int32"):
            copy_row(table, dtype)
            histogram_rows(table, dtype, N)
        args.throughput_only = True
    elif args.only == "sort":
        for dtype in ("uint32", "float32"):
            copy_row(table, dtype)
        sort_rows(table, N)
        args.throughput_only = True
    elif not args.latency_only:
        for dtype in ("float32", "int32"):
            throughput(table, dtype)
        segment_rows(table, N)
        copy_row(table, "uint8")
        for dtype in ("uint8", "int32"):
            histogram_rows(table, dtype, N)
        copy_row(table, "uint32")
        sort_rows(table, N)
    if not args.latency_only:
        copies = {row["dtype"]: row["gb_per_s"] for row in table.rows if row["name"].startswith("device-to-device")}
        for dtype in copies:
            sub = Table()
            sub.rows = [r for r in table.rows if r["dtype"] == dtype]
            sub.print(copies[dtype])
            print()
    lat, builds = {}, {}
    if not args.throughput_only:
        lat = latencies(args.sizes, peers=not args.no_peers)
        print_latencies(lat)
        builds = build_times()
        print("gpulab first build of a new spec, warm process (s):", {k: round(v, 3) for k, v in builds.items()})
    record = {"device": str(device), "gpu": device.description, "compute_capability": device.compute_capability,
              "frontend": frontends.resolve(None),
              "n": N, "repeats": REPEATS, "versions": versions(), "throughput": table.rows,
              "latency_us": lat, "build_seconds": builds, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    args.out.mkdir(parents=True, exist_ok=True)
    suffix = (f"-{args.only}" if args.only else "-latency" if args.latency_only
              else "-throughput" if args.throughput_only else "")
    suffix += f"-{args.frontend}" if args.frontend else ""
    path = args.out / f"primitives-{device.description.replace(' ', '_')}{suffix}.json"
    path.write_text(json.dumps(record, indent=2, default=str))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

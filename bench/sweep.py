"""Tuning sweep: codegen's tuning constants set in-process, each shape rebuilt and timed beside the copy.

Run on a GPU: ``python bench/sweep.py [--variants NAME,...] [--n LOG2]``.
Each variant sets some of :mod:`gpulab.compiler.codegen`'s constants (the
build keys digest them, so every variant builds anew), checks its results
against CuPy, and prints GB/s of the primitives it changes and the ratio to a device-to-device copy timed
just before it. Timing as in bench/primitives.py (CUDA events, median).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

import cupy
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import gpulab  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from primitives import MAP_OPS, add, is_positive  # noqa: E402
from timing import gpu_seconds  # noqa: E402
from primitives_segments import run_keys, segment_offsets  # noqa: E402
from sweep_variants import VARIANTS, use  # noqa: E402

from gpulab.primitives.lookback import StatusStorage  # noqa: E402


@contextmanager
def warm_status():
    """Every launch reuses the epoch of the first: its look-back finds the words of the launch before.

    On the same input those words hold the same values, so the results stay right, and no tile waits
    for another: the figure is the ceiling of the kernel with the look-back's reads and folds but
    none of its waiting, not a scan anyone can run.
    """
    acquire = StatusStorage.acquire
    first: dict[int, tuple] = {}

    def reuse(self, temp_storage, nbytes, stream):
        found = acquire(self, temp_storage, nbytes, stream)
        return first.setdefault(found[0], found)

    with mock.patch.object(StatusStorage, "acquire", reuse):
        yield

def measure(primitives, n: int, dtype: str, warm: bool) -> dict:
    rng = cupy.random.default_rng(0)
    xs = (rng.standard_normal(n, dtype=dtype) if dtype.startswith("float")
          else rng.integers(-1000, 1000, n, dtype=dtype))
    out = cupy.empty_like(xs)
    size = xs.nbytes
    found = {"copy": 2 * size / gpu_seconds(lambda: out.__setitem__(Ellipsis, xs)) / 1e9}
    if "scan" in primitives:
        scan = gpulab.make_scan(add, xs)
        scan(xs, out=out)
        if dtype.startswith("int"):
            assert bool(cupy.all(out == cupy.cumsum(xs, dtype=dtype))), "scan is wrong"
        else:
            reference = cupy.cumsum(xs.astype(np.float64))
            assert float(cupy.max(cupy.abs(out - reference))) < 1e-3 * n**0.5, "scan is wrong"
        first = out.copy()
        found["scan"] = 2 * size / gpu_seconds(lambda: scan(xs, out=out)) / 1e9
        found["scan_same_bits"] = bool(cupy.all(first.view(np.uint8) == out.view(np.uint8)))
        if warm:
            with warm_status():
                found["scan_warm_status"] = 2 * size / gpu_seconds(lambda: scan(xs, out=out)) / 1e9
            assert bool(cupy.all(first.view(np.uint8) == out.view(np.uint8))), "warm-status scan is wrong"
    if "filter" in primitives:
        keep = gpulab.make_filter(is_positive, xs)
        kept = cupy.zeros((), np.int64)
        keep(xs, out=out, kept=kept)
        expected = xs[xs > 0]
        assert int(kept) == expected.size and bool(cupy.all(out[: expected.size] == expected)), "filter is wrong"
        moved = size + expected.size * xs.itemsize
        found["filter"] = moved / gpu_seconds(lambda: keep(xs, out=out, kept=kept)) / 1e9
        if warm:
            with warm_status():
                found["filter_warm_status"] = moved / gpu_seconds(lambda: keep(xs, out=out, kept=kept)) / 1e9
            assert int(kept) == expected.size and bool(cupy.all(out[: expected.size] == expected)), \
                "warm-status filter is wrong"
    if "reduce" in primitives:
        reduce = gpulab.make_reduce(add, xs)
        scalar, zero = cupy.empty((), xs.dtype), np.zeros((), xs.dtype)[()]
        temp = cupy.empty(max(reduce.temp_storage_bytes(n), 1), np.uint8)
        reduce(xs, zero, out=scalar, temp_storage=temp)
        if dtype.startswith("int"):
            assert int(scalar) == int(cupy.sum(xs, dtype=np.int64)), "reduce is wrong"
        found["reduce"] = size / gpu_seconds(lambda: reduce(xs, zero, out=scalar, temp_storage=temp)) / 1e9
    if "segmented_reduce" in primitives:
        found.update(_segments(xs, dtype))
    if "reduce_by_key" in primitives:
        found.update(_runs(xs, dtype))
    if "sort" in primitives:
        found.update(_sorts(xs))
    if "histogram" in primitives and dtype == "int32":
        found.update(_histograms(xs.size))
    if "map" in primitives and dtype in MAP_OPS:  # the map's operator keeps its input type: 32-bit ones only
        mapper = gpulab.make_map(MAP_OPS[dtype], xs)
        mapper(xs, out=out)
        assert bool(cupy.all(out == xs * 2 + 1)), "map is wrong"
        found["map"] = 2 * size / gpu_seconds(lambda: mapper(xs, out=out)) / 1e9
    return found


def _segments(xs, dtype: str) -> dict:
    """segmented_reduce over segments of 1000 items and of random lengths (bytes read: items and offsets)."""
    found, rng = {}, np.random.default_rng(41)
    reduce = gpulab.make_segmented_reduce(add, xs)
    zero = np.zeros((), xs.dtype)[()]
    for shape in ("1k", "random"):
        offsets = segment_offsets(xs.size, shape, rng)
        out = cupy.empty(offsets.size - 1, xs.dtype)
        reduce(xs, offsets, zero, out=out)
        if dtype.startswith("int"):
            sums = cupy.concatenate([cupy.zeros(1, np.int64), cupy.cumsum(xs, dtype=np.int64)])
            assert bool(cupy.all(out == (sums[offsets[1:]] - sums[offsets[:-1]]).astype(dtype))), "segments wrong"
        found[f"segmented_{shape}"] = (xs.nbytes + offsets.nbytes) / gpu_seconds(
            lambda: reduce(xs, offsets, zero, out=out, check_offsets=False)) / 1e9
    return found


def _runs(xs, dtype: str) -> dict:
    """reduce_by_key of int32 keys in runs of about 16 items (bytes: keys and values read, runs written)."""
    keys = run_keys(xs.size, 16, np.random.default_rng(41))
    by_key = gpulab.make_reduce_by_key(add, keys, xs)
    out_keys, out, count = cupy.empty_like(keys), cupy.empty_like(xs), cupy.zeros((), np.int64)
    by_key(keys, xs, out_keys=out_keys, out=out, count=count)
    runs = int(count)
    assert runs == int(cupy.count_nonzero(keys[1:] != keys[:-1])) + 1, "reduce_by_key found other runs"
    moved = keys.nbytes + xs.nbytes + runs * (keys.itemsize + xs.itemsize)
    return {"reduce_by_key_16": moved / gpu_seconds(lambda: by_key(keys, xs, out_keys=out_keys, out=out,
                                                                    count=count)) / 1e9}


def _sorts(xs) -> dict:
    """sort of the items (keys only), and sort_by_key with uint32 values (bytes: read and written once)."""
    assert not bool(cupy.isnan(xs).any()) if xs.dtype.kind == "f" else True
    found, out = {}, cupy.empty_like(xs)
    sorter = gpulab.make_sort(xs)
    temp = cupy.zeros(sorter.temp_storage_bytes(xs.size), np.uint8)
    sorter(xs, out=out, temp_storage=temp)
    assert bool(cupy.all(out == cupy.sort(xs))), "sort is wrong"
    found["sort"] = 2 * xs.nbytes / gpu_seconds(lambda: sorter(xs, out=out, temp_storage=temp)) / 1e9
    values = cupy.arange(xs.size, dtype=np.uint32)
    values_out = cupy.empty_like(values)
    by_key = gpulab.make_sort_by_key(xs, values)
    temp = cupy.zeros(by_key.temp_storage_bytes(xs.size), np.uint8)
    found["sort_by_key_u32"] = 2 * (xs.nbytes + values.nbytes) / gpu_seconds(
        lambda: by_key(xs, values, out=out, values_out=values_out, temp_storage=temp)) / 1e9
    return found


def _histograms(n: int) -> dict:
    """256 bins over (0, 256) of uint8 and int32 items in [0, 256) (bytes read)."""
    found = {}
    for dtype in ("uint8", "int32"):
        items = cupy.random.default_rng(3).integers(0, 256, n, dtype=np.int32).astype(dtype)
        plan, counts = gpulab.make_histogram(items, 256, (0, 256)), cupy.empty(256, np.int64)
        plan(items, out=counts)
        assert bool(cupy.all(counts == cupy.bincount(items, minlength=256))), "histogram is wrong"
        found[f"histogram_{dtype}"] = items.nbytes / gpu_seconds(lambda: plan(items, out=counts)) / 1e9
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--n", type=int, default=28, help="log2 of the item count")
    parser.add_argument("--dtypes", default="float32,int32", help="of float32, float64, int32, int64 (map is timed for float32 and int32 only)")
    parser.add_argument("--only", help="time only these primitives of each variant, e.g. segmented_reduce,reduce_by_key")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--warm-status", action="store_true",
                        help="also time scan and filter whose look-back never waits (their ceiling)")
    args = parser.parse_args()
    rows = []
    for name in args.variants.split(","):
        constants, primitives = VARIANTS[name]
        if args.only:
            primitives = tuple(p for p in primitives if p in args.only.split(","))
        use(constants)
        for dtype in args.dtypes.split(","):
            start = time.perf_counter()
            try:
                found = measure(primitives, 2**args.n, dtype, args.warm_status)
            except Exception as exc:  # a variant that fails is reported, the sweep goes on
                print(f"{name:22} {dtype:8} error: {type(exc).__name__}: {exc}"[:300], flush=True)
                continue
            ratios = {k: v / found["copy"] for k, v in found.items() if k not in ("copy", "scan_same_bits")}
            rows.append({"variant": name, "constants": constants, "dtype": dtype, "gb_per_s": found,
                         "vs_copy": ratios})
            print(f"{name:22} {dtype:8} copy {found['copy']:6.0f} GB/s; "
                  + ", ".join(f"{k} {v:.3f}" for k, v in ratios.items())
                  + ("" if found.get("scan_same_bits", True) else " SCAN BITS DIFFER")
                  + f"  ({time.perf_counter() - start:.1f} s)", flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()

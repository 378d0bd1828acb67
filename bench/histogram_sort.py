"""Rows of bench/primitives.py for histogram and sort: gpulab beside CuPy and cuda.compute, at 2^28 items.

Each row counts the bytes the call must move: a histogram reads its items (the counts are 2 KiB), a sort
reads and writes its keys (and values) once; its ratio is to the device-to-device copy of the same run
and dtype (bench/timing.py's copy_row). Sort rows also give G keys/s (Onesweep's paper: 29.4 for 2^28
32-bit keys on an A100). ``python bench/primitives.py --only histogram`` (or ``sort``) runs them beside
their copies; ``python bench/histogram_sort.py --runs 3`` runs both three times in one process.
"""

from __future__ import annotations

import sys
from pathlib import Path

import cupy
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import gpulab  # noqa: E402
from timing import N, Table, copy_row, versions  # noqa: E402

BINS = 256


def histogram_items(dtype: str, n: int):
    """``n`` random items in [0, 256): what 256 bins over (0, 256) count, one per value (as bincount)."""
    return cupy.random.default_rng(3).integers(0, BINS, n, dtype=np.int64).astype(dtype)


def histogram_rows(table, dtype: str, n: int) -> None:
    """Rows of ``n`` ``dtype`` items (uint8 or int32) into 256 bins: gpulab, cupy.histogram, cupy.bincount and
    cuda.compute's histogram_even, reused where they can be."""
    xs = histogram_items(dtype, n)
    size = xs.nbytes
    counts = cupy.empty(BINS, np.int64)
    plan = gpulab.make_histogram(xs, BINS, (0, BINS))
    table.try_add(f"gpulab make_histogram {BINS} bins over (0, {BINS}), reused (read)", dtype, size,
                  lambda: plan(xs, out=counts))
    table.try_add(f"gpulab histogram {BINS} bins, one-shot (read)", dtype, size,
                  lambda: gpulab.histogram(xs, BINS, (0, BINS)))
    table.try_add(f"cupy.histogram {BINS} bins over (0, {BINS}) (read)", dtype, size,
                  lambda: cupy.histogram(xs, BINS, (0, BINS)))
    table.try_add(f"cupy.bincount minlength {BINS} (read)", dtype, size, lambda: cupy.bincount(xs, minlength=BINS))
    _cuda_compute_histogram(table, dtype, xs, size)


def _cuda_compute_histogram(table, dtype, xs, size) -> None:
    try:
        import cuda.compute as cc
    except ImportError as exc:
        table.rows.append({"name": "cuda.compute histogram_even", "dtype": dtype, "error": f"not importable: {exc}"})
        return
    n = xs.size
    counts = cupy.empty(BINS, np.int32)  # CUB's counters
    levels = np.array([BINS + 1], np.int32)
    level_type = np.int32  # 256 must be a level: uint8 levels cannot hold it
    low, high = np.array([0], level_type), np.array([BINS], level_type)
    table.try_add(f"cuda.compute histogram_even {BINS} bins, one-shot (read)", dtype, size,
                  lambda: cc.histogram_even(d_samples=xs, d_histogram=counts, num_output_levels=BINS + 1,
                                            lower_level=level_type(0), upper_level=level_type(BINS), num_samples=n))
    arguments = dict(d_samples=xs, d_histogram=counts, h_num_output_levels=levels, h_lower_level=low,
                     h_upper_level=high, num_samples=n)  # cuda.compute 1.0's API takes keywords only
    try:
        histogram = cc.make_histogram_even(**arguments)
        temp = cupy.empty(max(1, histogram(temp_storage=None, **arguments)), np.uint8)
        table.try_add(f"cuda.compute make_histogram_even {BINS} bins, reused (read)", dtype, size,
                      lambda: histogram(temp_storage=temp, **arguments))
    except Exception as exc:  # a peer that cannot run here is reported, not fatal
        table.rows.append({"name": "cuda.compute make_histogram_even", "dtype": dtype,
                           "error": f"{type(exc).__name__}: {exc}"[:300]})


def sort_rows(table, n: int) -> None:
    """Rows of ``n`` uint32 keys, and of float32 keys with uint32 values: gpulab beside cupy.sort (CUB's radix
    sort, keys only) and cuda.compute's radix_sort; each row also says G keys/s."""
    rng = cupy.random.default_rng(4)
    keys = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    floats = rng.standard_normal(n, dtype=np.float32)
    values = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    out, values_out = cupy.empty_like(keys), cupy.empty_like(values)
    float_out = cupy.empty_like(floats)
    sorter = gpulab.make_sort(keys)
    temp = cupy.zeros(sorter.temp_storage_bytes(n), np.uint8)
    _keys_row(table, "gpulab make_sort, reused (r+w)", "uint32", keys.nbytes * 2, n,
              lambda: sorter(keys, out=out, temp_storage=temp))
    _keys_row(table, "gpulab sort, one-shot (r+w)", "uint32", keys.nbytes * 2, n, lambda: gpulab.sort(keys))
    _keys_row(table, "cupy.sort (CUB radix sort, r+w)", "uint32", keys.nbytes * 2, n, lambda: cupy.sort(keys))
    by_key = gpulab.make_sort_by_key(floats, values)
    by_key_temp = cupy.zeros(by_key.temp_storage_bytes(n), np.uint8)
    pairs = (floats.nbytes + values.nbytes) * 2
    _keys_row(table, "gpulab make_sort_by_key float32 keys, uint32 values, reused (r+w)", "float32", pairs, n,
              lambda: by_key(floats, values, out=float_out, values_out=values_out, temp_storage=by_key_temp))
    _cuda_compute_sort(table, n, keys, out, floats, float_out, values, values_out)


def _keys_row(table, name: str, dtype: str, moved_bytes: int, n: int, call) -> None:
    before = len(table.rows)
    table.try_add(name, dtype, moved_bytes, call)
    for row in table.rows[before:]:
        if row.get("seconds"):
            row["g_keys_per_s"] = n / row["seconds"] / 1e9


def _cuda_compute_sort(table, n, keys, out, floats, float_out, values, values_out) -> None:
    try:
        import cuda.compute as cc
    except ImportError as exc:
        table.rows.append({"name": "cuda.compute radix_sort", "dtype": "uint32", "error": f"not importable: {exc}"})
        return
    for dtype, d_in, d_out, v_in, v_out in (("uint32", keys, out, None, None),
                                            ("float32", floats, float_out, values, values_out)):
        moved = (d_in.nbytes + (v_in.nbytes if v_in is not None else 0)) * 2
        what = "keys" if v_in is None else "float32 keys, uint32 values"
        arrays = dict(d_in_keys=d_in, d_out_keys=d_out, d_in_values=v_in, d_out_values=v_out)  # keywords only
        _keys_row(table, f"cuda.compute radix_sort {what}, one-shot (r+w)", dtype, moved, n,
                  lambda arrays=arrays: cc.radix_sort(**arrays, num_items=n, order=cc.SortOrder.ASCENDING))
        try:
            sorter = cc.make_radix_sort(**arrays, order=cc.SortOrder.ASCENDING)
            temp = cupy.empty(max(1, sorter(temp_storage=None, **arrays, num_items=n)), np.uint8)
            _keys_row(table, f"cuda.compute make_radix_sort {what}, reused (r+w)", dtype, moved, n,
                      lambda s=sorter, t=temp, arrays=arrays: s(temp_storage=t, **arrays, num_items=n))
        except Exception as exc:  # a peer that cannot run here is reported, not fatal
            table.rows.append({"name": f"cuda.compute make_radix_sort {what}", "dtype": dtype,
                               "error": f"{type(exc).__name__}: {exc}"[:300]})


def main() -> None:
    """``--runs`` sweeps of the histogram and sort rows beside their copies, in one process (the builds and
    cuda.compute's compiles paid once), printed and written as JSON with the versions."""
    import argparse
    import json
    import time


    parser = argparse.ArgumentParser(description=main.__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args()
    device = gpulab.device.current_device()
    if not device.is_gpu:
        sys.exit("bench/histogram_sort.py needs a CUDA GPU")
    print(f"{device}\n")
    sweeps = []
    for run in range(1, args.runs + 1):
        table = Table()
        for dtype in ("uint8", "int32", "uint32", "float32"):
            copy_row(table, dtype)
        for dtype in ("uint8", "int32"):
            histogram_rows(table, dtype, N)
        sort_rows(table, N)
        copies = {row["dtype"]: row["gb_per_s"] for row in table.rows
                  if row["name"].startswith("device-to-device") and "error" not in row}
        print(f"run {run} of {args.runs}")
        for dtype, copy in copies.items():
            sub = Table()
            sub.rows = [row for row in table.rows if row["dtype"] == dtype]
            sub.print(copy)
            print()
        sweeps.append(table.rows)
    record = {"device": str(device), "gpu": device.description, "compute_capability": device.compute_capability,
              "n": N, "versions": versions(), "sweeps": sweeps,
              "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"histogram-sort-{device.description.replace(' ', '_')}.json"
    path.write_text(json.dumps(record, indent=2, default=str))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

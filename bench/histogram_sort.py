"""Rows of bench/primitives.py for histogram (and sort): gpulab beside CuPy and cuda.compute, at 2^28 items.

Each row counts the bytes the call must move: a histogram reads its items (the counts are 2 KiB); its
ratio is to the device-to-device copy of the same run and dtype (bench/primitives.py's copy_row). ``python bench/primitives.py
--only histogram`` runs them alone.
"""

from __future__ import annotations

import sys
from pathlib import Path

import cupy
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import gpulab  # noqa: E402

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
                  lambda: cc.histogram_even(xs, counts, BINS + 1, level_type(0), level_type(BINS), n))
    try:
        histogram = cc.make_histogram_even(xs, counts, levels, low, high, n)
        temp = cupy.empty(max(1, histogram(None, xs, counts, levels, low, high, n)), np.uint8)
        table.try_add(f"cuda.compute make_histogram_even {BINS} bins, reused (read)", dtype, size,
                      lambda: histogram(temp, xs, counts, levels, low, high, n))
    except Exception as exc:  # a peer that cannot run here is reported, not fatal
        table.rows.append({"name": "cuda.compute make_histogram_even", "dtype": dtype,
                           "error": f"{type(exc).__name__}: {exc}"[:300]})

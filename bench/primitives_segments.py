"""bench/primitives.py's rows for segmented_reduce and reduce_by_key, beside cuda.compute's and CuPy's.

float32 values, 2^28 items. Segments of 1000 items and of random lengths 1 to
100,000 (int64 offsets); keys int32 in runs of random lengths (about 16, and
about 1000, items on average). Bytes counted are those read (items and offsets;
keys and values) plus, for reduce_by_key, the runs' keys and folds written.
cuda.compute 1.0.2 has no reduce_by_key: its peer is ``unique_by_key`` of the
keys and a counting iterator (each run's first index), then ``segmented_reduce``
of the values between those indices, the number of runs read in between (as a
caller must, to size the second call).
"""

from __future__ import annotations

import cupy
import numpy as np

import gpulab


def add(a, b):
    return a + b


def segment_offsets(n: int, shape: str, rng: np.random.Generator) -> cupy.ndarray:
    """int64 offsets over n items: segments of 1000 items, or of random lengths 1 to 100,000."""
    if shape == "1k":
        lengths = np.full(n // 1000 + 1, 1000)
    else:
        lengths = rng.integers(1, 100_001, 2 * n // 50_000 + 2)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    return cupy.asarray(offsets[offsets < n].tolist() + [n], dtype=np.int64)


def run_keys(n: int, mean_run: int, rng: np.random.Generator) -> cupy.ndarray:
    """int32 keys in runs of random lengths, ``mean_run`` on average."""
    starts = cupy.random.default_rng(int(rng.integers(1 << 30))).random(n) < 1 / mean_run
    return cupy.cumsum(starts, dtype=np.int32)


def segment_rows(table, n: int) -> None:
    """Add the segmented_reduce and reduce_by_key rows (and their peers') to ``table`` (bench/primitives.Table)."""
    rng = np.random.default_rng(41)
    xs = cupy.random.default_rng(0).standard_normal(n, dtype=np.float32)
    zero = np.float32(0)
    reducer = gpulab.make_segmented_reduce(add, xs)
    for shape, label in (("1k", "segments of 1000"), ("random", "segments of 1-100k items")):
        offsets = segment_offsets(n, shape, rng)
        count = offsets.size - 1
        out = cupy.empty(count, np.float32)
        read = xs.nbytes + offsets.nbytes
        table.try_add(f"gpulab segmented_reduce a+b, {label} (read)", "float32", read,
                      lambda: reducer(xs, offsets, zero, out=out, check_offsets=False))
        table.try_add(f"gpulab segmented_reduce a+b, {label}, offsets checked (read)", "float32", read,
                      lambda: reducer(xs, offsets, zero, out=out))
        table.try_add(f"cupy.add.reduceat, {label} (read)", "float32", read,
                      lambda: cupy.add.reduceat(xs, offsets[:-1], out=out))
        _cuda_compute_segments(table, label, xs, offsets, out, read)
    values = xs
    keys_bytes = n * 4
    planner = gpulab.make_reduce_by_key(add, np.dtype(np.int32), values)
    for mean_run in (16, 1000):
        keys = run_keys(n, mean_run, rng)
        runs = int(cupy.count_nonzero(keys[1:] != keys[:-1])) + 1
        moved = keys_bytes + values.nbytes + runs * (4 + 4)
        out_keys, out, counted = cupy.empty(n, np.int32), cupy.empty(n, np.float32), cupy.zeros((), np.int64)
        arguments = dict(out_keys=out_keys, out=out, count=counted)
        table.try_add(f"gpulab reduce_by_key a+b, runs of ~{mean_run} (r + runs w)", "float32", moved,
                      lambda a=arguments: planner(keys, values, **a))
        table.try_add(f"gpulab reduce_by_key a+b, runs of ~{mean_run}, count read (finish)", "float32", moved,
                      lambda a=arguments: planner.finish(planner(keys, values, **a)))
        _cuda_compute_by_key(table, mean_run, keys, values, out_keys, out, moved)


def _cuda_compute_segments(table, label, xs, offsets, out, read) -> None:
    try:
        import cuda.compute as cc
    except ImportError as exc:
        table.rows.append({"name": "cuda.compute segmented_reduce", "dtype": "float32", "error": f"{exc}"})
        return
    count, h_init = offsets.size - 1, np.zeros(1, np.float32)
    starts, ends = offsets[:-1], offsets[1:]
    for name, op in (("Python a+b", add), ("OpKind.PLUS", cc.OpKind.PLUS)):
        try:
            reducer = cc.make_segmented_reduce(d_in=xs, d_out=out, start_offsets_in=starts, end_offsets_in=ends,
                                               op=op, h_init=h_init)
            arguments = dict(d_in=xs, d_out=out, num_segments=count, start_offsets_in=starts, end_offsets_in=ends,
                             op=op, h_init=h_init)
            temp = cupy.empty(max(reducer(temp_storage=None, **arguments), 1), np.uint8)
            table.try_add(f"cuda.compute make_segmented_reduce {name}, {label}, reused (read)", "float32", read,
                          lambda r=reducer, t=temp, a=arguments: r(temp_storage=t, **a))
        except Exception as exc:  # a peer that cannot run here is reported, not fatal
            table.rows.append({"name": f"cuda.compute make_segmented_reduce {name}, {label}", "dtype": "float32",
                               "error": f"{type(exc).__name__}: {exc}"[:300]})


def _cuda_compute_by_key(table, mean_run, keys, values, out_keys, out, moved) -> None:
    try:
        import cuda.compute as cc
    except ImportError as exc:
        table.rows.append({"name": "cuda.compute unique_by_key", "dtype": "float32", "error": f"{exc}"})
        return
    n = keys.size
    starts, counted, h_init = cupy.empty(n + 1, np.int64), cupy.zeros(1, np.int64), np.zeros(1, np.float32)
    counting = cc.CountingIterator(np.int64(0))
    try:
        unique = cc.make_unique_by_key(d_in_keys=keys, d_in_items=counting, d_out_keys=out_keys, d_out_items=starts,
                                       d_out_num_selected=counted, op=cc.OpKind.EQUAL_TO)
        unique_arguments = dict(d_in_keys=keys, d_in_items=counting, d_out_keys=out_keys, d_out_items=starts,
                                d_out_num_selected=counted, op=cc.OpKind.EQUAL_TO, num_items=n)
        unique_temp = cupy.empty(max(unique(temp_storage=None, **unique_arguments), 1), np.uint8)
        folds = cc.make_segmented_reduce(d_in=values, d_out=out, start_offsets_in=starts[:-1],
                                         end_offsets_in=starts[1:], op=cc.OpKind.PLUS, h_init=h_init)
        fold_temp = cupy.empty(max(folds(temp_storage=None, d_in=values, d_out=out, num_segments=n,
                                         start_offsets_in=starts[:-1], end_offsets_in=starts[1:],
                                         op=cc.OpKind.PLUS, h_init=h_init), 1), np.uint8)

        def unique_then_fold():
            unique(temp_storage=unique_temp, **unique_arguments)
            runs = int(counted.get()[0])  # the second call's size
            starts[runs:runs + 1].fill(n)
            folds(temp_storage=fold_temp, d_in=values, d_out=out, num_segments=runs, start_offsets_in=starts[:runs],
                  end_offsets_in=starts[1:runs + 1], op=cc.OpKind.PLUS, h_init=h_init)

        table.try_add(f"cuda.compute unique_by_key alone, runs of ~{mean_run}", "float32", moved,
                      lambda: unique(temp_storage=unique_temp, **unique_arguments))
        table.try_add(f"cuda.compute unique_by_key + segmented_reduce PLUS, runs of ~{mean_run}", "float32", moved,
                      unique_then_fold)
    except Exception as exc:  # a peer that cannot run here is reported, not fatal
        table.rows.append({"name": f"cuda.compute unique_by_key + segmented_reduce, runs of ~{mean_run}",
                           "dtype": "float32", "error": f"{type(exc).__name__}: {exc}"[:300]})

"""Primitives over inputs that are not contiguous: where every tile takes the item path of its layout.

``python bench/layouts.py [--n 26] [--json FILE]`` times map, reduce, scan and filter (reused
``make_*`` objects, CUDA events, median of 20) over a contiguous array, its stride-2 view and a
2-D view whose rows are padded (1000 of every 1024 columns), each of ``2**n`` items, float32 and
float64, beside CuPy's copy of the same view to a contiguous array. Such inputs compute each
item's offset from its index (``offset_of`` in templates/common.cu: a multiply per item, by the
divisor the host prepared, ``runtime.arrays.row_divisor``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import cupy
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from primitives import add, is_positive  # noqa: E402
from timing import gpu_seconds, versions  # noqa: E402

import gpulab  # noqa: E402

ROW, PADDED_ROW = 1000, 1024


def twice(x):
    return x + x


def views(n: int, dtype) -> dict:
    """The layouts timed, each of ``n`` items of ``dtype``."""
    rng = cupy.random.default_rng(0)
    rows = -(-n // ROW)
    padded = rng.standard_normal((rows, PADDED_ROW), dtype=dtype)[:, :ROW]
    return {"contiguous": rng.standard_normal(n, dtype=dtype),
            "stride 2": rng.standard_normal(2 * n, dtype=dtype)[::2],
            f"2-D, rows of {ROW} in {PADDED_ROW}": padded}


def time_layouts(n: int) -> list[dict]:
    """One row per dtype, layout and call: microseconds and items per second."""
    rows = []
    for dtype in (np.float32, np.float64):
        for layout, xs in views(n, dtype).items():
            items = xs.size
            out = cupy.empty(items, dtype)
            scalar, kept = cupy.empty((), dtype), cupy.zeros((), np.int64)
            zero = np.zeros((), dtype)[()]
            mapper, reducer = gpulab.make_map(twice, xs), gpulab.make_reduce(add, xs)
            scanner, filterer = gpulab.make_scan(add, xs), gpulab.make_filter(is_positive, xs)
            temp = cupy.empty(max(reducer.temp_storage_bytes(items), 1), np.uint8)
            contiguous = out.reshape(xs.shape)  # a copy even where xs is contiguous already
            calls = {"copy to contiguous (CuPy)": lambda: contiguous.__setitem__(Ellipsis, xs),
                     "map x+x": lambda: mapper(xs, out=out),
                     "reduce a+b": lambda: reducer(xs, zero, out=scalar, temp_storage=temp),
                     "inclusive scan a+b": lambda: scanner(xs, out=out),
                     "filter x>0": lambda: filterer(xs, out=out, kept=kept)}
            for name, call in calls.items():
                seconds = gpu_seconds(call)
                rows.append({"dtype": np.dtype(dtype).name, "layout": layout, "what": name, "items": items,
                             "us": seconds * 1e6, "g_items_per_s": items / seconds / 1e9})
                print(f"{np.dtype(dtype).name:8} {layout:26} {name:28} {seconds * 1e6:9.1f} us"
                      f" {items / seconds / 1e9:7.2f} G items/s", flush=True)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=26, help="log2 of the item count")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    print(f"{cupy.cuda.runtime.getDeviceProperties(0)['name'].decode()}, 2^{args.n} items")
    rows = time_layouts(2**args.n)
    if args.json:
        args.json.write_text(json.dumps({"versions": versions(), "n": 2**args.n, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Reduce throughput by element type: what a change to the in-order fold costs each width.

``python bench/reduce_types.py TYPE [TYPE ...]`` (e.g. ``int8 int16 float32 float64``) times a
reused ``make_reduce`` of ``a + b`` over 2^28 items (2^27 of 8 bytes or more), median of CUDA
events, and prints GB/s with the kernel's registers per thread, then the figures as JSON. Run 45
(bench/results) ran it on two builds of the fold: int8 items lost a fifth of their speed where
ptxas held all of a tile's item loads at once.
"""

import json
import os
import sys

import cupy
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from primitives import add  # noqa: E402
from timing import gpu_seconds  # noqa: E402

import gpulab  # noqa: E402

found = {}
for name in sys.argv[1:]:
    dtype = np.dtype(name)
    xs = cupy.ones(2**28 if dtype.itemsize <= 4 else 2**27, dtype)
    out, zero = cupy.empty((), dtype), dtype.type(0)
    reducer = gpulab.make_reduce(add, xs)
    reducer(xs, zero, out=out)
    found[name] = xs.nbytes / gpu_seconds(lambda: reducer(xs, zero, out=out)) / 1e9
    print(name, "reduce GB/s %.0f" % found[name], "registers", reducer.build().resources["gpulab_reduce"].registers)
print(json.dumps(found))

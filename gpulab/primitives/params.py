"""C layouts of kernel parameters, as NumPy dtypes (aligned like the generated structs)."""

from __future__ import annotations

import numpy as np

POINTER = np.dtype(np.uint64)


def index_dtype(index_bits: int) -> np.dtype:
    """``index_t``: int32 or int64."""
    return np.dtype(np.int32 if index_bits == 32 else np.int64)


def array_struct(index_bits: int) -> np.dtype:
    """``struct InputK`` / ``struct Output``: a pointer and a ``Layout``."""
    index = index_dtype(index_bits)
    return np.dtype([("data", POINTER), ("inner_size", index), ("inner_stride", index),
                     ("outer_stride", index)], align=True)


IOTA_STRUCT = np.dtype([("start", np.int64)])
TILE_STATUS = np.dtype([("flags", POINTER), ("aggregate", POINTER), ("inclusive", POINTER),
                        ("next_tile", POINTER)])


def uniforms_struct(uniforms) -> np.dtype:
    """``struct Uniforms``: the uniforms' types in order (one byte when there are none)."""
    if not uniforms:
        return np.dtype("V1")
    return np.dtype([(f"u_{name}", element.dtype) for name, element in uniforms], align=True)


def array_value(array) -> tuple:
    """The ``InputK``/``Output`` value of a :class:`~gpulab.runtime.arrays.DeviceArray`."""
    layout = array.layout
    return (array.pointer, layout.inner_size, layout.inner_stride, layout.outer_stride)

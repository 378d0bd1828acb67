"""Map on a device: ``out[i] = fn(x0[i], x1[i], ...)``."""

from __future__ import annotations

import numpy as np

from ..iota import Iota
from ..runtime.arrays import device_array
from ..runtime.module import launch
from ..runtime.streams import stream_handle
from . import params
from .plan import DevicePlan, index_bits_for, require


INPUT_NAMES = tuple(f"in{i}" for i in range(8))  # parameter names of the inputs (map takes at most 3)


class MapPlan(DevicePlan):
    """Reusable device map (see :func:`gpulab.make_map`)."""

    def __init__(self, kernel, types, device, *, iota=(), **options):
        super().__init__("map", kernel, types, device, iota=tuple(iota), **options)
        self.iota = tuple(iota) or (False,) * len(types)

    def result_dtype(self, uniform_values: tuple | None = None) -> np.dtype:
        """The output's element type for these uniforms (their current values by default)."""
        values = self.uniform_values() if uniform_values is None else uniform_values
        return self.prepared(32, values).build.result.dtype

    def __call__(self, *xs, out=None, stream=None):
        """Run on ``xs`` (device arrays or :class:`Iota`), writing ``out`` (allocated if ``None``)."""
        import cupy

        arrays = [None if isinstance(x, Iota) else require(device_array(x, name=f"input {i}"), element.dtype,
                                                            f"input {i}")
                  for i, (x, element) in enumerate(zip(xs, self.types))]
        n = _common_size(xs, arrays)
        uniform_values = self.uniform_values()
        result = self.result_dtype(uniform_values)
        if out is None:
            out = cupy.empty(n, dtype=result)
        destination = require(device_array(out, name="output"), result, "output", n)
        present = [a for a in arrays if a is not None]
        prepared = self.prepared(index_bits_for(n, [*present, destination]), uniform_values)
        if n == 0:
            return out
        pack = prepared.pack("gpulab_map")
        for name, x, array in zip(INPUT_NAMES, xs, arrays):
            pack[name] = params.iota_value(x) if array is None else params.array_value(array)
        pack["out"] = params.array_value(destination)
        pack["n"] = n
        prepared.write_uniforms(pack, uniform_values)
        tile = prepared.build.geometry.tile
        launch(prepared.kernels["gpulab_map"], -(-n // tile), prepared.build.geometry.block_threads,
               stream_handle(stream), pack)
        return out


def _common_size(xs, arrays) -> int:
    sizes = [len(x) if array is None else array.size for x, array in zip(xs, arrays)]
    if len(sizes) > 1 and len(set(sizes)) > 1:
        from ..errors import LengthMismatchError

        raise LengthMismatchError(f"map inputs must have equal lengths; got {sizes}")
    return sizes[0]

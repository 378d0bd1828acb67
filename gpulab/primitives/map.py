"""Map on a device: ``out[i] = fn(x0[i], x1[i], ...)``."""

from __future__ import annotations

import numpy as np

from ..errors import LengthMismatchError
from ..options import BuildOptions
from ..runtime.arrays import array_fields, contiguous_fields, empty, plain_output
from ..runtime.streams import stream_handle
from .plan import DevicePlan, index_bits_of, on_plan_device, plain_input

INPUT_NAMES = tuple(f"in{i}" for i in range(8))  # parameter names of the inputs (map takes at most 3)


class MapPlan(DevicePlan):
    """Reusable device map (see :func:`gpulab.make_map`)."""

    def __init__(self, kernel, types, device, options: BuildOptions = BuildOptions(), mapped=()):
        super().__init__("map", kernel, types, device, options, mapped)

    def argument_order(self, build):
        return {"gpulab_map": (*INPUT_NAMES[:len(self.types)], "out", "n", "u")}

    def result_dtype(self, uniform_values: tuple | None = None) -> np.dtype:
        """The output's element type for these uniforms (their current values by default)."""
        values = self.uniform_values() if uniform_values is None else uniform_values
        return self.prepared(32, values).build.result.dtype

    @on_plan_device
    def __call__(self, *xs, out=None, stream=None):
        """Run on ``xs`` (device arrays, :class:`~gpulab.iota.Iota` or :func:`~gpulab.mapped` inputs), writing ``out`` (allocated if ``None``)."""
        if len(xs) != len(self.kinds):
            raise LengthMismatchError(f"this map takes {len(self.kinds)} input(s); {len(xs)} given")
        uniform_values = self.uniform_values()
        values, sizes, extent = [], [], 0
        for position, x in enumerate(xs):
            fields, size, reach = self.input_fields(x, position, uniform_values)
            values += fields
            sizes.append(size)
            extent = max(extent, reach)
        n = sizes[0]
        if len(sizes) > 1 and sizes.count(n) != len(sizes):
            raise LengthMismatchError(f"map inputs must have equal lengths; got {sizes}")
        prepared = self.prepared(32, uniform_values)  # the result type is the same for both index widths
        result = prepared.build.result.dtype
        if out is None:
            out = empty(n, result)
        out_fields, size, reach = array_fields(out, result, "output")
        if size != n:
            raise LengthMismatchError(f"the output has {size} items; this call needs {n}")
        if index_bits_of(max(extent, reach, n)) == 64:
            prepared = self.prepared(64, uniform_values)
        if n == 0:
            return out
        handle = stream_handle(stream)
        prepared.launcher("gpulab_map")(-(-n // prepared.build.geometry.tile), handle, *values, *out_fields, n,
                                        *prepared.uniform_fields(uniform_values))
        prepared.check_reads(uniform_values, handle)
        return out

    def plain_call(self, prepared):
        """See :meth:`DevicePlan.plain_call`: every input a C-contiguous CuPy array, all of one size, and ``out``
        one too or ``None``."""
        import cupy

        current_stream = cupy.cuda.get_current_stream
        dtypes, result, ordinal = self._input_dtypes, prepared.build.result.dtype, self.device.ordinal
        run, tile = prepared.launcher("gpulab_map"), prepared.build.geometry.tile

        def call(*xs, out=None, stream=None):
            if stream is not None or len(xs) != len(dtypes):
                return None
            fields, n = [], None
            for x, dtype in zip(xs, dtypes):
                found = plain_input(x, dtype, ordinal)
                if found is None or (n is not None and found[1] != n):
                    return None
                n = found[1]
                fields += contiguous_fields(found[0], n)
            output = plain_output(out, n, result, ordinal)
            if output is None:
                return None
            run(-(-n // tile), current_stream().ptr, *fields, *contiguous_fields(output[1], n), n)
            return output[0]

        return call

"""Scan on a device: inclusive or exclusive prefix folds, one pass with decoupled look-back."""

from __future__ import annotations

import numpy as np

from ..conversion import scalar
from ..errors import KernelTypeError, LengthMismatchError
from ..options import BuildOptions
from ..runtime.arrays import array_fields, contiguous_fields, empty, plain_output
from ..runtime.module import value_fields
from ..runtime.streams import stream_handle
from .lookback import LookBackPlan
from .plan import index_bits_of, on_plan_device, plain_input


class ScanPlan(LookBackPlan):
    """Reusable device scan (see :func:`gpulab.make_scan`)."""

    def __init__(self, kernel, types, device, options: BuildOptions = BuildOptions(), mapped=()):
        super().__init__("scan", kernel, types, device, options, mapped)
        self.element = self.types[0]
        self.exclusive = options.exclusive
        self._initial_fields = value_fields(self.element.dtype)
        self._zero = np.zeros((), self.element.dtype)[()]

    def status_value_size(self, prepared) -> int:
        """A tile's aggregate is an element."""
        return self.element.itemsize

    def argument_order(self, build):
        return {"gpulab_scan": ("in", "n", "out", "status", "epoch", "initial", "has_initial", "u")}

    @on_plan_device
    def __call__(self, xs, initial=None, *, out=None, temp_storage=None, stream=None):
        """Scan ``xs`` into ``out`` (allocated like ``xs`` if ``None``)."""
        if self.exclusive and initial is None:
            raise KernelTypeError("an exclusive scan needs initial= (item 0 of the result is the initial value)")
        dtype = self.element.dtype
        uniform_values = self.uniform_values()
        fields, n, extent = self.input_fields(xs, 0, uniform_values)
        initial_fields = self._initial_fields(scalar(initial, self.element) if initial is not None else self._zero)
        if out is None:
            out = empty(n, dtype)
        out_fields, out_size, out_extent = array_fields(out, dtype, "output")
        if out_size != n:
            raise LengthMismatchError(f"the output has {out_size} items; this call needs {n}")
        prepared = self.prepared(index_bits_of(max(extent, out_extent)), uniform_values)
        if n == 0:
            return out
        handle = stream_handle(stream)
        self._launch(prepared, handle, n, fields, out_fields, initial_fields, initial is not None, temp_storage,
                     prepared.uniform_fields(uniform_values))
        prepared.check_reads(uniform_values, handle)
        return out

    def plain_call(self, prepared):
        """See :meth:`DevicePlan.plain_call`: ``xs`` a C-contiguous CuPy array, ``out`` one too or ``None``,
        ``initial`` ``None`` (inclusive scans) or a scalar of the element's own type, no ``temp_storage``."""
        import cupy

        current_stream = cupy.cuda.get_current_stream
        dtype, ordinal, initial_fields, zero = self.element.dtype, self.device.ordinal, self._initial_fields, self._zero
        initial_type = dtype.type if dtype.names is None else None
        exclusive = self.exclusive

        def call(xs, initial=None, *, out=None, temp_storage=None, stream=None):
            if stream is not None or temp_storage is not None:
                return None
            if type(initial) is not initial_type and (initial is not None or exclusive):
                return None
            found = plain_input(xs, dtype, ordinal)
            if found is None:
                return None
            pointer, n = found
            output = plain_output(out, n, dtype, ordinal)
            if output is None:
                return None
            self._launch(prepared, current_stream().ptr, n, contiguous_fields(pointer, n),
                         contiguous_fields(output[1], n), initial_fields(zero if initial is None else initial),
                         initial is not None, None, ())
            return output[0]

        return call

    def _launch(self, prepared, stream: int, n: int, fields, out_fields, initial_fields, has_initial: bool,
                temp_storage, uniform_fields) -> None:
        """Launch the scan of ``n`` items (``fields``, the input's) into ``out_fields`` on ``stream``."""
        tiles, status, epoch = self.acquire_status(n, prepared, temp_storage, stream)
        prepared.launcher("gpulab_scan")(tiles, stream, *fields, n, *out_fields, *status, epoch, *initial_fields,
                                         has_initial, *uniform_fields)

"""Filter on a device: stream compaction that keeps the input's order."""

from __future__ import annotations

import numpy as np

from ..errors import LengthMismatchError
from ..options import BuildOptions
from ..runtime.arrays import array_fields, contiguous_fields, empty, plain_output
from ..runtime.streams import stream_handle
from .lookback import LookBackPlan
from .plan import index_bits_of, on_plan_device, plain_input

KEPT_DTYPE = np.dtype(np.int64)  # the kept count (long long in filter.cu)


class FilterPlan(LookBackPlan):
    """Reusable device filter (see :func:`gpulab.make_filter`)."""

    def __init__(self, kernel, types, device, options: BuildOptions = BuildOptions(), mapped=()):
        super().__init__("filter", kernel, types, device, options, mapped)
        self.element = self.types[0]

    def status_value_size(self, prepared) -> int:
        """A tile's aggregate is a count of kept items: an ``index_t``."""
        return prepared.build.options.index_bits // 8

    def finish(self, output, *, stream=None):
        """The kept items of ``(out, kept)`` (this waits for the count)."""
        import cupy

        out, kept = output
        if stream is not None and not hasattr(stream, "ptr"):
            stream = cupy.cuda.ExternalStream(stream_handle(stream))
        return out[: int(kept.get(stream=stream))]

    def argument_order(self, build):
        return {"gpulab_filter": ("in", "n", "out", "kept_total", "status", "epoch", "u")}

    @on_plan_device
    def __call__(self, xs, *, out=None, kept=None, temp_storage=None, stream=None):
        """Write the kept items of ``xs`` to the front of ``out``, and their number to ``kept``.

        Returns
        -------
        (out, kept)
            ``out`` has ``len(xs)`` items, of which the first ``int(kept)`` were kept;
            ``kept`` is a 0-d device array (reading it waits for the stream).
        """
        dtype = self.element.dtype
        uniform_values = self.uniform_values()
        fields, n, extent = self.input_fields(xs, 0, uniform_values)
        if out is None:
            out = empty(n, dtype)
        if kept is None:
            kept = empty((), KEPT_DTYPE)  # the kernel's last tile writes it
        out_fields, out_size, out_extent = array_fields(out, dtype, "output")
        if out_size != n:
            raise LengthMismatchError(f"the output has {out_size} items; this call needs {n}")
        (kept_pointer, *_), kept_size, _ = array_fields(kept, KEPT_DTYPE, "kept count")
        if kept_size != 1:
            raise LengthMismatchError(f"the kept count has {kept_size} items; it needs 1")
        prepared = self.prepared(index_bits_of(max(extent, out_extent)), uniform_values)
        if n == 0:
            kept.fill(0)
            return out, kept
        handle = stream_handle(stream)
        self._launch(prepared, handle, n, fields, out_fields, kept_pointer, temp_storage,
                     prepared.uniform_fields(uniform_values))
        prepared.check_reads(uniform_values, handle)
        return out, kept

    def plain_call(self, prepared):
        """See :meth:`DevicePlan.plain_call`: ``xs`` a C-contiguous CuPy array, ``out`` and ``kept`` ones too
        or ``None``, no ``temp_storage``."""
        import cupy

        current_stream = cupy.cuda.get_current_stream
        dtype, ordinal = self.element.dtype, self.device.ordinal

        def call(xs, *, out=None, kept=None, temp_storage=None, stream=None):
            if stream is not None or temp_storage is not None:
                return None
            found = plain_input(xs, dtype, ordinal)
            if found is None:
                return None
            pointer, n = found
            output, count = plain_output(out, n, dtype, ordinal), plain_output(kept, None, KEPT_DTYPE, ordinal)
            if output is None or count is None:
                return None
            self._launch(prepared, current_stream().ptr, n, contiguous_fields(pointer, n),
                         contiguous_fields(output[1], n), count[1], None, ())
            return output[0], count[0]

        return call

    def _launch(self, prepared, stream: int, n: int, fields, out_fields, kept_pointer: int, temp_storage,
                uniform_fields) -> None:
        """Launch the filter of ``n`` items (``fields``, the input's) into ``out_fields`` on ``stream``."""
        tiles, status, epoch = self.acquire_status(n, prepared, temp_storage, stream)
        prepared.launcher("gpulab_filter")(tiles, stream, *fields, n, *out_fields, kept_pointer, *status, epoch,
                                           *uniform_fields)

"""Reduce on a device: ``functools.reduce(fn, xs, initial)``, in one launch."""

from __future__ import annotations

from ..conversion import scalar
from ..errors import ArgumentError, LengthMismatchError
from ..options import BuildOptions
from ..runtime.arrays import array_fields, contiguous_fields, device_array, empty, plain_output
from ..runtime.module import value_fields
from ..runtime.scratch import StreamScratch
from ..runtime.streams import stream_handle
from .plan import DevicePlan, index_bits_of, on_plan_device, plain_input

COUNTER_BYTES = 4  # an unsigned int: how many blocks of a group have finished (reduce.cu)


class ReducePlan(DevicePlan):
    """Reusable device reduce (see :func:`gpulab.make_reduce`)."""

    def __init__(self, kernel, types, device, options: BuildOptions = BuildOptions(), mapped=()):
        super().__init__("reduce", kernel, types, device, options, mapped)
        self.element = self.types[0]
        self._initial_fields = value_fields(self.element.dtype)
        self._counters = StreamScratch()  # only ever counters (each launch leaves them 0), so never re-zeroed
        self._partials = StreamScratch()

    def argument_order(self, build):
        return {"gpulab_reduce": ("in", "n", "out", "partials", "finished", "initial", "u")}

    def blocks(self, n: int, prepared) -> tuple[int, int]:
        """``(blocks, groups)``: one block per tile, and the groups of ``TILE`` blocks their partials are
        folded in (1 block: it folds everything, with no partials)."""
        tile = prepared.build.geometry.tile
        blocks = max(1, -(-n // tile))
        if blocks > tile * tile:
            raise ArgumentError(f"a reduce of {self.element.name} folds at most {tile ** 3} items in one call "
                             f"(two levels of {tile}-item tiles); this input has {n}: reduce slices of it, "
                             "then reduce their results")
        return blocks, -(-blocks // tile)

    def temp_storage_bytes(self, n: int) -> int:
        """Bytes for the partial results (any contents; 0 when one block folds everything)."""
        prepared = self.prepared(index_bits_of(n), self.uniform_values())
        blocks, groups = self.blocks(n, prepared)
        return (blocks + groups) * self.element.itemsize if blocks > 1 else 0

    @on_plan_device
    def __call__(self, xs, initial, *, out=None, temp_storage=None, stream=None):
        """Fold ``xs`` into ``out`` (a 0-d device array, allocated if ``None``)."""
        dtype = self.element.dtype
        uniform_values = self.uniform_values()
        fields, n, extent = self.input_fields(xs, 0, uniform_values)
        initial_fields = self._initial_fields(scalar(initial, self.element))
        prepared = self.prepared(index_bits_of(extent), uniform_values)
        if out is None:
            out = empty((), dtype)
        (out_pointer, *_), out_size, _ = array_fields(out, dtype, "output")
        if out_size != 1:
            raise LengthMismatchError(f"the output has {out_size} items; this call needs 1")
        handle = stream_handle(stream)
        self._launch(prepared, handle, n, fields, out_pointer, initial_fields, temp_storage,
                     prepared.uniform_fields(uniform_values))
        prepared.check_reads(uniform_values, handle)
        return out

    def plain_call(self, prepared):
        """See :meth:`DevicePlan.plain_call`: ``xs`` a C-contiguous CuPy array, ``out`` one too or ``None``,
        ``initial`` a scalar of the element's own type (a NumPy scalar, not a Python number), no ``temp_storage``."""
        import cupy

        current_stream = cupy.cuda.get_current_stream
        dtype, ordinal, initial_fields = self.element.dtype, self.device.ordinal, self._initial_fields
        initial_type = dtype.type if dtype.names is None else None

        def call(xs, initial, *, out=None, temp_storage=None, stream=None):
            if type(initial) is not initial_type or stream is not None or temp_storage is not None:
                return None
            found = plain_input(xs, dtype, ordinal)
            if found is None:
                return None
            output = plain_output(out, None, dtype, ordinal)
            if output is None:
                return None
            pointer, n = found
            self._launch(prepared, current_stream().ptr, n, contiguous_fields(pointer, n), output[1],
                         initial_fields(initial), None, ())
            return output[0]

        return call

    def _launch(self, prepared, stream: int, n: int, fields, out_pointer: int, initial_fields, temp_storage,
                uniform_fields) -> None:
        """Launch the fold of ``n`` items (``fields``, the input's) into ``out_pointer`` on ``stream``."""
        blocks, groups = self.blocks(n, prepared)
        partials = finished = 0
        if blocks > 1:
            partials_bytes = (blocks + groups) * self.element.itemsize
            finished, _ = self._counters.get((groups + 1) * COUNTER_BYTES, stream)
            if temp_storage is None:
                partials, _ = self._partials.get(partials_bytes, stream)
            else:
                partials = _storage(temp_storage, partials_bytes)
        prepared.launcher("gpulab_reduce")(blocks, stream, *fields, n, out_pointer, partials, finished, *initial_fields,
                                           *uniform_fields)


def _storage(temp_storage, nbytes: int) -> int:
    """The address of caller-given temporary storage of at least ``nbytes``."""
    view = device_array(temp_storage, name="temp_storage")
    size = view.size * view.dtype.itemsize
    if size < nbytes:
        raise ArgumentError(f"temp_storage has {size} bytes; this run needs {nbytes} (plan.temp_storage_bytes(n))")
    return view.pointer

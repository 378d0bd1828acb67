"""Reduce on a device: ``functools.reduce(fn, xs, initial)``, in one launch."""

from __future__ import annotations

from ..conversion import scalar
from ..errors import LengthMismatchError
from ..runtime.arrays import array_fields, device_array, empty
from ..runtime.module import launch, value_fields
from ..runtime.scratch import StreamScratch
from ..runtime.streams import stream_handle
from .plan import DevicePlan, index_bits_of, on_plan_device

SINGLE_BLOCK_TILES = 4  # inputs of at most this many tiles are folded by one block (no partials)
COUNTER_BYTES = 16  # the block counter, then the partials (16 bytes keep any element type aligned)


class ReducePlan(DevicePlan):
    """Reusable device reduce (see :func:`gpulab.make_reduce`)."""

    def __init__(self, kernel, types, device, **options):
        super().__init__("reduce", kernel, types, device, **options)
        self.element = self.types[0]
        self._initial_fields = value_fields(self.element.dtype)
        self._scratch = StreamScratch()

    def argument_order(self, build):
        return {"gpulab_reduce": ("in", "n", "out", "partials", "finished", "initial", "u")}

    def blocks(self, n: int, prepared) -> int:
        """How many blocks fold ``n`` items (1: one block folds them all, with no partials)."""
        tiles = -(-n // prepared.build.geometry.tile)
        if tiles <= SINGLE_BLOCK_TILES:
            return 1
        resident = prepared.module.occupancy("gpulab_reduce", prepared.build.geometry.block_threads)
        return min(tiles, resident * self.device.multiprocessors)

    def temp_storage_bytes(self, n: int) -> int:
        """Bytes for the per-block partial results (any contents; 0 when one block folds everything)."""
        prepared = self.prepared(index_bits_of(n), self.uniform_values())
        blocks = self.blocks(n, prepared)
        return blocks * self.element.itemsize if blocks > 1 else 0

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
        out_pointer, _, _, _, out_size, _ = array_fields(out, dtype, "output")
        if out_size != 1:
            raise LengthMismatchError(f"the output has {out_size} items; this call needs 1")
        handle = stream_handle(stream)
        blocks = self.blocks(n, prepared)
        partials = finished = 0
        if blocks > 1:
            partials_bytes = blocks * self.element.itemsize
            scratch, _ = self._scratch.get(COUNTER_BYTES + (0 if temp_storage is not None else partials_bytes),
                                           handle)
            finished, partials = scratch, scratch + COUNTER_BYTES
            if temp_storage is not None:
                partials = _storage(temp_storage, partials_bytes)
        pack = prepared.pack("gpulab_reduce")
        pack.write(*fields, n, out_pointer, partials, finished,
                   *initial_fields, *prepared.uniform_fields(uniform_values))
        launch(prepared.kernels["gpulab_reduce"], blocks, prepared.build.geometry.block_threads, handle, pack)
        prepared.check_reads(uniform_values, handle)
        return out


def _storage(temp_storage, nbytes: int) -> int:
    """The address of caller-given temporary storage of at least ``nbytes``."""
    view = device_array(temp_storage, name="temp_storage")
    size = view.size * view.dtype.itemsize
    if size < nbytes:
        raise ValueError(f"temp_storage has {size} bytes; this run needs {nbytes} (plan.temp_storage_bytes(n))")
    return view.pointer

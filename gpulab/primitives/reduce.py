"""Reduce on a device: ``functools.reduce(fn, xs, initial)``, in two passes."""

from __future__ import annotations

import numpy as np

from ..runtime.arrays import device_array
from ..runtime.module import launch
from ..runtime.streams import stream_handle
from . import params
from .plan import DevicePlan, index_bits_for, require

SINGLE_PASS_TILES = 4  # inputs of at most this many tiles are folded by one block, in one launch


class ReducePlan(DevicePlan):
    """Reusable device reduce (see :func:`gpulab.make_reduce`)."""

    def __init__(self, kernel, types, device, **options):
        super().__init__("reduce", kernel, types, device, **options)
        self.element = self.types[0]

    def partial_count(self, n: int, prepared) -> int:
        """How many blocks pass 1 uses (0 when one block does it all)."""
        tiles = -(-n // prepared.build.geometry.tile)
        if tiles <= SINGLE_PASS_TILES:
            return 0
        resident = prepared.module.occupancy("gpulab_reduce", prepared.build.geometry.block_threads)
        blocks = min(tiles, resident * self.device.multiprocessors)
        return blocks if blocks >= 2 else 0  # a grid of one block means pass 2

    def temp_storage_bytes(self, n: int) -> int:
        """Bytes for the per-block partial results."""
        prepared = self.prepared(index_bits_for(n, []), self.uniform_values())
        return self.partial_count(n, prepared) * self.element.itemsize

    def __call__(self, xs, initial, *, out=None, temp_storage=None, stream=None):
        """Fold ``xs`` into ``out`` (a 0-d device array, allocated if ``None``)."""
        import cupy

        array = require(device_array(xs, name="input"), self.element.dtype, "input")
        n = array.size
        initial_value = np.asarray(initial, dtype=self.element.dtype)
        uniform_values = self.uniform_values()
        prepared = self.prepared(index_bits_for(n, [array]), uniform_values)
        if out is None:
            out = cupy.empty((), dtype=self.element.dtype)
        out_pointer = require(device_array(out, name="output"), self.element.dtype, "output", 1).pointer
        handle = stream_handle(stream)
        blocks = self.partial_count(n, prepared)
        function, block_threads = prepared.kernels["gpulab_reduce"], prepared.build.geometry.block_threads
        pack = prepared.pack("gpulab_reduce")
        pack["initial"] = initial_value
        prepared.write_uniforms(pack, uniform_values)
        if blocks:
            if temp_storage is None:
                temp_storage = cupy.empty(blocks * self.element.itemsize, dtype=np.uint8)
            partials = device_array(temp_storage, name="temp_storage").pointer
            pack["in"], pack["n"], pack["out"] = params.array_value(array), n, partials
            launch(function, blocks, block_threads, handle, pack)
            pack["in"], pack["n"] = (partials, blocks, 1, blocks), blocks
        else:
            pack["in"], pack["n"] = params.array_value(array), n
        pack["out"] = out_pointer
        launch(function, 1, block_threads, handle, pack)
        return out

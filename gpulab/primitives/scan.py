"""Scan on a device: inclusive or exclusive prefix folds, one pass with decoupled look-back."""

from __future__ import annotations

import numpy as np

from ..errors import KernelTypeError
from ..runtime.arrays import device_array
from ..runtime.module import launch
from ..runtime.streams import stream_handle
from . import params
from .lookback import LookBackPlan
from .plan import index_bits_for, require


class ScanPlan(LookBackPlan):
    """Reusable device scan (see :func:`gpulab.make_scan`)."""

    def __init__(self, kernel, types, device, *, exclusive=False, **options):
        super().__init__("scan", kernel, types, device, exclusive=exclusive, **options)
        self.element = self.types[0]
        self.exclusive = exclusive

    def status_value_size(self, prepared) -> int:
        """A tile's aggregate is an element."""
        return self.element.itemsize

    def __call__(self, xs, initial=None, *, out=None, temp_storage=None, stream=None):
        """Scan ``xs`` into ``out`` (allocated like ``xs`` if ``None``)."""
        import cupy

        if self.exclusive and initial is None:
            raise KernelTypeError("an exclusive scan needs initial= (item 0 of the result is the initial value)")
        array = require(device_array(xs, name="input"), self.element.dtype, "input")
        n = array.size
        if out is None:
            out = cupy.empty(n, dtype=self.element.dtype)
        destination = require(device_array(out, name="output"), self.element.dtype, "output", n)
        uniform_values = self.uniform_values()
        prepared = self.prepared(index_bits_for(n, [array, destination]), uniform_values)
        if n == 0:
            return out
        handle = stream_handle(stream)
        tiles, status, epoch = self.acquire_status(n, prepared, temp_storage, handle)
        pack = prepared.pack("gpulab_scan")
        pack["in"], pack["n"], pack["out"] = params.array_value(array), n, params.array_value(destination)
        pack["status"] = status
        pack["epoch"] = epoch
        pack["initial"] = np.asarray(initial if initial is not None else np.zeros((), self.element.dtype),
                                     dtype=self.element.dtype)
        pack["has_initial"] = initial is not None
        prepared.write_uniforms(pack, uniform_values)
        launch(prepared.kernels["gpulab_scan"], tiles, prepared.build.geometry.block_threads, handle, pack)
        return out

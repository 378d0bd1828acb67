"""Histogram on a device: exact counts per bin, privatised in shared memory (histogram.cu)."""

from __future__ import annotations

import threading
from typing import NamedTuple

import numpy as np

from ..compiler.codegen import SHARED_BIN_WORDS
from ..errors import ArgumentError, LengthMismatchError
from ..host.histogram import COUNT_DTYPE, bin_count, even_bins, require_keys
from ..options import BuildOptions
from ..runtime.arrays import device_array, empty
from ..runtime.streams import stream_handle
from . import params
from .plan import DevicePlan, index_bits_of, on_plan_device

MAX_COPIES = 32  # copies of the shared counts: one per lane, every bank different (histogram.cu)


class BinsValue(NamedTuple):
    """``struct Bins`` (histogram.cu): how a key becomes a bin."""

    count: int
    copies: int
    privatised: bool
    integral: bool
    closed: bool
    low: int
    last: int
    shift: int
    first: float
    final: float
    scale: float
    edges: int


def shared_copies(bins: int) -> tuple[bool, int]:
    """``(privatised, copies)``: whether ``bins`` counts fit in shared memory, and the most copies of them
    that do (a power of two, at most 32: one per lane)."""
    if bins > SHARED_BIN_WORDS:
        return False, 1
    copies = 1
    while copies < MAX_COPIES and bins * copies * 2 <= SHARED_BIN_WORDS:
        copies *= 2
    return True, copies


def integral_bins(first, last, bins: int, edges: np.ndarray, key_dtype: np.dtype) -> tuple | None:
    """``(closed, low, last, shift)`` by which integer keys of ``key_dtype`` take bin ``(k - low) >> shift`` for
    ``0 <= k - low <= last`` exactly as NumPy's edges bin them, or ``None`` where they cannot. ``closed``:
    some key can be the range's high end (then it goes to the last bin).

    That is so when the range's ends are integers, each bin is ``2**shift`` wide (the edges are then exact),
    and the subtraction cannot wrap a key outside the range into it: keys of up to 4 bytes subtract in 32
    bits, wider ones in 64 bits (and keep below 2**53, where NumPy's float64 edges are exact).
    """
    if key_dtype.kind not in "iu" or not (float(first).is_integer() and float(last).is_integer()):
        return None
    low, high = int(first), int(last)
    width, remainder = divmod(high - low, bins)
    if remainder or width & (width - 1) or not np.array_equal(edges, low + width * np.arange(bins + 1)):
        return None
    info = np.iinfo(key_dtype)
    bits = 32 if key_dtype.itemsize <= 4 else 64
    span = high - low
    wraps = info.max - low >= 2**bits or 2**bits + info.min - low <= span
    if wraps or (bits == 64 and max(abs(low), abs(high)) > 2**53):
        return None
    return info.max >= high, low, span, width.bit_length() - 1


class HistogramPlan(DevicePlan):
    """Reusable device histogram (see :func:`gpulab.make_histogram`): ``plan(xs)`` gives the counts."""

    def __init__(self, kernel, types, device, options: BuildOptions = BuildOptions(), mapped=(), *, bins,
                 range=None):  # noqa: A002 - NumPy's name
        self.bins = bin_count(bins)
        self.range = range
        super().__init__("histogram", kernel, types, device, options, mapped)
        self._values: dict[str, tuple[BinsValue, object]] = {}  # build key -> (struct Bins, the edges it reads)
        self._values_lock = threading.Lock()

    def argument_order(self, build):
        return {"gpulab_histogram": ("in", "n", "counts", "bins", "u")}

    def _prepare(self, index_bits: int):
        prepared = super()._prepare(index_bits)
        params.check_fields(prepared.build.parameters["gpulab_histogram"], {"bins": BinsValue._fields})
        return prepared

    def bins_value(self, prepared) -> BinsValue:
        """``struct Bins`` for the keys ``prepared``'s build computes (made once per build).

        Raises
        ------
        KernelTypeError
            When the keys cannot be binned this way (floats without a range, bools over one).
        ArgumentError
            For a range NumPy would refuse.
        """
        build = prepared.build
        found = self._values.get(build.key)
        if found is None:
            with self._values_lock:
                found = self._values.get(build.key) or self._make_value(build)
                self._values[build.key] = found
        return found[0]

    def _make_value(self, build) -> tuple[BinsValue, object]:
        key_dtype = build.result.dtype
        require_keys(self.kernel, key_dtype, self.range)
        privatised, copies = shared_copies(self.bins)
        if self.range is None:  # a key is its bin: kept below bins (a negative one wraps above)
            return BinsValue(self.bins, copies, privatised, True, False, 0, self.bins - 1, 0, 0.0, 0.0, 0.0,
                             0), None
        import cupy

        found = even_bins(self.range, self.bins, key_dtype)
        edges = found.edges.astype(np.float64)
        integral = integral_bins(found.first, found.last, self.bins, edges, key_dtype)
        closed, low, last, shift = integral or (True, 0, 0, 0)
        with cupy.cuda.Device(self.device.ordinal):
            device_edges = cupy.asarray(edges)
        scale = self.bins / (float(edges[-1]) - float(edges[0]))
        value = BinsValue(self.bins, copies, privatised, integral is not None, closed, low, last, shift,
                          found.low, found.high, scale, device_edges.data.ptr)
        return value, device_edges

    def blocks(self, n: int, prepared) -> int:
        """Blocks of the launch: one per tile, at most as many as fit on the GPU at once (each then walks
        tiles a grid apart and adds its counts to the output once)."""
        tiles = -(-n // prepared.build.geometry.tile)
        resident = prepared.module.occupancy("gpulab_histogram", prepared.build.geometry.block_threads)
        return max(1, min(tiles, resident * (self.device.multiprocessors or 1)))

    @on_plan_device
    def __call__(self, xs, *, out=None, stream=None):
        """Count the keys of ``xs`` into ``out`` (``bins`` int64 counts, contiguous; allocated if ``None``).

        Raises
        ------
        LengthMismatchError
            When ``out`` holds another number of items than ``bins``.
        """
        uniform_values = self.uniform_values()
        fields, n, extent = self.input_fields(xs, 0, uniform_values)
        if out is None:
            out = empty(self.bins, COUNT_DTYPE)
        counts = device_array(out, name="output")
        if counts.dtype != COUNT_DTYPE or not counts.layout.contiguous:
            raise ArgumentError(f"the output holds the counts: a contiguous int64 array of {self.bins} items, not "
                                f"{counts.dtype} of shape {counts.shape}")
        if counts.size != self.bins:
            raise LengthMismatchError(f"the output has {counts.size} items; this histogram has {self.bins} bins")
        self.check_device(out, "output")
        prepared = self.prepared(index_bits_of(extent), uniform_values)
        value = self.bins_value(prepared)
        handle = stream_handle(stream)
        import cupy

        cupy.cuda.runtime.memsetAsync(counts.pointer, 0, self.bins * COUNT_DTYPE.itemsize, handle)
        if n > 0:
            prepared.launcher("gpulab_histogram")(self.blocks(n, prepared), handle, *fields, n, counts.pointer, *value,
                                                  *prepared.uniform_fields(uniform_values))
            prepared.check_reads(uniform_values, handle)
        return out

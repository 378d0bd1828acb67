"""Sort on a device: a stable LSD radix sort, a launch per 8-bit digit (templates/sort.cu).

``sort``, ``sort_by_key`` and ``argsort`` are one primitive: items sorted by a
key function (the item itself by default), with a value of ``payload`` bytes
moved beside each item (sort_by_key's values, argsort's indices).
"""

from __future__ import annotations

from dataclasses import replace
from typing import NamedTuple

import numpy as np

from ..compiler.codegen import RADIX_BITS, SORT_PORTION_TILES
from ..errors import ArgumentError, KernelTypeError, LengthMismatchError
from ..host.sort import INDEX_DTYPE, key_function, run_argsort, run_sort, run_sort_by_key
from ..iota import Iota
from ..options import BuildOptions, build_options, check_flags
from ..registry import PRIMITIVES
from ..runtime.arrays import contiguous_fields, device_array, empty
from ..runtime.scratch import StreamScratch
from ..runtime.streams import stream_handle
from . import params
from .dispatch import (check_host_inputs, example_dtype, gpu_device, host_copies, make_plan, operator_types,
                       plan_for, resolve_device)
from .dispatch import verify as check_with_host
from .lookback import StatusStorage
from .plan import DevicePlan, index_bits_of, on_plan_device

__all__ = ["SortPlan", "ArgsortPlan", "sort", "sort_by_key", "argsort", "make_sort", "make_sort_by_key",
           "make_argsort"]

RADIX = 1 << RADIX_BITS
STATUS_WORD = 8  # one look-back word per tile and digit (sort.cu)
ALIGN = 256  # where each part of the temporary storage starts


class SortPassValue(NamedTuple):
    """``struct SortPass`` (sort.cu)."""

    first: int
    count: int
    shift: int
    descending: bool


VALUES_FIELDS = ("data", *params.ARRAY_FIELDS[1:], "start")
"""``struct Values`` (sort.cu): a pointer, a layout, and where indices start when the pointer is null."""


def _aligned(size: int) -> int:
    return -(-size // ALIGN) * ALIGN


class Storage(NamedTuple):
    """Where each part of a sort's temporary storage lies, in bytes from its start (the look-back's words
    first: they stay at one address, as their epochs need)."""

    status: int
    counts: int
    bins: int
    items: int
    values: int
    total: int


class SortPlan(DevicePlan):
    """Reusable device sort (see :func:`gpulab.make_sort`, :func:`gpulab.make_sort_by_key`)."""

    replays = False  # every launch of a pass passes a new epoch

    def __init__(self, kernel, types, device, options: BuildOptions = BuildOptions(), mapped=(), *,
                 descending: bool = False):
        self.descending = descending
        self.payload = options.payload
        super().__init__("sort", kernel, types, device, options, mapped)
        if set(self.kinds) != {"array"}:
            raise KernelTypeError("sort takes arrays: give a function of the items as key= (sort(xs, key=fn)), or "
                                  "make the array first (gpulab.map)")
        self.item = self.types[0]
        self._status = StatusStorage()
        self._scratch = StreamScratch()
        self._finished = StreamScratch()  # the histogram's block counter: each launch leaves it 0

    def argument_order(self, build):
        return {"gpulab_sort_histogram": ("in", "n", "counts", "bins", "portions", "finished", "descending", "u"),
                "gpulab_sort_pass": ("in", "values", "out", "values_out", "pass", "bins_in", "bins_out", "status",
                                     "epoch", "u")}

    def _prepare(self, index_bits: int):
        prepared = super()._prepare(index_bits)
        params.check_fields(prepared.build.parameters["gpulab_sort_pass"],
                            {"pass": SortPassValue._fields, "values": VALUES_FIELDS})
        return prepared

    @staticmethod
    def passes(prepared) -> int:
        """How many digits the keys have: one launch each."""
        return -(-8 * prepared.build.result.itemsize // RADIX_BITS)

    def storage(self, n: int, prepared) -> Storage:
        """Where the parts of the temporary storage of a sort of ``n`` items lie."""
        tiles = -(-n // prepared.build.geometry.scan_tile)
        portions = max(1, -(-tiles // SORT_PORTION_TILES))
        passes, index = self.passes(prepared), prepared.build.options.index_bits // 8
        status = _aligned(min(tiles, SORT_PORTION_TILES) * RADIX * STATUS_WORD)
        counts = status + _aligned(passes * RADIX * 8)
        bins = counts + _aligned(passes * portions * RADIX * index)
        alternate = passes > 1  # a second place to move items to between passes (the output is the first)
        items = bins + _aligned(n * self.item.itemsize if alternate else 0)
        values = items + _aligned(n * self.payload if alternate else 0)
        return Storage(0, status, counts, bins, items, values)

    def temp_storage_bytes(self, n: int) -> int:
        """Bytes of temporary storage for ``n`` items (zero-fill them before their first use)."""
        return self.storage(n, self.prepared(index_bits_of(n), self.uniform_values())).total

    @on_plan_device
    def __call__(self, xs, values=None, *, out=None, values_out=None, temp_storage=None, stream=None):
        """Sort ``xs`` (and ``values``, one per item, where the plan moves values) into ``out``
        (and ``values_out``): C-contiguous arrays of the inputs' types, allocated when ``None``.

        Returns
        -------
        out, or (out, values_out)

        Raises
        ------
        ArgumentError
            For an output that is strided, of another type, or the input itself.
        LengthMismatchError
            For outputs or values of another length.
        """
        uniform_values = self.uniform_values()
        fields, n, extent = self.input_fields(xs, 0, uniform_values)
        out = self._output(out, n, self.item.dtype, "output")
        value_fields, moved_dtype = self._values(values, n)
        if self.payload:
            values_out = self._output(values_out, n, moved_dtype, "values output")
        if device_array(out).pointer == fields[0] and n:
            raise ArgumentError("sort writes its output as it reads its input: give out= another array "
                                "(sorting in place is not supported)")
        prepared = self.prepared(index_bits_of(max(extent, n)), uniform_values)
        if n > 0:
            handle = stream_handle(stream)
            self._launch(prepared, handle, n, fields, value_fields, device_array(out).pointer,
                         device_array(values_out).pointer if self.payload else 0, temp_storage,
                         prepared.uniform_fields(uniform_values))
            prepared.check_reads(uniform_values, handle)
        return (out, values_out) if self.payload else out

    def _output(self, out, n: int, dtype, label: str):
        if out is None:
            return empty(n, dtype)
        found = device_array(out, name=label)
        if found.dtype != dtype or not found.layout.contiguous:
            raise ArgumentError(f"the {label} must be a C-contiguous array of {dtype}; got {found.dtype} of shape "
                                f"{found.shape}")
        if found.size != n:
            raise LengthMismatchError(f"the {label} has {found.size} items; this call needs {n}")
        self.check_device(out, label)
        return out

    def _values(self, values, n: int) -> tuple[tuple, np.dtype]:
        """``struct Values`` of a call's values, and the values' dtype (an iota's are its indices, int64)."""
        if not self.payload:
            if values is not None:
                raise ArgumentError("this sort moves no values: make it with make_sort_by_key to move them")
            return (0, *contiguous_fields(0, 0)[1:], 0), None
        if values is None:
            raise ArgumentError("this sort moves a value with each item: pass values")
        if isinstance(values, Iota):
            if self.payload != INDEX_DTYPE.itemsize:
                raise ArgumentError(f"indices (an iota) are {INDEX_DTYPE.itemsize}-byte values; this sort moves "
                                    f"{self.payload}-byte ones")
            if values.size != n:
                raise LengthMismatchError(f"{values.size} values for {n} items")
            return (0, *contiguous_fields(0, n)[1:], values.start), INDEX_DTYPE
        found = device_array(values, name="values")
        if found.dtype.itemsize != self.payload:
            raise ArgumentError(f"this sort moves {self.payload}-byte values; the values are {found.dtype}")
        if found.size != n:
            raise LengthMismatchError(f"{found.size} values for {n} items: give one per item")
        self.check_device(values, "values")
        return (found.pointer, *found.layout, 0), found.dtype

    def _launch(self, prepared, stream: int, n: int, fields, value_fields, out: int, values_out: int, temp_storage,
                uniform_fields) -> None:
        """The histogram, then a launch per digit and portion, moving items (and values) between ``out`` and
        an alternate buffer so that the last pass writes ``out``."""
        import cupy

        build = prepared.build
        tile, passes = build.geometry.scan_tile, self.passes(prepared)
        parts = self.storage(n, prepared)
        rest = parts.total - parts.counts
        if temp_storage is None:
            base = self._scratch.get(rest, stream)[0] - parts.counts  # the look-back's words are kept apart
        else:
            found = device_array(temp_storage, name="temp_storage")
            if found.size * found.dtype.itemsize < parts.total:
                raise ArgumentError(f"temp_storage has {found.size * found.dtype.itemsize} bytes; this sort needs "
                                    f"{parts.total} (plan.temp_storage_bytes(n))")
            base = found.pointer
        counts, bins, items_alt, values_alt = (base + parts.counts, base + parts.bins, base + parts.items,
                                               base + parts.values)
        index = build.options.index_bits // 8
        tiles = -(-n // tile)
        portions = max(1, -(-tiles // SORT_PORTION_TILES))
        cupy.cuda.runtime.memsetAsync(counts, 0, passes * RADIX * 8, stream)
        finished, _ = self._finished.get(4, stream)
        resident = prepared.module.occupancy("gpulab_sort_histogram", build.geometry.block_threads)
        grid = max(1, min(-(-n // build.geometry.block_threads), resident * (self.device.multiprocessors or 1)))
        prepared.launcher("gpulab_sort_histogram")(grid, stream, *fields, n, counts, bins, portions, finished,
                                                   self.descending, *uniform_fields)
        run = prepared.launcher("gpulab_sort_pass")
        source, source_values = fields, value_fields
        for p in range(passes):
            last = (passes - 1 - p) % 2 == 0  # this pass writes the output (the last one always does)
            target, target_values = (out, values_out) if last else (items_alt, values_alt if self.payload else 0)
            for q in range(portions):
                first = q * SORT_PORTION_TILES * tile
                count = min(n - first, SORT_PORTION_TILES * tile)
                status, _, epoch = self._status.acquire(temp_storage, parts.counts, stream)
                bins_in = bins + (p * portions + q) * RADIX * index
                bins_out = bins_in + RADIX * index if q + 1 < portions else 0
                run(-(-count // tile), stream, *source, *source_values, target, target_values,
                    *SortPassValue(first, count, p * RADIX_BITS, self.descending), bins_in, bins_out, status, epoch,
                    *uniform_fields)
            source = contiguous_fields(target, n)
            source_values = (target_values, *contiguous_fields(0, n)[1:], 0)


class ArgsortPlan(SortPlan):
    """Reusable device argsort (see :func:`gpulab.make_argsort`): ``plan(xs)`` gives the int64 indices."""

    def __init__(self, kernel, types, device, options: BuildOptions = BuildOptions(), mapped=(), *,
                 descending: bool = False):
        super().__init__(kernel, types, device, replace(options, payload=INDEX_DTYPE.itemsize), mapped,
                         descending=descending)

    def __call__(self, xs, *, out=None, temp_storage=None, stream=None):
        """The indices that sort ``xs``, into ``out`` (int64, allocated when ``None``)."""
        n = device_array(xs, name="input").size
        return super().__call__(xs, Iota(n), values_out=out, temp_storage=temp_storage, stream=stream)[1]


def _key(key, xs):
    """The key function of a device sort of ``xs`` (items, or a dtype): ``key``, else the item itself (records
    need one)."""
    return key_function(key, np.empty(0, example_dtype(xs)))


def sort(xs, *, key=None, descending: bool = False, out=None, device=None, stream=None, verify: bool = False,
         options: BuildOptions | None = None, **given):
    """``xs``'s items ordered by ``key(x)`` (the item itself by default), stably, in NumPy's order.

    Equal keys keep the items' order; for floats -0.0 equals 0.0 and NaN comes
    last (``descending``: the largest key first, equal keys still in order,
    NaN still last). ``key`` returns a bool, an integer or a float; records
    need one (``key=lambda r: r.age``). Inputs are arrays (strided and 2-D
    ones too, taken in C order); the result is 1-D. Build options as for
    :func:`gpulab.map`.
    """
    options = build_options(PRIMITIVES["sort"], options, **given)
    check_flags(descending=descending, verify=verify)
    target = resolve_device(device)
    if not target.is_gpu:
        check_host_inputs([xs])
        return run_sort(key_function(key, xs), xs, descending=descending)
    plan = plan_for(PRIMITIVES["sort"], _key(key, xs), [xs], target, options, descending=descending)
    result = plan(xs, out=out, stream=stream)
    if verify:
        check_with_host(result, run_sort(key_function(key, xs), *host_copies([xs]), descending=descending))
    return result


def sort_by_key(keys, values, *, descending: bool = False, out=None, values_out=None, device=None, stream=None,
                verify: bool = False, options: BuildOptions | None = None, **given):
    """``(sorted keys, values in the same order)``: ``values[i]`` moves with ``keys[i]``; a stable sort of the
    keys as :func:`sort`'s. ``values`` is any array of as many items (its items are moved, never read), or
    ``gpulab.iota(n)`` (then the values are the keys' indices: :func:`argsort`)."""
    options = build_options(PRIMITIVES["sort"], options, **given)
    check_flags(descending=descending, verify=verify)
    target = resolve_device(device)
    if not target.is_gpu:
        check_host_inputs([keys, values])
        return run_sort_by_key(keys, values, descending=descending)
    size = INDEX_DTYPE.itemsize if isinstance(values, Iota) else device_array(values, name="values").dtype.itemsize
    plan = plan_for(PRIMITIVES["sort"], _key(None, keys), [keys], target, replace(options, payload=size),
                    descending=descending)
    result = plan(keys, values, out=out, values_out=values_out, stream=stream)
    if verify:
        host_keys, host_values = run_sort_by_key(*host_copies([keys, values]), descending=descending)
        check_with_host(result[0], host_keys)
        check_with_host(result[1], host_values)
    return result


def argsort(xs, *, key=None, descending: bool = False, out=None, device=None, stream=None, verify: bool = False,
            options: BuildOptions | None = None, **given):
    """The int64 indices that sort ``xs`` (:func:`sort`'s order): ``xs[argsort(xs)]`` is ``sort(xs)``."""
    options = build_options(PRIMITIVES["sort"], options, **given)
    check_flags(descending=descending, verify=verify)
    target = resolve_device(device)
    if not target.is_gpu:
        check_host_inputs([xs])
        return run_argsort(xs, key=key, descending=descending)
    plan = plan_for(PRIMITIVES["sort"], _key(key, xs), [xs], target, replace(options, payload=INDEX_DTYPE.itemsize),
                    descending=descending)
    result = plan(xs, Iota(device_array(xs).size), values_out=out, stream=stream)[1]
    if verify:
        check_with_host(result, run_argsort(*host_copies([xs]), key=key, descending=descending))
    return result


def make_sort(example, *, key=None, descending: bool = False, device=None, options: BuildOptions | None = None,
              **given) -> SortPlan:
    """A reusable sort for items like ``example`` (an array or a dtype); ``plan(xs, out=None)``."""
    options = build_options(PRIMITIVES["sort"], options, **given)
    check_flags(descending=descending)
    return make_plan(PRIMITIVES["sort"], _key(key, example), [example], gpu_device(device), options,
                     descending=descending)


def make_sort_by_key(keys_example, values_example, *, descending: bool = False, device=None,
                     options: BuildOptions | None = None, **given) -> SortPlan:
    """A reusable sort_by_key for keys and values like the examples (arrays or dtypes); a call
    ``plan(keys, values)`` returns ``(keys, values)`` sorted."""
    options = build_options(PRIMITIVES["sort"], options, **given)
    check_flags(descending=descending)
    size = example_dtype(values_example).itemsize
    return make_plan(PRIMITIVES["sort"], _key(None, keys_example), [keys_example], gpu_device(device),
                     replace(options, payload=size), descending=descending)


def make_argsort(example, *, key=None, descending: bool = False, device=None, options: BuildOptions | None = None,
                 **given) -> ArgsortPlan:
    """A reusable argsort for items like ``example``; ``plan(xs)`` gives the int64 indices."""
    options = build_options(PRIMITIVES["sort"], options, **given)
    check_flags(descending=descending)
    kernel = _key(key, example)
    return ArgsortPlan(kernel, operator_types(PRIMITIVES["sort"], kernel, [example]), gpu_device(device), options,
                       descending=descending)

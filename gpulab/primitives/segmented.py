"""Segmented reduce and reduce_by_key on a device: folds that start again at each segment or run of keys.

Both are one pass over tiles with a decoupled look-back, as the scan is, over
pieces of segments (``templates/segments.cu``). ``unique_by_key`` is
``reduce_by_key`` of :func:`~gpulab.host.segments.keep_first`.
"""

from __future__ import annotations

import numpy as np

from ..conversion import scalar
from ..errors import LengthMismatchError, OffsetsError
from ..options import BuildOptions, build_options, check_flags
from ..host.segments import (OFFSET_TYPES, check_offset_array, keep_first, offsets_problem, run_reduce_by_key,
                             run_segmented_reduce)
from ..registry import PRIMITIVES
from ..runtime.arrays import (INT32_MAX, array_fields, contiguous_fields, device_array, empty, plain_cupy_array,
                              plain_output)
from ..runtime.module import value_fields
from ..runtime.scratch import StreamScratch
from ..runtime.streams import stream_handle
from ..types import ElementType, element_type
from .dispatch import (check_associative, check_host_inputs, gpu_device, host_copies, make_plan, plan_for,
                       resolve_device)
from .dispatch import verify as hold_to_host
from .filter import KEPT_DTYPE
from .lookback import LookBackPlan
from .plan import index_bits_of, on_plan_device, plain_input

__all__ = ["SegmentedReducePlan", "ReduceByKeyPlan", "segmented_reduce", "make_segmented_reduce", "reduce_by_key",
           "make_reduce_by_key", "unique_by_key", "make_unique_by_key"]

BAD_BYTES = 8  # the word where a launch records the first bad offset (segmented_reduce.cu)


def _aligned(size: int, alignment: int) -> int:
    return -(-size // alignment) * alignment


def piece_bytes(element: ElementType) -> int:
    """``sizeof(Piece<value_t>)``: the value, then a 4-byte word of flags, padded to the larger alignment
    (segments.cu)."""
    return _aligned(_aligned(element.itemsize, 4) + 4, max(element.alignment, 4))


def runs_bytes(element: ElementType, index_bits: int) -> int:
    """``sizeof(Runs<value_t>)``: an ``index_t``, then a ``Piece<value_t>`` (reduce_by_key.cu)."""
    index, piece_alignment = index_bits // 8, max(element.alignment, 4)
    return _aligned(_aligned(index, piece_alignment) + piece_bytes(element), max(index, piece_alignment))


class SegmentedReducePlan(LookBackPlan):
    """Reusable device segmented reduce (see :func:`gpulab.make_segmented_reduce`)."""

    def __init__(self, kernel, types, device, options: BuildOptions = BuildOptions(), mapped=()):
        super().__init__("segmented_reduce", kernel, types, device, options, mapped)
        self.element = self.types[0]
        self._initial_fields = value_fields(self.element.dtype)
        self._piece_bytes = piece_bytes(self.element)
        self._bad = StreamScratch()  # zeroed; a launch that finds a bad offset leaves it set, the check clears it

    def status_value_size(self, prepared) -> int:
        """A tile's status value is a piece of segments."""
        return self._piece_bytes

    def tiles(self, n: int, prepared) -> int:
        """Blocks a launch takes: one per tile of the input, at least one (it also writes empty segments)."""
        return max(1, super().tiles(n, prepared))

    def argument_order(self, build):
        return {"gpulab_segmented_reduce": ("in", "n", "offsets", "segments", "out", "status", "epoch", "initial",
                                            "bad", "u")}

    @on_plan_device
    def __call__(self, xs, offsets, initial, *, out=None, temp_storage=None, stream=None, check_offsets: bool = True):
        """Fold each segment ``xs[offsets[k]:offsets[k + 1]]`` from ``initial`` into ``out[k]``.

        Parameters
        ----------
        xs : device array or mapped input
            The items.
        offsets : device array of int32 or int64
            S + 1 positions that never decrease, within ``0 .. len(xs)``.
        initial : scalar
            What each segment's fold starts from, and what an empty one gives.
        out : device array, optional
            S items of the element type (allocated when ``None``).
        check_offsets : bool
            Wait for the launch and raise :class:`~gpulab.errors.OffsetsError` if the offsets decrease or reach
            outside ``xs`` (the kernel checks them as it reads them); ``False`` keeps the call asynchronous, and
            bad offsets then give wrong results (never a read or write outside the arrays).
        """
        dtype = self.element.dtype
        uniform_values = self.uniform_values()
        fields, n, extent = self.input_fields(xs, 0, uniform_values)
        self.check_device(offsets, "offsets")
        view = device_array(offsets, name="offsets")
        check_offset_array(view.dtype, view.shape)
        offset_fields, segments = (view.pointer, view.layout.inner_stride, int(view.dtype.itemsize == 8)), view.size - 1
        initial_fields = self._initial_fields(scalar(initial, self.element))
        if out is None:
            out = empty(segments, dtype)
        out_fields, out_size, out_extent = array_fields(out, dtype, "output")
        if out_size != segments:
            raise LengthMismatchError(f"the output has {out_size} items; this call needs {segments} (one per "
                                      "segment: len(offsets) - 1)")
        prepared = self.prepared(index_bits_of(max(extent, out_extent)), uniform_values)
        if segments == 0:
            return out
        handle = stream_handle(stream)
        self._launch(prepared, handle, n, fields, offset_fields, view.dtype, segments, out_fields, initial_fields,
                     temp_storage, prepared.uniform_fields(uniform_values), check_offsets,
                     lambda: prepared.check_reads(uniform_values, handle))
        return out

    def plain_call(self, prepared):
        """See :meth:`DevicePlan.plain_call`: ``xs`` and ``offsets`` (int32 or int64, at least one segment)
        C-contiguous CuPy arrays, ``out`` one too or ``None``, ``initial`` a scalar of the element's own type, no
        ``temp_storage``."""
        import cupy

        current_stream = cupy.cuda.get_current_stream
        dtype, ordinal, initial_fields = self.element.dtype, self.device.ordinal, self._initial_fields
        initial_type = dtype.type if dtype.names is None else None

        def call(xs, offsets, initial, *, out=None, temp_storage=None, stream=None, check_offsets=True):
            if type(initial) is not initial_type or stream is not None or temp_storage is not None:
                return None
            found, bounds = plain_input(xs, dtype, ordinal), _plain_offsets(offsets, ordinal)
            if found is None or bounds is None:
                return None
            (pointer, n), (bounds_pointer, bounds_dtype, segments) = found, bounds
            output = plain_output(out, segments, dtype, ordinal)
            if output is None:
                return None
            self._launch(prepared, current_stream().ptr, n, contiguous_fields(pointer, n),
                         (bounds_pointer, 1, int(bounds_dtype.itemsize == 8)), bounds_dtype, segments,
                         contiguous_fields(output[1], segments), initial_fields(initial), None, (), check_offsets)
            return output[0]

        return call

    def _launch(self, prepared, stream: int, n: int, fields, offset_fields, offset_dtype, segments: int, out_fields,
                initial_fields, temp_storage, uniform_fields, check_offsets: bool, check_reads=None) -> None:
        """Launch the segmented reduce of ``n`` items into ``segments`` results on ``stream``; then, when asked,
        wait and raise for bad offsets (after bad reads, which ``check_reads`` raises for)."""
        bad = self._bad.get(BAD_BYTES, stream)[0] if check_offsets else 0
        tiles, status, epoch = self.acquire_status(n, prepared, temp_storage, stream)
        prepared.launcher("gpulab_segmented_reduce")(tiles, stream, *fields, n, *offset_fields, segments, *out_fields,
                                                     *status, epoch, *initial_fields, bad, *uniform_fields)
        if check_reads is not None:
            check_reads()
        if check_offsets:
            _check_offsets(bad, offset_fields, offset_dtype, segments, n, stream)


def _plain_offsets(offsets, ordinal: int):
    """``(pointer, dtype, S)`` of offsets a plain call takes (a C-contiguous CuPy array of int32 or int64 on the
    device, of at least two offsets), else ``None``."""
    dtype = getattr(offsets, "dtype", None)
    if dtype not in OFFSET_TYPES:
        return None
    found = plain_cupy_array(offsets, dtype, ordinal)
    if found is None or offsets.ndim != 1 or not 2 <= found[1] <= INT32_MAX:  # the 32-bit build's
        return None
    return found[0], dtype, found[1] - 1


def _check_offsets(bad: int, offset_fields, dtype: np.dtype, segments: int, n: int, stream: int) -> None:
    """Wait for ``stream`` and raise for the first bad offset the launch recorded at ``bad``, clearing it."""
    import cupy

    runtime = cupy.cuda.runtime
    word = np.zeros(1, np.uint64)
    runtime.memcpyAsync(word.ctypes.data, bad, BAD_BYTES, runtime.memcpyDeviceToHost, stream)
    runtime.streamSynchronize(stream)
    if not word[0]:
        return
    runtime.memsetAsync(bad, 0, BAD_BYTES, stream)
    k, (pointer, stride, _) = int(~word[0]), offset_fields
    pair = np.zeros(2, dtype)
    for j in (0, 1):
        runtime.memcpyAsync(pair[j:].ctypes.data, pointer + (k + j) * stride * dtype.itemsize, dtype.itemsize,
                            runtime.memcpyDeviceToHost, stream)
    runtime.streamSynchronize(stream)
    raise OffsetsError(offsets_problem(k, int(pair[0]), int(pair[1]), segments, n))


class ReduceByKeyPlan(LookBackPlan):
    """Reusable device reduce_by_key (see :func:`gpulab.make_reduce_by_key`)."""

    def __init__(self, kernel, types, device, options: BuildOptions = BuildOptions(), mapped=(), *, keys):
        super().__init__("reduce_by_key", kernel, types, device, options, mapped, keys)
        self.element = self.types[0]
        self.key = element_type(keys)
        self._runs_bytes = {bits: runs_bytes(self.element, bits) for bits in (32, 64)}

    def status_value_size(self, prepared) -> int:
        """A tile's status value is its count of run starts and its piece."""
        return self._runs_bytes[prepared.build.options.index_bits]

    def argument_order(self, build):
        return {"gpulab_reduce_by_key": ("keys", "in", "n", "out_keys", "out", "runs_total", "status", "epoch",
                                         "u")}

    def finish(self, output, *, stream=None):
        """The runs' keys and folds of ``(out_keys, out, count)`` (this waits for the count)."""
        import cupy

        out_keys, out, count = output
        if stream is not None and not hasattr(stream, "ptr"):
            stream = cupy.cuda.ExternalStream(stream_handle(stream))
        runs = int(count.get(stream=stream))
        return out_keys[:runs], out[:runs]

    @on_plan_device
    def __call__(self, keys, values, *, out_keys=None, out=None, count=None, temp_storage=None, stream=None):
        """Write each run's key to ``out_keys`` and the fold of its values to ``out``, and the number of runs
        to ``count``.

        Returns
        -------
        (out_keys, out, count)
            ``out_keys`` and ``out`` have ``len(keys)`` items, of which the first ``int(count)`` are the runs';
            ``count`` is a 0-d int64 device array (reading it waits for the stream). :meth:`finish` cuts them.
        """
        dtype, key_dtype = self.element.dtype, self.key.dtype
        uniform_values = self.uniform_values()
        key_fields, key_count, key_extent = self.input_fields(keys, 0, uniform_values, dtype=key_dtype)
        fields, n, extent = self.input_fields(values, 1, uniform_values)
        if key_count != n:
            raise LengthMismatchError(f"reduce_by_key takes as many keys as values; got {key_count} keys and "
                                      f"{n} values")
        out_keys = empty(n, key_dtype) if out_keys is None else out_keys
        out = empty(n, dtype) if out is None else out
        count = empty((), KEPT_DTYPE) if count is None else count
        key_out_fields, key_out_size, key_out_extent = array_fields(out_keys, key_dtype, "output of keys")
        out_fields, out_size, out_extent = array_fields(out, dtype, "output")
        for name, size in (("output of keys", key_out_size), ("output", out_size)):
            if size != n:
                raise LengthMismatchError(f"the {name} has {size} items; this call needs {n}")
        (count_pointer, *_), count_size, _ = array_fields(count, KEPT_DTYPE, "count")
        if count_size != 1:
            raise LengthMismatchError(f"the count has {count_size} items; it needs 1")
        prepared = self.prepared(index_bits_of(max(key_extent, extent, key_out_extent, out_extent)), uniform_values)
        if n == 0:
            count.fill(0)
            return out_keys, out, count
        handle = stream_handle(stream)
        self._launch(prepared, handle, n, key_fields, fields, key_out_fields, out_fields, count_pointer, temp_storage,
                     prepared.uniform_fields(uniform_values))
        prepared.check_reads(uniform_values, handle)
        return out_keys, out, count

    def plain_call(self, prepared):
        """See :meth:`DevicePlan.plain_call`: ``keys`` and ``values`` C-contiguous CuPy arrays of one length,
        ``out_keys``, ``out`` and ``count`` ones too or ``None``, no ``temp_storage``."""
        import cupy

        current_stream = cupy.cuda.get_current_stream
        dtype, key_dtype, ordinal = self.element.dtype, self.key.dtype, self.device.ordinal

        def call(keys, values, *, out_keys=None, out=None, count=None, temp_storage=None, stream=None):
            if stream is not None or temp_storage is not None:
                return None
            found, found_keys = plain_input(values, dtype, ordinal), plain_input(keys, key_dtype, ordinal)
            if found is None or found_keys is None or found_keys[1] != found[1]:
                return None
            (pointer, n), key_pointer = found, found_keys[0]
            outputs = (plain_output(out_keys, n, key_dtype, ordinal), plain_output(out, n, dtype, ordinal),
                       plain_output(count, None, KEPT_DTYPE, ordinal))
            if None in outputs:
                return None
            (out_keys, key_out), (out, out_pointer), (count, count_pointer) = outputs
            self._launch(prepared, current_stream().ptr, n, contiguous_fields(key_pointer, n),
                         contiguous_fields(pointer, n), contiguous_fields(key_out, n), contiguous_fields(out_pointer, n),
                         count_pointer, None, ())
            return out_keys, out, count

        return call

    def _launch(self, prepared, stream: int, n: int, key_fields, fields, key_out_fields, out_fields,
                count_pointer: int, temp_storage, uniform_fields) -> None:
        """Launch the reduce_by_key of ``n`` keys and values on ``stream``."""
        tiles, status, epoch = self.acquire_status(n, prepared, temp_storage, stream)
        prepared.launcher("gpulab_reduce_by_key")(tiles, stream, *key_fields, *fields, n, *key_out_fields,
                                                  *out_fields, count_pointer, *status, epoch, *uniform_fields)


# --- one-shot calls and reusable objects ----------------------------------------
def segmented_reduce(fn, xs, offsets, initial, *, out=None, device=None, stream=None, verify: bool = False,
                     check_offsets: bool = True, options: BuildOptions | None = None, associative: bool = False,
                     **given):
    """One fold per segment: ``[functools.reduce(fn, xs[offsets[k]:offsets[k + 1]], initial) for k in
    range(len(offsets) - 1)]``; an empty segment gives ``initial``.

    ``fn`` need only be associative: each segment's items are combined in order
    (it is probed as :func:`gpulab.reduce` probes it). ``offsets`` (int32 or
    int64) must not decrease and must lie within
    ``0 .. len(xs)``; they need not start at 0. On a device the call waits to
    check them unless ``check_offsets=False`` (see
    :meth:`SegmentedReducePlan.__call__`). ``order=`` as for :func:`gpulab.reduce`: ``"portable"`` folds
    each segment's positions in the portable tree, ``op(initial, fold)``. Build options as for :func:`gpulab.map`.
    """
    options = build_options(PRIMITIVES["segmented_reduce"], options, **given)
    check_flags(verify=verify, check_offsets=check_offsets, associative=associative)
    target = resolve_device(device)
    if not target.is_gpu:
        check_host_inputs([xs, offsets])
        check_associative(PRIMITIVES["segmented_reduce"], fn, [xs, offsets], associative)
        return run_segmented_reduce(fn, xs, offsets, initial, out=out, order=options.order)
    plan = plan_for(PRIMITIVES["segmented_reduce"], fn, [xs, offsets], target, options, associative=associative)
    result = plan(xs, offsets, initial, out=out, stream=stream, check_offsets=check_offsets)
    if verify:
        hold_to_host(result, run_segmented_reduce(fn, *host_copies([xs, offsets]), initial, order=options.order))
    return result


def make_segmented_reduce(fn, example, *, device=None, options: BuildOptions | None = None, associative: bool = False,
                          **given) -> SegmentedReducePlan:
    """A reusable segmented reduce for items like ``example`` (an array, a dtype or a mapped input); then
    ``temp_storage_bytes(n)`` and ``plan(xs, offsets, initial)``, with any offsets. ``fn`` is probed as
    :func:`gpulab.reduce` probes it, when the object is made."""
    record = PRIMITIVES["segmented_reduce"]
    options = build_options(record, options, **given)
    check_flags(associative=associative)
    return make_plan(record, fn, [example], gpu_device(device), options, associative=associative)


def reduce_by_key(fn, keys, values, *, device=None, stream=None, verify: bool = False,
                  options: BuildOptions | None = None, associative: bool = False, **given):
    """``(unique_keys, folds)``: for each run of equal consecutive keys (as ``itertools.groupby``), its key and
    ``functools.reduce(fn, its values)``. On a device this waits for the number of runs. ``fn`` is probed as
    :func:`gpulab.reduce` probes it. ``order=`` as for :func:`gpulab.reduce` (a run folds its positions). Build
    options as for :func:`gpulab.map`."""
    options = build_options(PRIMITIVES["reduce_by_key"], options, **given)
    check_flags(verify=verify, associative=associative)
    target = resolve_device(device)
    if not target.is_gpu:
        check_host_inputs([keys, values])
        check_associative(PRIMITIVES["reduce_by_key"], fn, [keys, values], associative)
        return run_reduce_by_key(fn, keys, values, order=options.order)
    plan = plan_for(PRIMITIVES["reduce_by_key"], fn, [keys, values], target, options, associative=associative)
    unique, folds = plan.finish(plan(keys, values, stream=stream), stream=stream)
    if verify:
        host_keys, host_folds = run_reduce_by_key(fn, *host_copies([keys, values]), order=options.order)
        _verify_runs((unique, folds), (host_keys, host_folds))
    return unique, folds


def make_reduce_by_key(fn, keys_example, values_example, *, device=None, options: BuildOptions | None = None,
                       associative: bool = False, **given) -> ReduceByKeyPlan:
    """A reusable reduce_by_key for keys and values like the examples (arrays, dtypes or mapped inputs); a
    call returns ``(out_keys, out, count)``, all on the device (``plan.finish`` cuts them to the runs). ``fn``
    is probed as :func:`gpulab.reduce` probes it, when the object is made."""
    record = PRIMITIVES["reduce_by_key"]
    options = build_options(record, options, **given)
    check_flags(associative=associative)
    return make_plan(record, fn, [keys_example, values_example], gpu_device(device), options,
                     associative=associative)


def unique_by_key(keys, values, *, device=None, stream=None, verify: bool = False,
                  options: BuildOptions | None = None, **given):
    """``(unique_keys, first_values)``: the key and the first value of each run of equal consecutive keys
    (``reduce_by_key`` of :func:`~gpulab.host.segments.keep_first`)."""
    return reduce_by_key(keep_first, keys, values, device=device, stream=stream, verify=verify, options=options,
                         **given)


def make_unique_by_key(keys_example, values_example, *, device=None, options: BuildOptions | None = None,
                       **given) -> ReduceByKeyPlan:
    """A reusable unique_by_key: :func:`make_reduce_by_key` of :func:`~gpulab.host.segments.keep_first`."""
    return make_reduce_by_key(keep_first, keys_example, values_example, device=device, options=options, **given)


def _verify_runs(device_runs, host_runs) -> None:
    """Hold a device reduce_by_key to the host's: the same runs (their keys exactly), then their folds."""
    from ..errors import VerificationError

    device_keys, host_keys = device_runs[0], host_runs[0]
    if device_keys.shape != host_keys.shape:
        raise VerificationError(f"the device found {device_keys.size} runs of keys, the host {host_keys.size}")
    if not np.array_equal(device_keys.get(), host_keys, equal_nan=host_keys.dtype.kind in "fc"):
        raise VerificationError("the device's run keys differ from the host's")
    hold_to_host(device_runs[1], host_runs[1])

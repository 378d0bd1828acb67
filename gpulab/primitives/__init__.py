"""The primitives: one-shot functions and reusable ``make_*`` objects, on a GPU or the host.

Every primitive means what the host backend computes (``gpulab.host``);
device results are held to it. Device inputs are any object with
``__cuda_array_interface__`` or DLPack; outputs are CuPy arrays.
"""

from __future__ import annotations

from .. import host
from ..iota import Iota
from ..mapped import Mapped
from ..options import BuildOptions, build_options, check_flags
from ..registry import PRIMITIVES
from ..types import element_type
from .dispatch import (call, check_associative, check_host_inputs, gpu_device, host_copies, make_plan, plan_for,
                       resolve_device)
from .dispatch import verify as check_with_host
from .filter import FilterPlan
from .histogram import HistogramPlan
from .map import MapPlan
from .reduce import ReducePlan
from .scan import ScanPlan
from .segmented import (make_reduce_by_key, make_segmented_reduce, make_unique_by_key, reduce_by_key,
                        segmented_reduce, unique_by_key)
from .sort import argsort, make_argsort, make_sort, make_sort_by_key, sort, sort_by_key

__all__ = ["map", "reduce", "scan", "filter", "make_map", "make_reduce", "make_scan", "make_filter", "call",
           "segmented_reduce", "make_segmented_reduce", "reduce_by_key", "make_reduce_by_key", "unique_by_key",
           "make_unique_by_key", "histogram", "make_histogram", "sort", "sort_by_key", "argsort", "make_sort",
           "make_sort_by_key", "make_argsort"]


def map(fn, *xs, out=None, device=None, stream=None, verify: bool = False, options: BuildOptions | None = None,  # noqa: A001
        **given):
    """``[fn(*t) for t in zip(*xs)]``: 1 to 3 inputs of equal length (arrays, :func:`gpulab.iota` or
    :func:`gpulab.mapped`).

    Parameters
    ----------
    fn : function or Kernel
        A pure function of one item of each input.
    *xs : arrays, iota or mapped
        Device arrays for a GPU, NumPy arrays for the host.
    out : array, optional
        Where to write (allocated when ``None``).
    device : str, optional
        ``"cuda:N"`` or ``"host"``; the current device by default.
    stream : optional
        A ``__cuda_stream__`` object or CuPy stream (default: CuPy's current stream).
    verify : bool
        Also run the host reference and compare.
    options : BuildOptions, optional
        Build options made earlier; those ``given`` by name change them.
    **given
        Build options (:class:`gpulab.BuildOptions`): ``lto``, ``fma``,
        ``boundscheck`` (check every read of a captured array against its
        shape, default True), ``lineinfo``, ``index_bits``, ``frontend``. An
        unknown one, or a value of the wrong kind, is an error on the host too.
    """
    options = build_options(PRIMITIVES["map"], options, **given)
    check_flags(verify=verify)
    target = resolve_device(device)
    if not target.is_gpu:
        check_host_inputs(xs)
        return host.host_map(fn, *xs, out=out)
    plan = plan_for(PRIMITIVES["map"], fn, xs, target, options)
    result = plan(*xs, out=out, stream=stream)
    if verify:
        check_with_host(result, host.host_map(fn, *host_copies(xs)))
    return result


def reduce(fn, xs, initial, *, out=None, device=None, stream=None, verify: bool = False,
           options: BuildOptions | None = None, associative: bool = False, **given):
    """``functools.reduce(fn, xs, initial)``, left to right; a 0-d array.

    ``fn`` need only be associative: the device keeps the items' order. Float
    results may differ from the host's in rounding (the order of a tree); integer
    ones are identical. gpulab tries ``fn`` on a few values of its type and warns
    (:class:`~gpulab.errors.AssociativityWarning`) where ``fn(fn(a, b), c)`` and
    ``fn(a, fn(b, c))`` differ; ``associative=True`` says you know, and skips that.

    ``order=`` names the tree (:data:`gpulab.options.ORDERS`): ``"device"`` (the
    default: the build's own, the fastest; on the host, left to right),
    ``"portable"`` (``op(initial, fold)`` in a tree fixed by the items' positions
    alone: the same bits on every GPU and on the host, which replays it; built
    without FMA contraction) or ``"sequential"`` (left to right; the host only).
    Build options as for :func:`map`.
    """
    options = build_options(PRIMITIVES["reduce"], options, **given)
    check_flags(verify=verify, associative=associative)
    target = resolve_device(device)
    if not target.is_gpu:
        check_host_inputs([xs])
        check_associative(PRIMITIVES["reduce"], fn, [xs], associative)
        return host.host_reduce(fn, xs, initial, out=out, order=options.order)
    plan = plan_for(PRIMITIVES["reduce"], fn, [xs], target, options, associative=associative)
    result = plan(xs, initial, out=out, stream=stream)
    if verify:
        check_with_host(result, host.host_reduce(fn, *host_copies([xs]), initial, order=options.order))
    return result


def scan(fn, xs, initial=None, exclusive: bool | None = None, *, out=None, device=None, stream=None,
         verify: bool = False, options: BuildOptions | None = None, associative: bool = False, **given):
    """Prefix folds: item i folds ``initial`` and ``xs[0..i]`` (``exclusive``, default False: through
    ``xs[i-1]``). ``fn`` is probed as :func:`reduce` probes it. ``order=`` as for :func:`reduce`: with
    ``"portable"`` item i is ``op(initial, fold of xs[:i + 1])``, the fold a reduce of those items gives. Build
    options as for :func:`map`."""
    options = build_options(PRIMITIVES["scan"], options, **given,
                            **({} if exclusive is None else {"exclusive": exclusive}))
    check_flags(verify=verify, associative=associative)
    target = resolve_device(device)
    if not target.is_gpu:
        check_host_inputs([xs])
        check_associative(PRIMITIVES["scan"], fn, [xs], associative)
        return host.host_scan(fn, xs, initial, exclusive=options.exclusive, out=out, order=options.order)
    plan = plan_for(PRIMITIVES["scan"], fn, [xs], target, options, associative=associative)
    result = plan(xs, initial, out=out, stream=stream)
    if verify:
        check_with_host(result, host.host_scan(fn, *host_copies([xs]), initial, exclusive=options.exclusive,
                                               order=options.order))
    return result


def filter(fn, xs, *, device=None, stream=None, verify: bool = False, options: BuildOptions | None = None,  # noqa: A001
           **given):
    """``[x for x in xs if fn(x)]``, order kept. On a device this waits for the count. Build options as for
    :func:`map`."""
    options = build_options(PRIMITIVES["filter"], options, **given)
    check_flags(verify=verify)
    target = resolve_device(device)
    if not target.is_gpu:
        check_host_inputs([xs])
        return host.host_filter(fn, xs)
    plan = plan_for(PRIMITIVES["filter"], fn, [xs], target, options)
    result = plan.finish(plan(xs, stream=stream), stream=stream)
    if verify:
        check_with_host(result, host.host_filter(fn, *host_copies([xs])))
    return result


def histogram(fn_or_xs, *args, bins=None, range=None, out=None, device=None, stream=None,  # noqa: A002
              verify: bool = False, options: BuildOptions | None = None, **given):
    """Counts per bin: ``histogram(xs, bins, range=None)`` or ``histogram(fn, xs, bins, range=None)``.

    Without a function, items are binned evenly over ``range`` as ``numpy.histogram(xs, bins, range)``
    bins them (the last bin closed, NaN and items outside the range dropped; the range defaults to the
    items' least and greatest). With a function, ``fn(x)`` is an item's bin (an integer: outside
    ``[0, bins)``, -1 say, the item is dropped), or, given a range, a value binned evenly. Exact int64
    counts, the same on the host and on any device.

    Parameters
    ----------
    fn_or_xs : function, Kernel or array
        ``fn`` (then ``xs`` follows), or the items.
    xs : array, iota or mapped
        The items (device arrays for a GPU, NumPy arrays for the host).
    bins : int
        How many bins (1 to 2**31 - 1).
    range : (number, number), optional
        Bin ``fn(x)`` (or the item) evenly from ``low`` to ``high``.
    out : array, optional
        ``bins`` int64 counts to write (allocated when ``None``).
    device, stream, verify, options, **given
        As for :func:`map`.
    """
    options = build_options(PRIMITIVES["histogram"], options, **given)
    check_flags(verify=verify)
    fn, xs, bins, range = _histogram_arguments(fn_or_xs, args, bins, range)
    target = resolve_device(device)
    if not target.is_gpu:
        check_host_inputs([xs])
        return host.host_histogram(fn, xs, bins, range, out=out)
    fn, range = _default_key(fn, xs, range)
    plan = plan_for(PRIMITIVES["histogram"], fn, [xs], target, options, bins=bins, range=range)
    result = plan(xs, out=out, stream=stream)
    if verify:
        check_with_host(result, host.host_histogram(fn, *host_copies([xs]), bins, range))
    return result


def make_histogram(fn_or_example, *args, bins=None, range=None, device=None,  # noqa: A002
                   options: BuildOptions | None = None, **given) -> HistogramPlan:
    """A reusable histogram for items like ``example`` (``make_histogram([fn,] example, bins, range=None)``);
    ``plan(xs, out=None)`` gives the counts. Without a function a range is required (it is not taken from
    the items at each call)."""
    options = build_options(PRIMITIVES["histogram"], options, **given)
    fn, example, bins, range = _histogram_arguments(fn_or_example, args, bins, range)
    if fn is None and range is None:
        from ..errors import ArgumentError

        raise ArgumentError("make_histogram without a function bins items evenly: give range=(low, high)")
    fn, range = _default_key(fn, example, range)
    return make_plan(PRIMITIVES["histogram"], fn, [example], gpu_device(device), options, bins=bins, range=range)


def _histogram_arguments(first, args, bins, range):  # noqa: A002
    """``(fn or None, xs, bins, range)`` of ``histogram(xs, bins, range)`` or ``histogram(fn, xs, bins, range)``."""
    from ..errors import ArgumentError

    fn = first if callable(first) and not hasattr(first, "__cuda_array_interface__") else None
    rest = args if fn is not None else (first, *args)
    if not rest:
        raise ArgumentError("histogram needs the items: histogram(xs, bins, range) or histogram(fn, xs, bins)")
    xs, *more = rest
    if len(more) > 2 or (more and bins is not None) or (len(more) == 2 and range is not None):
        raise ArgumentError("histogram takes (xs, bins, range) or (fn, xs, bins, range), each given once")
    bins = more[0] if more else bins
    range = more[1] if len(more) == 2 else range
    if bins is None:
        raise ArgumentError("histogram needs bins, a number of bins (such as 256)")
    return fn, xs, bins, tuple(range) if isinstance(range, list) else range


def _default_key(fn, xs, range):  # noqa: A002
    """The function and range a device histogram takes: the item itself (typed) where there is no function,
    over the items' own range (their least and greatest, as NumPy's) where none is given."""
    if fn is not None:
        return fn, range
    from ..host.histogram import default_range, extremes
    from ..host.item import item_kernel
    from ..runtime.arrays import device_array

    if isinstance(xs, (Iota, Mapped)):
        element = element_type(xs.dtype)
        if range is None:
            from ..errors import ArgumentError

            raise ArgumentError(f"give range=(low, high) to bin a {type(xs).__name__.lower()} input evenly")
    else:
        import cupy

        element = element_type(device_array(xs).dtype)
        if range is None:
            range = default_range(*extremes(cupy.asarray(xs)))
    return item_kernel(element), range


def make_map(fn, *examples, device=None, options: BuildOptions | None = None, **given) -> MapPlan:
    """A reusable map for inputs like ``examples`` (arrays, dtypes or iota): build once, call many times.
    Build options as for :func:`map`."""
    return _make("map", fn, examples, device, options, given)


def make_reduce(fn, example, *, device=None, options: BuildOptions | None = None, associative: bool = False,
                **given) -> ReducePlan:
    """A reusable reduce for inputs like ``example``; ``temp_storage_bytes(n)`` then ``plan(xs, initial)``.
    ``fn`` is probed as :func:`reduce` probes it, when the object is made."""
    return _make("reduce", fn, [example], device, options, given, associative)


def make_scan(fn, example, *, device=None, options: BuildOptions | None = None, associative: bool = False,
              **given) -> ScanPlan:
    """A reusable scan for inputs like ``example`` (``exclusive=True``: an exclusive one); ``fn`` is probed as
    :func:`reduce` probes it, when the object is made."""
    return _make("scan", fn, [example], device, options, given, associative)


def make_filter(fn, example, *, device=None, options: BuildOptions | None = None, **given) -> FilterPlan:
    """A reusable filter for inputs like ``example``; a call returns ``(out, kept)``, both on the device."""
    return _make("filter", fn, [example], device, options, given)


def _make(primitive: str, fn, examples, device, options: BuildOptions | None, given: dict, associative: bool = False):
    record = PRIMITIVES[primitive]
    options = build_options(record, options, **given)
    check_flags(associative=associative)
    return make_plan(record, fn, examples, gpu_device(device), options, associative=associative)



"""The primitives: one-shot functions and reusable ``make_*`` objects, on a GPU or the host.

Every primitive means what the host backend computes (``gpulab.host``);
device results are held to it. Device inputs are any object with
``__cuda_array_interface__`` or DLPack; outputs are CuPy arrays.
"""

from __future__ import annotations

from .. import host
from ..registry import PRIMITIVES
from .dispatch import call, check_host_inputs, gpu_device, host_copies, make_plan, plan_for, resolve_device, verify
from .filter import FilterPlan
from .map import MapPlan
from .reduce import ReducePlan
from .scan import ScanPlan
from .segmented import (make_reduce_by_key, make_segmented_reduce, make_unique_by_key, reduce_by_key,
                        segmented_reduce, unique_by_key)

__all__ = ["map", "reduce", "scan", "filter", "make_map", "make_reduce", "make_scan", "make_filter", "call",
           "segmented_reduce", "make_segmented_reduce", "reduce_by_key", "make_reduce_by_key", "unique_by_key",
           "make_unique_by_key"]


def map(fn, *xs, out=None, device=None, stream=None, verify: bool = False, **options):  # noqa: A001
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
    **options
        Build options: ``lto``, ``fma``, ``boundscheck`` (check every read of a
        captured array against its shape, default True).
    """
    target = resolve_device(device)
    if not target.is_gpu:
        check_host_inputs(xs)
        return host.host_map(fn, *xs, out=out)
    plan = plan_for(PRIMITIVES["map"], fn, xs, target, **options)
    result = plan(*xs, out=out, stream=stream)
    if verify:
        verify(result, host.host_map(fn, *host_copies(xs)))
    return result


def reduce(fn, xs, initial, *, out=None, device=None, stream=None, verify: bool = False, **options):
    """``functools.reduce(fn, xs, initial)``, left to right; a 0-d array.

    ``fn`` need only be associative: the device keeps the items' order. Float
    results may differ from the host's in rounding (the order of a tree); integer
    ones are identical.
    """
    target = resolve_device(device)
    if not target.is_gpu:
        check_host_inputs([xs])
        return host.host_reduce(fn, xs, initial, out=out)
    plan = plan_for(PRIMITIVES["reduce"], fn, [xs], target, **options)
    result = plan(xs, initial, out=out, stream=stream)
    if verify:
        verify(result, host.host_reduce(fn, *host_copies([xs]), initial))
    return result


def scan(fn, xs, initial=None, exclusive: bool = False, *, out=None, device=None, stream=None,
         verify: bool = False, **options):
    """Prefix folds: item i folds ``initial`` and ``xs[0..i]`` (``exclusive``: through ``xs[i-1]``)."""
    target = resolve_device(device)
    if not target.is_gpu:
        check_host_inputs([xs])
        return host.host_scan(fn, xs, initial, exclusive=exclusive, out=out)
    plan = plan_for(PRIMITIVES["scan"], fn, [xs], target, exclusive=bool(exclusive), **options)
    result = plan(xs, initial, out=out, stream=stream)
    if verify:
        verify(result, host.host_scan(fn, *host_copies([xs]), initial, exclusive=exclusive))
    return result


def filter(fn, xs, *, device=None, stream=None, verify: bool = False, **options):  # noqa: A001
    """``[x for x in xs if fn(x)]``, order kept. On a device this waits for the count."""
    target = resolve_device(device)
    if not target.is_gpu:
        check_host_inputs([xs])
        return host.host_filter(fn, xs)
    plan = plan_for(PRIMITIVES["filter"], fn, [xs], target, **options)
    result = plan.finish(plan(xs, stream=stream), stream=stream)
    if verify:
        verify(result, host.host_filter(fn, *host_copies([xs])))
    return result


def make_map(fn, *examples, device=None, **options) -> MapPlan:
    """A reusable map for inputs like ``examples`` (arrays, dtypes or iota): build once, call many times."""
    return make_plan(PRIMITIVES["map"], fn, examples, gpu_device(device), **options)


def make_reduce(fn, example, *, device=None, **options) -> ReducePlan:
    """A reusable reduce for inputs like ``example``; ``temp_storage_bytes(n)`` then ``plan(xs, initial)``."""
    return make_plan(PRIMITIVES["reduce"], fn, [example], gpu_device(device), **options)


def make_scan(fn, example, *, exclusive: bool = False, device=None, **options) -> ScanPlan:
    """A reusable scan for inputs like ``example``."""
    return make_plan(PRIMITIVES["scan"], fn, [example], gpu_device(device), exclusive=exclusive, **options)


def make_filter(fn, example, *, device=None, **options) -> FilterPlan:
    """A reusable filter for inputs like ``example``; a call returns ``(out, kept)``, both on the device."""
    return make_plan(PRIMITIVES["filter"], fn, [example], gpu_device(device), **options)



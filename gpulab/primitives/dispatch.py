"""Which backend runs a call, the plans kept for one-shot calls, and verification.

A device backend declines before it has any side effect: with no GPU, a
call without ``device=`` runs on the host and says so once. A failure after
a backend started is an error, never a fallback.
"""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np

from .. import registry
from ..compiler import associativity, codegen
from ..conversion import refuse_iota, wrong_dtype
from ..device import Device, current_device, devices, say_no_gpu
from ..device import device as find_device
from ..errors import (ArgumentError, DeviceError, GpulabError, HostArrayError, KernelTypeError, VerificationError,
                      VerificationWarning, described)
from ..host.run import element_of
from ..iota import Iota
from ..kernel import Kernel, as_kernel, references_unchanged
from ..lru import LRU
from ..options import BuildOptions, build_options
from ..mapped import Mapped, kind_of, leaves
from ..registry import Primitive
from ..runtime.arrays import device_array, is_device_array, to_host
from ..types import ElementType, element_type

PLANS: LRU = LRU(256)
"""Plans of one-shot calls, by function, checked kernel, types, device and options."""


def resolve_device(device) -> Device:
    """The device a call runs on: ``device``, else the current one (the host, said once, without a GPU)."""
    if device is not None:
        return find_device(device)
    chosen = current_device()
    if not chosen.is_gpu and not any(d.is_gpu for d in devices()):
        say_no_gpu(stacklevel=3)
    return chosen


def check_host_inputs(xs) -> None:
    """Refuse device arrays on the host backend, before anything runs."""
    for i, x in enumerate(xs):
        if any(is_device_array(leaf) for leaf in leaves(x)):
            raise HostArrayError(f"input {i} is (or reads) a device array, but this call runs on the host; "
                                 "move it with gpulab.to_host(x) or run on a GPU device")


def check_associative(record: Primitive, fn, arrays, associative: bool = False) -> None:
    """Probe the operator of a host call of ``record`` (a device call's plan probes its own) on the element type
    the host will give it, warning where it is not associative. A call the host refuses (a kernel or an input
    it cannot take) is left to say why itself."""
    try:
        kernel = as_kernel(fn)
        element = kernel.declared.args[0] if kernel.declared else element_of(arrays[record.operand])
    except (GpulabError, TypeError, ValueError):
        return
    associativity.check(record, kernel, element, associative)


def element_types(kernel: Kernel, xs) -> tuple[ElementType, ...]:
    """The element types a call's inputs give, checked against the kernel's declared ones."""
    found = tuple(element_type(np.int64 if isinstance(x, Iota) else x.dtype) for x in xs)
    declared = kernel.declared.args if kernel.declared else None
    if declared is None:
        return found
    if len(declared) != len(found):
        raise KernelTypeError(f"`{kernel.name}` takes {len(declared)} input(s); {len(found)} given")
    for i, (want, have, x) in enumerate(zip(declared, found, xs)):
        if want != have and not isinstance(x, Iota):  # an iota's range is checked where it is passed
            raise wrong_dtype(f"input {i}", have.dtype, want.dtype, kernel.name)
    return declared


def operator_types(record: Primitive, kernel: Kernel, arrays) -> tuple[ElementType, ...]:
    """The function's parameter types for a call on ``arrays`` (or examples of them, arrays or dtypes).

    An element-wise primitive passes one item of each array; the others pass
    items of their one array to every parameter.
    """
    examples = [_example(x) for x in arrays]
    operand = record.operand
    return element_types(kernel, examples if record.elementwise else examples[operand:operand + 1] * record.arity[0])


def _example(x):
    """Something with the ``dtype`` of input ``x``: itself, its device view, or an empty array of a dtype given."""
    if isinstance(x, Iota) or (hasattr(x, "dtype") and not isinstance(x, type)):
        return x
    if is_device_array(x):  # seen only through __cuda_array_interface__ or DLPack
        return device_array(x)
    return np.empty(0, example_dtype(x))


def example_dtype(example) -> np.dtype:
    """The dtype of an example of a call's inputs (what ``make_*`` take): an array's, or a dtype given as NumPy
    reads it (``np.int64``, ``"i8"``, ``gpulab.f32``).

    Raises
    ------
    ArgumentError
        For anything else, saying what to pass.
    """
    if isinstance(example, ElementType):
        return example.dtype
    if hasattr(example, "dtype") and not isinstance(example, type):
        return np.dtype(example.dtype)
    if is_device_array(example):
        return device_array(example).dtype
    try:
        if example is None:  # NumPy reads None as float64
            raise TypeError
        return np.dtype(example)
    except (TypeError, ValueError):
        raise ArgumentError(f"an example of a call's inputs is an array or a dtype (np.float32, 'f4', gpulab.f32), "
                            f"not {described(example)}") from None


def make_plan(record: Primitive, fn, arrays, device: Device, options: BuildOptions = BuildOptions(), *,
              associative: bool = False, **arguments):
    """A new device plan of ``record`` for ``fn`` and arrays like ``arrays`` (what ``make_*`` return), built with
    ``options``; ``arguments`` are the primitive's own call arguments (``bins=`` of a histogram). Its operator is
    probed for associativity now, unless ``associative`` (:mod:`gpulab.compiler.associativity`).

    Raises
    ------
    ArgumentError
        When ``options.iota`` says otherwise than the inputs (an iota input is :func:`gpulab.iota`), or for an
        order no device build folds in (``order="sequential"``).
    """
    codegen.check_order(record, options.order)
    kernel = as_kernel(fn)
    refuse_iota(record, arrays)
    types = operator_types(record, kernel, arrays)
    inputs = arrays[:record.input_count(len(types))]  # those the kernel reads as typed inputs
    iota = tuple(isinstance(x, Iota) for x in inputs) if "iota" in record.options else ()
    if any(options.iota) and options.iota != iota:
        raise ArgumentError(f"iota={options.iota} does not say what the inputs are; a call's inputs say which are "
                            "iotas (pass gpulab.iota(n) as one): leave iota= out")
    mapped = tuple(x.shape if isinstance(x, Mapped) else None for x in inputs) if any(
        isinstance(x, Mapped) for x in inputs) else ()
    keys = {"keys": element_type(_example(arrays[0]).dtype)} if record.keyed else {}
    associativity.check(record, kernel, types[0], associative)
    plan = record.plan_class()(kernel, types, device, replace(options, iota=iota), mapped=mapped, **keys, **arguments)
    plan.associative = associative
    return plan


def plan_for(record: Primitive, fn, arrays, device: Device, options: BuildOptions = BuildOptions(), **arguments):
    """A cached plan for this function, input types, device, options and call arguments (one-shot calls;
    ``associative=True`` among them skips the associativity probe, as for :func:`make_plan`).

    The cache's key holds the checked kernel's fingerprint (its code, constants
    and the kernels it calls), so redefining a helper it calls makes a new plan;
    and the function object, whose closure and globals the plan reads uniforms
    from. A repeated call finds its plan in :data:`_RECENT` by what it can read
    without checking anything (the function, the arrays' dtypes), and then only
    confirms that the names the function refers to still hold what they held.
    """
    try:
        recent_key = (record.name, fn, device.name, options, *[Iota if type(x) is Iota else x.shape
                                                               if type(x) is Mapped else x.dtype for x in arrays],
                      *arguments.items())
    except AttributeError:  # an input without .dtype (a bare __cuda_array_interface__ object): the slow way
        recent_key = None
    found = _RECENT.get(recent_key)
    if found is not None and (found.kernel is fn or references_unchanged(found.kernel)):
        return found
    kernel = as_kernel(fn)
    types = operator_types(record, kernel, arrays)
    iota = tuple(isinstance(x, Iota) for x in arrays) if "iota" in record.options else None
    mapped = tuple(kind_of(x) for x in arrays)
    keys = _example(arrays[0]).dtype if record.keyed else None
    key = (record.name, kernel.pyfunc, kernel.fingerprint, kernel.declared, types, iota, mapped, keys, device.name,
           options, tuple(sorted(arguments.items())))
    plan = PLANS.get_or_make(key, lambda: make_plan(record, kernel, arrays, device, options, **arguments))
    if recent_key is not None:
        if len(_RECENT) >= PLANS.maxsize:
            _RECENT.clear()
        _RECENT[recent_key] = plan
    return plan


_RECENT: dict = {}
"""The plans of :data:`PLANS` by function, device, the arrays' dtypes and options as given: a plain dict
in front of the LRU, so that a repeated one-shot call costs one lookup (at most ``PLANS.maxsize`` keys)."""


def call(primitive: str, fn, arrays, *, initial=None, device=None, options: BuildOptions | None = None,
         associative: bool = False, **given):
    """Run ``primitive(fn)`` on ``arrays`` where ``device`` says, the host or a GPU, and return its result.

    The one way the notebook's ``--run`` and ``gpulab.check`` call any
    primitive: ``initial`` where the primitive takes one; ``options`` (with
    those ``given`` by name changed) are the build's options, of which the
    host takes those that change what a call computes (``exclusive``);
    ``given`` may hold the primitive's own call arguments too (``bins=``).
    ``associative=True`` skips the associativity probe of a primitive that folds.

    Raises
    ------
    ArgumentError
        For an unknown option or a value of the wrong kind, on the host too.
    """
    record = registry.primitive(primitive)
    own, given = record.own_arguments(given)
    options = build_options(record, options, **given)
    target = resolve_device(device)
    arguments = record.call_arguments(arrays, initial)
    if not target.is_gpu:
        check_host_inputs(arrays)
        check_associative(record, fn, arrays, associative)
        return record.host_runner()(fn, *arguments, **options.host_options(record), **own)
    plan = plan_for(record, fn, arrays, target, options, associative=associative, **own)
    return plan.finish(plan(*arguments))


def gpu_device(device) -> Device:
    """The GPU a ``make_*`` object is made for: ``device``, else the current one.

    Raises
    ------
    DeviceError
        When that is the host: a reusable object runs on a GPU only.
    """
    target = resolve_device(device)
    if not target.is_gpu:
        raise DeviceError("make_* objects run on a GPU; on the host call the one-shot function (gpulab.reduce, "
                          "gpulab.segmented_reduce...) with device='host'")
    return target


def host_copies(xs) -> list:
    """The inputs ``xs`` of a device call, as the host takes them: arrays copied to the host, iotas as they
    are, mapped inputs of host copies."""
    return [x if isinstance(x, Iota) else Mapped(x.kernel, tuple(host_copies(x.inputs)), x.args, x.result)
            if isinstance(x, Mapped) else to_host(x) for x in xs]


def verify(device_result, host_result, element: ElementType | None = None) -> None:
    """Compare a device result with the host's: integers exactly (else raise), floats reported.

    ``element`` is the result's element type (the device result's own when ``None``).
    """
    from ..host import compare

    element = element_type(device_result.dtype) if element is None else element
    report = compare(to_host(device_result), host_result, element)
    if report.exact:
        return
    if element.is_integral or element.is_record:
        raise VerificationError(report.message)
    warnings.warn(report.message, VerificationWarning, stacklevel=3)

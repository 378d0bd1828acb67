"""Which backend runs a call, the plans kept for one-shot calls, and verification.

A device backend declines before it has any side effect: with no GPU, a
call without ``device=`` runs on the host and says so once. A failure after
a backend started is an error, never a fallback.
"""

from __future__ import annotations

import threading
import warnings
from collections import OrderedDict

import numpy as np

from ..errors import HostArrayError, HostFallbackWarning, KernelTypeError, VerificationError, VerificationWarning
from ..iota import Iota
from ..kernel import Kernel, as_kernel
from ..runtime.arrays import is_device_array, to_host
from ..runtime.devices import Device, current_device, devices
from ..runtime.devices import device as find_device
from ..types import ElementType, element_type

_PLANS: OrderedDict = OrderedDict()
_PLANS_LOCK = threading.Lock()
_MAX_PLANS = 256
_warned_host = False


def resolve_device(device) -> Device:
    """The device a call runs on: ``device``, else the current one (the host, said once, without a GPU)."""
    global _warned_host
    if device is not None:
        return find_device(device)
    chosen = current_device()
    if not chosen.is_gpu and not _warned_host and not any(d.is_gpu for d in devices()):
        _warned_host = True
        warnings.warn("no CUDA GPU here: gpulab runs primitives on the host reference backend "
                      "(pass device='host' to say so and silence this)", HostFallbackWarning, stacklevel=3)
    return chosen


def check_host_inputs(xs) -> None:
    """Refuse device arrays on the host backend, before anything runs."""
    for i, x in enumerate(xs):
        if is_device_array(x):
            raise HostArrayError(f"input {i} is a device array, but this call runs on the host; "
                                 "move it with gpulab.to_host(x) or run on a GPU device")


def element_types(kernel: Kernel, xs) -> tuple[ElementType, ...]:
    """The element types a call's inputs give, checked against the kernel's declared ones."""
    found = tuple(element_type(np.int64 if isinstance(x, Iota) else x.dtype) for x in xs)
    declared = kernel.declared.args if kernel.declared else None
    if declared is None:
        return found
    if len(declared) != len(found):
        raise KernelTypeError(f"`{kernel.name}` takes {len(declared)} input(s); {len(found)} given")
    for i, (want, have, x) in enumerate(zip(declared, found, xs)):
        if want != have and not isinstance(x, Iota):
            raise KernelTypeError(
                f"input {i} holds {have.name}, but `{kernel.name}` takes {want.name}: convert it first "
                f"(x.astype(np.{want.name})); device primitives never convert silently")
    return declared


def plan_for(plan_class, fn, xs, device: Device, **options):
    """A cached plan for this function, input types, device and options (one-shot calls)."""
    kernel = as_kernel(fn)
    types = element_types(kernel, xs)
    key = (plan_class, fn, types, device.name, tuple(sorted(options.items())))
    with _PLANS_LOCK:
        plan = _PLANS.get(key)
        if plan is not None:
            _PLANS.move_to_end(key)
            return plan
    plan = plan_class(kernel, types, device, **options)
    with _PLANS_LOCK:
        _PLANS[key] = plan
        while len(_PLANS) > _MAX_PLANS:
            _PLANS.popitem(last=False)
    return plan


def verify(device_result, host_result, element: ElementType) -> None:
    """Compare a device result with the host's: integers exactly (else raise), floats reported."""
    from ..host import compare

    report = compare(to_host(device_result), host_result, element)
    if report.exact:
        return
    if element.is_integral or element.is_record:
        raise VerificationError(report.message)
    warnings.warn(report.message, VerificationWarning, stacklevel=3)

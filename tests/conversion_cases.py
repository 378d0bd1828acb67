"""The conversion rule's cases (docs/conversion.md), held by the host (tests/nocuda/security/test_conversion.py)
and by a device (tests/gpu/test_conversion_on_device.py) alike."""

import gpulab


@gpulab.kernel
def add(a: gpulab.i32, b: gpulab.i32) -> gpulab.i32:
    return a + b


@gpulab.kernel
def halve(x: gpulab.f32) -> gpulab.f32:
    return x * gpulab.f32(0.5)


REFUSED_INITIAL = [
    (0.5, "initial=0.5 is not exactly an int32.*round or clip it yourself"),  # the example
    (2**31, "int32 holds the integers -2147483648 .. 2147483647"),
    (float("nan"), "not exactly an int32"),
    ([1], "initial= must be one int32 value, not a list"),
    ("abc", "initial='abc' is a str, not a number"),
]
"""An ``initial=`` of an int32 reduce or scan that must be refused, and what the error says."""

"""Comparing a device result with the host reference's: integers exactly, floats by their error."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..types import element_type

@dataclass(frozen=True)
class Verification:
    """How a device result compares with the host reference.

    Attributes
    ----------
    exact : bool
        Whether every item is identical (NaN matching NaN).
    max_abs_error : float
        Largest ``|device - host|``: 0 when exact, ``inf`` where only one is
        NaN or the sizes or types differ, NaN for records.
    max_rel_error : float
        Largest ``|device - host| / |host|`` (``inf`` where ``host`` is 0 and ``device`` is not).
    ulps : int or None
        Floats (and complex parts): the largest distance between matching
        items in representable values; ``None`` for other types.
    float64_rel_error : float or None
        Largest relative error of the device result versus the float64 reference, when one is given.
    host_float64_rel_error : float or None
        The same for the host result (how far its left-to-right order is from float64).
    message : str
        All of this in words, naming the first differing item.
    """

    exact: bool
    max_abs_error: float
    max_rel_error: float
    ulps: int | None
    message: str
    float64_rel_error: float | None = None
    host_float64_rel_error: float | None = None


def compare(device_result, host_result, element, reference=None) -> Verification:
    """Compare a device result with the host reference's, item by item.

    Parameters
    ----------
    device_result, host_result : numpy.ndarray
        The two results (compared in C order; their shapes may differ, not their sizes).
    element : ElementType or dtype
        The results' element type.
    reference : numpy.ndarray, optional
        The float64 reference (:func:`float64_reference`) for float16/32 and complex64 results.

    Returns
    -------
    Verification
        Integers, bools and records are exact or not; floats also report their errors.
    """
    element = element_type(element)
    device, host = np.ravel(np.asarray(device_result)), np.ravel(np.asarray(host_result))
    if device.size != host.size or device.dtype != host.dtype:
        return Verification(False, math.inf, math.inf, None,
                            f"the device result holds {device.size} {device.dtype} item(s), "
                            f"the host reference {host.size} {host.dtype}")
    if element.is_record:
        return _compare_records(device, host)
    return _compare_numbers(device, host, element, reference)


def _compare_records(device, host) -> Verification:
    same = _records_equal(device, host)
    exact = bool(same.all())
    return Verification(exact, 0.0 if exact else math.nan, 0.0 if exact else math.nan, None,
                        _summary(device, host, ~same))


def _records_equal(device, host) -> np.ndarray:
    """Per item: whether every field matches (NaN matching NaN), nested records and sub-arrays included."""
    same = np.ones(device.size, bool)
    for name in device.dtype.names:
        a, b = _rows(device[name]), _rows(host[name])
        same &= (_records_equal(a.ravel(), b.ravel()).reshape(a.shape) if a.dtype.names
                 else _equal(a, b)).all(axis=1)
    return same


def _rows(field_values) -> np.ndarray:
    """A field's values as one row per item (a sub-array field has several)."""
    return field_values.reshape(len(field_values), math.prod(field_values.shape[1:]))


def _equal(a, b) -> np.ndarray:
    if a.dtype.kind in "fc":
        return (a == b) | (np.isnan(a) & np.isnan(b))
    return a == b


def _compare_numbers(device, host, element, reference) -> Verification:
    differs = ~_equal(device, host)
    exact = not differs.any()
    abs_error, rel_error = _errors(device, host)
    ulps = _max_ulps(device, host) if element.dtype.kind in "fc" else None
    message = _summary(device, host, differs)
    if not exact:
        message += f": max abs error {abs_error:.3g}, max rel error {rel_error:.3g}"
        message += f" ({ulps} ulp)" if ulps is not None else ""
    if ulps is None or reference is None:
        return Verification(exact, abs_error, rel_error, ulps, message)
    reference = np.ravel(np.asarray(reference))
    device_error, host_error = _errors(device, reference)[1], _errors(host, reference)[1]
    message += (f"; versus float64, the device's max rel error is {device_error:.3g} "
                f"and the host's {host_error:.3g}")
    return Verification(exact, abs_error, rel_error, ulps, message, device_error, host_error)


def _errors(values, reference) -> tuple[float, float]:
    """Largest absolute and relative errors of ``values`` versus ``reference`` (NaN matching NaN)."""
    wide = np.complex128 if np.iscomplexobj(values) or np.iscomplexobj(reference) else np.float64
    a, b = values.astype(wide), reference.astype(wide)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        absolute = np.where(_equal(a, b), 0.0, np.abs(a - b))
        relative = np.where(absolute == 0, 0.0, absolute / np.abs(b))
    return _largest(absolute), _largest(relative)


def _largest(errors) -> float:
    """The largest error, NaN counting as infinite."""
    return float(np.where(np.isnan(errors), math.inf, errors).max(initial=0.0))


def _max_ulps(device, host) -> int:
    """Largest distance in representable values between items that are not NaN (complex: per part)."""
    a, b = _float_parts(device), _float_parts(host)
    keep = ~(np.isnan(a) | np.isnan(b))
    a, b = _ordered(a[keep]), _ordered(b[keep])
    distance = np.where(a >= b, a.view(np.uint64) - b.view(np.uint64), b.view(np.uint64) - a.view(np.uint64))
    return int(distance.max(initial=0))


def _float_parts(values) -> np.ndarray:
    values = np.ascontiguousarray(values)
    if values.dtype.kind == "c":
        return values.view(np.dtype(f"f{values.dtype.itemsize // 2}"))
    return values


def _ordered(floats) -> np.ndarray:
    """Float bit patterns as int64 in the floats' order (-0.0 and 0.0 equal)."""
    bits = floats.view(np.dtype(f"i{floats.dtype.itemsize}"))
    wide = bits.astype(np.int64)
    return np.where(wide < 0, np.iinfo(bits.dtype).min - wide, wide)


def _summary(device, host, differs) -> str:
    if not differs.any():
        return f"the device result matches the host reference exactly ({device.size} {device.dtype} item(s))"
    first = int(np.flatnonzero(differs)[0])
    return (f"the device result differs from the host reference at {int(differs.sum())} of {device.size} "
            f"{device.dtype} item(s), first at item {first} (device {device[first]!s}, host {host[first]!s})")

"""The one rule for what a call passes: input arrays, ``out=``, ``initial=`` and iota, on the host as on a device.

- **Arrays are never converted.** An input array and ``out=`` hold exactly
  the element type the kernel takes or makes (on the host in either byte
  order); anything else is refused with the ``astype`` that converts it.
  Converting silently is how wrong results hide: a float array into an
  int32 kernel truncates, an int64 ``out=`` into an int8 one wraps.
- **Python values are converted when that keeps them exactly.** An
  ``initial=``, or a list given to the host as an input, becomes the element
  type when every value survives: ``0`` or ``2.0`` into an int32 reduce,
  ``1`` into a float32 one, ``True`` into an int. One that would change
  (``0.5`` into int32, ``300`` into uint8, ``0.1`` into float32) is refused;
  pass a NumPy scalar of the element type (``np.float32(0.1)``) to choose the
  rounding yourself. A NumPy scalar of another type counts as a value.
- **iota's items are int64**, passed to a parameter of another type only
  when every item converts exactly (``iota(2**25)`` is not all float32s).

``docs/conversion.md`` says the same for users; host and device both call
these functions, so they refuse the same things with the same words.
"""

from __future__ import annotations

import functools
import math
import warnings

import numpy as np

from .captures import masked_refusal
from .device import require_host_memory
from .errors import ConversionError, HostArrayError, LengthMismatchError
from .iota import Iota
from .types import ElementType


def wrong_dtype(label: str, found, expected, kernel_name: str | None = None) -> ConversionError:
    """The error for an array of another element type than the kernel's."""
    expected = np.dtype(expected)
    who = f"`{kernel_name}` takes" if kernel_name else "this kernel was built for"
    how = f"x.astype(np.{expected.name})" if expected.names is None else "x.astype(the record dtype)"
    return ConversionError(
        f"the {label} holds {np.dtype(found)}, but {who} {expected}: convert it first ({how}) or allocate "
        "it with that dtype; gpulab never converts arrays (docs/conversion.md)")


def same_type(found: np.dtype, expected: np.dtype) -> bool:
    """Whether an array of ``found`` holds ``expected``'s values as they are (byte order aside)."""
    return found == expected or found.newbyteorder("=") == expected.newbyteorder("=")


def host_items(x, element: ElementType, label: str, kernel_name: str | None = None) -> np.ndarray:
    """``x``'s items in C order, 1-D, of ``element``'s type in native byte order, by the rule above.

    Parameters
    ----------
    x : numpy.ndarray, NumPy scalar, Iota or Python values
        An input of a host call.
    element : ElementType
        The type the kernel takes.
    label : str
        What errors call ``x`` (``"input 0"``).
    kernel_name : str, optional
        The kernel's name, for errors.

    Raises
    ------
    ConversionError
        When ``x`` is an array of another type, or holds values that ``element`` cannot hold exactly.
    """
    dtype = element.dtype
    if isinstance(x, Iota):
        check_iota(x, dtype, label)
        require_host_memory(x.size * max(dtype.itemsize, Iota.dtype.itemsize),
                            f"the {label}, gpulab.iota({x.size}), stored on the host,")
        return (np.arange(x.size, dtype=Iota.dtype) + x.start).astype(dtype, copy=False)
    if isinstance(x, np.ma.MaskedArray):
        raise ConversionError(masked_refusal(f"the {label}", "x"))
    if hasattr(x, "dtype"):
        array = np.asarray(x)
        if not same_type(array.dtype, dtype):
            raise wrong_dtype(label, array.dtype, dtype, kernel_name)
        if not array.flags.c_contiguous:
            require_host_memory(array.nbytes, f"the {label}, a view of shape {array.shape} copied in C order,")
        return np.ravel(array, order="C").astype(dtype.newbyteorder("="), copy=False)
    return np.ravel(python_values(x, dtype, label), order="C")


def python_values(values, dtype: np.dtype, label: str) -> np.ndarray:
    """Python values (a number, a tuple for a record, a list of them) as an array of ``dtype``, exactly.

    Raises
    ------
    ConversionError
        When a value would change, naming the first that would.
    """
    dtype = np.dtype(dtype)
    converted = _convert(values, dtype)
    if converted is not None:
        original = np.asarray(values) if dtype.names is None else None
        if original is not None and original.dtype != object:
            if _round_trips(original, converted):
                return converted
        elif _same(converted.tolist(), values):  # records, and Python ints beyond 64 bits
            return converted
    raise _inexact(label, values, dtype)


def scalar(value, element: ElementType, label: str = "initial="):
    """``value`` as a NumPy scalar of ``element`` (``initial=``), by the rule above.

    A value already of the element type's scalar type passes as it is.

    Raises
    ------
    ConversionError
        When the conversion would change the value (``0.5`` into int32), or
        ``value`` is an array (an initial value is one item).
    """
    dtype = element.dtype
    if type(value) is dtype.type and (dtype.names is None or value.dtype == dtype):
        return value
    if isinstance(value, (list, np.ndarray)) and not (isinstance(value, np.ndarray) and value.ndim == 0):
        raise ConversionError(f"{label} must be one {element.name} value, not a {type(value).__name__}"
                              + (" (a record value is a tuple)" if element.is_record else ""))
    if isinstance(value, (np.generic, np.ndarray)):
        if value.dtype == dtype:
            return value[()]
        value = value.item() if dtype.names is None else value
    return python_values(value, dtype, label)[()]


def check_iota(x: Iota, dtype: np.dtype, label: str) -> None:
    """Refuse an iota whose items are not all exactly of ``dtype`` (its items are int64).

    Raises
    ------
    ConversionError
        Naming the first and last item and the range ``dtype`` holds exactly.
    """
    if x.size == 0 or (dtype.type is np.int64):
        return
    low, high = exact_integers(np.dtype(dtype))
    last = x.start + x.size - 1
    if not (low <= x.start and last <= high):
        holds = f"the integers {low} .. {high}" if low <= high else "no integers"
        raise ConversionError(
            f"the {label} is gpulab.iota({x.size}, start={x.start}), items {x.start} .. {last}, but the kernel "
            f"takes {np.dtype(dtype)}, which holds exactly {holds}: give the parameter a wider type, or a "
            "smaller iota")


@functools.cache
def exact_integers(dtype: np.dtype) -> tuple[int, int]:
    """The range of integers ``dtype`` holds every one of exactly (an empty range for a record)."""
    if dtype.names is not None:
        return 1, 0
    if dtype.kind == "b":
        return 0, 1
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return int(info.min), int(info.max)
    mantissa = np.finfo(dtype).nmant + 1  # complex: that of its parts
    return -(2 ** mantissa), 2 ** mantissa


def refuse_iota(record, xs) -> None:
    """Refuse :func:`gpulab.iota` as an input of a primitive that takes only arrays (all but map).

    Parameters
    ----------
    record : Primitive
        The primitive's registry record (``"iota"`` in its options where it takes one).
    xs : sequence
        The call's inputs.

    Raises
    ------
    ConversionError
        Saying how to make the array.
    """
    if "iota" not in record.options and any(isinstance(x, Iota) for x in xs):
        from .registry import PRIMITIVES

        *others, last = [name for name, other in PRIMITIVES.items() if "iota" in other.options]
        takers = f"{', '.join(others)} and {last}" if others else last
        raise ConversionError(f"{record.name} takes arrays; gpulab.iota is an input of {takers} only: make the "
                              "integers with np.arange(start, start + n) (cupy.arange on a GPU)")


def check_output(out, dtype: np.dtype, size: int, primitive: str) -> np.ndarray:
    """``out=`` of a host call: a writable NumPy array of exactly ``dtype`` holding ``size`` items.

    Raises
    ------
    ConversionError
        When it holds another type.
    HostArrayError, LengthMismatchError
        When it is not a NumPy array, or holds another number of items.
    """
    if not isinstance(out, np.ndarray):
        raise HostArrayError(f"out= must be a NumPy array on the host, not {type(out).__name__}")
    if not same_type(out.dtype, np.dtype(dtype)):
        raise wrong_dtype("out= array", out.dtype, dtype)
    if out.size != size:
        raise LengthMismatchError(f"out= holds {out.size} items, but {primitive} makes {size}")
    return out


# --- exactness -------------------------------------------------------------------
def _convert(values, dtype: np.dtype) -> np.ndarray | None:
    """``np.asarray(values, dtype)``, or None where NumPy refuses (a Python int beyond the type, a string)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ComplexWarning, overflow: the round trip finds them
            return np.asarray(values, dtype)
    except (TypeError, ValueError, OverflowError):
        return None


def _round_trips(original: np.ndarray, converted: np.ndarray) -> bool:
    """Whether ``converted`` holds the same values as ``original`` (NaN as NaN)."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        back = converted.astype(original.dtype)
        return back.shape == original.shape and bool(np.all((back == original) | (_nan(back) & _nan(original))))


def _nan(array: np.ndarray) -> np.ndarray:
    return np.isnan(array) if array.dtype.kind in "fc" else np.zeros(array.shape, bool)


def _same(ours, theirs) -> bool:
    """Whether nested Python values are equal, lists and tuples alike, NaN equal to NaN."""
    if isinstance(ours, (list, tuple)):
        return (isinstance(theirs, (list, tuple, np.void)) and len(ours) == len(theirs)
                and all(_same(a, b) for a, b in zip(ours, theirs)))
    if isinstance(theirs, np.generic):
        theirs = theirs.item()
    if _is_nan(ours) and _is_nan(theirs):
        return True
    try:
        return bool(ours == theirs)
    except (TypeError, ValueError):
        return False


def _is_nan(value) -> bool:
    return isinstance(value, (float, complex)) and (math.isnan(value.real) or math.isnan(value.imag))


def _inexact(label: str, values, dtype: np.dtype) -> ConversionError:
    """The error for values ``dtype`` cannot hold exactly: which one, what the type holds, how to convert."""
    shown = f"{label}{values!r}" if label.endswith("=") else f"{label} ({values!r})"
    if isinstance(values, (list, tuple)) and dtype.names is None:
        for index, value in enumerate(values):
            converted = _convert(value, dtype)
            if converted is None or not _same(converted.tolist(), value):
                shown = f"item {index} of {label} ({value!r})"
                break
    if len(shown) > 100:
        shown = shown[:97] + "..."
    wrong = next((v for v in (values if isinstance(values, (list, tuple)) else [values])
                  if not isinstance(v, (bool, int, float, complex, np.generic, tuple, list))), None)
    if wrong is not None:
        return ConversionError(f"{shown} is a {type(wrong).__name__}, not a number: an element type holds numbers, "
                               "bools or records (tuples of them)")
    if dtype.names is not None:
        kind, advice = "the record type", ("give a tuple whose fields each hold exactly their field's type, or a "
                                           "value of the record dtype")
    else:
        name = dtype.name
        kind = f"{'an' if name.startswith('i') else 'a'} {name}"
        low, high = exact_integers(dtype)
        if dtype.kind == "b":
            advice = "a bool holds False and True (0 and 1)"
        elif dtype.kind in "iu":
            advice = f"{name} holds the integers {low} .. {high}: give one of them (round or clip it yourself)"
        else:
            many = isinstance(values, (list, tuple))
            advice = (f"to accept the rounding, convert it yourself: "
                      f"{f'np.asarray(x, np.{name})' if many else f'np.{name}(x)'}")
    return ConversionError(f"{shown} is not exactly {kind}, and gpulab converts only values it keeps exactly "
                           f"(docs/conversion.md): {advice}")

"""Grading exercises: a learner's kernel against the expected result, with the host reference as the oracle.

:func:`check` runs the learner's function through a primitive (on the host
by default, so a grader needs no GPU) and compares it, item by item, with
what the exercise expects: the host reference's result of a model solution,
or given values. The result is true or false, says where it first differs,
and raises with that message from :meth:`Checked.assert_passed`, which is
what an nbgrader or otter-grader test cell wants.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

import numpy as np

from .. import registry
from ..errors import ArgumentError, GpulabError, KernelTimeoutError, described
from ..host import time_limit
from ..options import build_options
from ..primitives import call
from ..runtime.arrays import to_host

__all__ = ["Checked", "check"]


@dataclass(frozen=True)
class Checked:
    """The verdict of :func:`check`; true when the result is the expected one.

    Attributes
    ----------
    passed : bool
    message : str
        The verdict in words: what matched, or the first differing item.
    first : int or None
        Index of the first item that differs (``None`` when none does, or
        when the function was refused).
    got, expected : numpy.ndarray or None
        The two results, flattened (``got`` is ``None`` when the function was refused).
    """

    passed: bool
    message: str
    first: int | None = None
    got: np.ndarray | None = None
    expected: np.ndarray | None = None

    def __bool__(self) -> bool:
        return self.passed

    def __str__(self) -> str:
        return ("passed: " if self.passed else "failed: ") + self.message

    def _repr_html_(self) -> str:
        colour = "#1a7f37" if self.passed else "#cf222e"
        return f"<div style='color:{colour}'>{html.escape(str(self))}</div>"

    def assert_passed(self) -> None:
        """Raise ``AssertionError`` with the verdict unless it passed (a grader's test cell fails then)."""
        if not self.passed:
            raise AssertionError(str(self))


TIMEOUT_S = 10.0
"""How long a learner's function may run on the host in one :func:`check` by default: an exercise's inputs
take milliseconds, and a loop that never ends fails the check in this time instead of stalling the grading."""


def check(fn, primitive: str, inputs, expected, *, initial=None, device="host", rtol: float = 0.0,
          atol: float = 0.0, timeout: float = TIMEOUT_S, **options) -> Checked:
    """Run ``primitive(fn)`` on ``inputs`` and compare the result with ``expected``, item by item.

    Parameters
    ----------
    fn : function or Kernel
        The learner's function.
    primitive : str
        ``"map"``, ``"reduce"``, ``"scan"`` or ``"filter"``.
    inputs : array or sequence of arrays
        One array per input of ``fn`` (a single NumPy array is one input).
    expected : function, Kernel or array_like
        A model solution, run through the same primitive by the host
        reference (then the result's kind, integer or float say, must
        match too); or the expected values themselves (compared by value).
    initial : scalar, optional
        For reduce and scan.
    device : str, default "host"
        Where ``fn`` runs: the host reference (no GPU needed), or ``"cuda:N"``.
    rtol, atol : float, default 0
        Tolerances for floating-point items (``numpy.isclose``); 0 means identical.
    timeout : float, default 10
        Seconds ``fn`` may run on the host (its compile is not counted): past
        them it is stopped, within one step of its loops, and the check fails
        saying so (:func:`gpulab.host.time_limit`). Ctrl-C stops it too.
    **options
        Build options (:class:`gpulab.BuildOptions`, ``options=`` one made
        earlier), the primitive's own among them (``exclusive=True`` for scan).

    Returns
    -------
    Checked
        False, with the reason, when ``fn`` is refused (impure, wrongly
        typed, raising, past its time limit) or its result differs in size,
        kind or any item.

    Raises
    ------
    GpulabError
        When the model solution itself fails, or an argument or option is not one ``check`` takes (an error of
        the exercise, not of the learner).
    """
    record = registry.primitive(primitive)
    arguments, given = record.own_arguments(options)
    built = build_options(record, **given)
    for name, tolerance in (("rtol", rtol), ("atol", atol)):
        if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or not 0 <= tolerance < np.inf:
            raise ArgumentError(f"gpulab.check's {name}= is a finite number, 0 or more, not {described(tolerance)}")
    if isinstance(inputs, np.ndarray) or not isinstance(inputs, (list, tuple)):
        arrays = (inputs,)  # one input: what the primitive says of it, it says
    else:
        arrays = tuple(inputs)
    typed = callable(expected)  # a model solution's result has the types the exercise asks for
    if typed:
        want = to_host(call(primitive, expected, arrays, initial=initial, device="host", options=built, **arguments))
    else:
        want = _values(expected)
    name = getattr(fn, "__name__", type(fn).__name__)
    try:
        with time_limit(timeout):
            got = to_host(call(primitive, fn, arrays, initial=initial, device=device, options=built, **arguments))
    except KernelTimeoutError as exc:
        return Checked(False, f"{primitive}({name}) did not finish: {exc}", expected=np.ravel(want))
    except GpulabError as exc:
        return Checked(False, f"{primitive}({name}) was refused: {exc}", expected=np.ravel(want))
    return _compare(f"{primitive}({name})", np.ravel(np.asarray(got)), np.ravel(want), rtol, atol, typed)


def _values(expected) -> np.ndarray:
    """The expected values given as numbers, bools or records (an array, a list); an ArgumentError for others."""
    try:
        values = np.asarray(expected)
    except (TypeError, ValueError) as exc:  # a ragged list
        raise ArgumentError(f"gpulab.check's expected values do not make an array ({exc}); give one value per "
                            "item of the result, or a model solution (a function)") from None
    if values.dtype.names is None and values.dtype.kind not in "biufc":
        example = f" such as {described(values.flat[0])}" if values.size else ""
        raise ArgumentError(f"gpulab.check's expected is a model solution (a function) or the expected values "
                            f"(numbers, bools or records), not {values.dtype} items{example}")
    return values


def _compare(what: str, got: np.ndarray, want: np.ndarray, rtol: float, atol: float, typed: bool) -> Checked:
    if typed and _kind(got) != _kind(want):
        return Checked(False, f"{what} gives {got.dtype} items where {want.dtype} ones are expected",
                       got=got, expected=want)
    shared = min(got.size, want.size)
    same = _same(got[:shared], want[:shared], rtol, atol)
    wrong = np.flatnonzero(~same)
    if wrong.size:
        first = int(wrong[0])
        return Checked(False, f"{what} differs at {wrong.size} of {shared} items, first at item {first}: "
                              f"got {got[first]!s}, expected {want[first]!s}", first, got, want)
    if got.size != want.size:
        return Checked(False, f"{what} gives {got.size} items, {want.size} expected (the first {shared} match)",
                       shared, got, want)
    tolerance = f" within rtol={rtol:g}, atol={atol:g}" if rtol or atol else ""
    return Checked(True, f"{what} gives the expected result ({_items(want.size)}{tolerance})", None, got, want)


def _items(count: int) -> str:
    return f"{count} item" if count == 1 else f"{count} items"


def _kind(values: np.ndarray) -> str:
    """What a grade cares about in a type: bool, integer, float, complex or a record (not the width)."""
    return "record" if values.dtype.names else {"u": "i"}.get(values.dtype.kind, values.dtype.kind)


def _same(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> np.ndarray:
    if got.dtype.names:
        return got == want
    if got.dtype.kind in "fc":
        return np.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    return got == want

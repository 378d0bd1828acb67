"""A small grammar of kernels for hypothesis: arithmetic, comparisons and conditionals over element types.

``kernels()`` draws the source of a two-input map kernel ``f(a: T, b: T) -> T``
(sometimes with a mistake a user could make: a string, an undefined name, an
impure call) and ``define`` turns it into a function whose source numba and
gpulab can read, as a notebook cell's is. ``accepted_by_both`` holds the host
and the device to one rule: both accept a kernel, or both refuse it with the
same gpulab error. ``FUZZ`` runs without shrinking (a failure prints its
kernel's source), so a GPU run never spends minutes minimising one.
"""

from __future__ import annotations

import functools
import hashlib
import linecache
import math
import warnings

import numpy as np
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st

import gpulab
from gpulab.errors import GpulabError

FUZZ = settings(max_examples=30, deadline=None, derandomize=True, database=None,
                phases=[Phase.explicit, Phase.generate], suppress_health_check=[HealthCheck.too_slow])

TYPES = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "i64": np.int64, "u8": np.uint8, "bool": np.bool_}
INTEGRAL = ("i32", "i64", "u8", "bool")
MISTAKES = ('"text"', "undefined_name", "print(a)", "len(a)", "a.__class__", "np.cbrt(a)", "(a, b)", "[a][0]")


def _constants(type_name: str):
    if type_name in INTEGRAL:
        return st.integers(-3, 7).map(str)
    return st.sampled_from(["0.5", "2.0", "-1.25", "3.0", "1e-3"]).map(lambda c: f"{type_name}({c})")


@functools.cache
def _expressions(type_name: str):
    leaves = st.one_of(st.sampled_from(["a", "b"]), _constants(type_name))
    operators = ["+", "-", "*", "//", "%"] + ([] if type_name in INTEGRAL else ["/"])

    def extend(inner):
        binary = st.tuples(inner, st.sampled_from(operators), inner).map(lambda t: f"({t[0]} {t[1]} {t[2]})")
        calls = st.tuples(st.sampled_from(["min", "max"]), inner, inner).map(lambda t: f"{t[0]}({t[1]}, {t[2]})")
        absolute = inner.map(lambda e: f"abs({e})")
        choice = st.tuples(_conditions(inner), inner, inner).map(lambda t: f"({t[1]} if {t[0]} else {t[2]})")
        return st.one_of(binary, calls, absolute, choice)

    return st.recursive(leaves, extend, max_leaves=8)


def _conditions(expressions):
    comparison = st.tuples(expressions, st.sampled_from(["<", "<=", ">", ">=", "==", "!="]), expressions)
    return comparison.map(lambda t: f"{t[0]} {t[1]} {t[2]}")


@st.composite
def kernels(draw, types=tuple(TYPES), mistakes: bool = True):
    """``(source, type_name)`` of a kernel ``f(a, b)``: a return, or an ``if`` with a return in each branch."""
    type_name = draw(st.sampled_from(types))
    expressions = _expressions(type_name)
    first, second = draw(expressions), draw(expressions)
    if mistakes and draw(st.integers(0, 9)) == 0:
        first = draw(st.sampled_from(MISTAKES))
    header = f"def f(a: {type_name}, b: {type_name}) -> {type_name}:\n"
    if draw(st.booleans()):
        condition = draw(_conditions(expressions))
        body = f"    if {condition}:\n        return {first}\n    return {second}\n"
    else:
        body = f"    c = {first}\n    return {type_name}(c) if c == c else {second}\n" if draw(
            st.booleans()) else f"    return {first}\n"
    return header + body, type_name


def define(source: str):
    """The function ``f`` that ``source`` defines, with its source in linecache under a name of its own."""
    filename = f"<fuzz-{hashlib.sha256(source.encode()).hexdigest()[:16]}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {name: getattr(gpulab, name if name != "bool" else "bool_") for name in TYPES}
    namespace.update({"np": np, "math": math})
    exec(compile(source, filename, "exec"), namespace)
    return namespace["f"]


def inputs(type_name: str, n: int = 64, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Two arrays of ``n`` items of the type, zeros, negatives and edge values included."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(TYPES[type_name])
    if dtype.kind == "b":
        return rng.integers(0, 2, n).astype(dtype), rng.integers(0, 2, n).astype(dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        values = np.concatenate([[0, 1, info.max, info.min], rng.integers(max(info.min, -50), 50, n - 4)])
        return values.astype(dtype), rng.permutation(values).astype(dtype)
    values = np.concatenate([[0.0, -0.0, 1.0, -2.5], rng.normal(0, 10, n - 4)]).astype(dtype)
    return values, rng.permutation(values)


def accepted_by_both(source: str, on_host, on_device):
    """Run ``on_host()`` then ``on_device()``; both must succeed, or both raise the same gpulab error class.

    Returns the host's result (``None`` when both refused). Anything else a
    call raises is not a gpulab error and fails the test as it is. NumPy's
    'divide by zero' warnings are ignored: the value is the result.
    """
    outcomes = []
    for attempt in (on_host, on_device):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                outcomes.append((attempt(), None))
        except GpulabError as exc:
            outcomes.append((None, exc))
    (result, host_error), (_, device_error) = outcomes
    assert type(host_error) is type(device_error), (
        f"the host and the device disagree on\n{source}\nhost: {host_error!r}\ndevice: {device_error!r}")
    return result

"""Every primitive x element type that the two frontends are held to each other on (tests/nocuda/test_frontends.py
builds them, tests/gpu/test_frontends_on_device.py runs them): the operators, their inputs, and one call of each."""

import numpy as np
import pytest

import gpulab

PAIR = np.dtype([("value", np.float32), ("index", np.int32)], align=True)
TYPES = ["int8", "int16", "int32", "int64", "float16", "float32", "float64", "bool", PAIR]


def add(a, b):
    return a + b


def argmin(a, b):
    return a if a.value <= b.value else b


def twice(x):
    return x + x


def value_of(p):
    return p.value * 2


def positive(x):
    return x > 0


def is_clear(x):
    return not x


def sixteenth(x):
    return x >> 4


def scaled_bin(x):
    return gpulab.i32(x * 16)


def pair_bin(p):
    return p.index & 7


def _fold(element):
    return argmin if element is PAIR else add


OPERATORS = {
    "map": lambda t: value_of if t is PAIR else twice,
    "reduce": _fold, "scan": _fold, "segmented_reduce": _fold, "reduce_by_key": _fold,
    "filter": lambda t: is_clear if t == "bool" else None if t is PAIR else positive,
    "histogram": lambda t: pair_bin if t is PAIR else None if t == "bool" else scaled_bin if "float" in t else sixteenth,
    "sort": lambda t: value_of if t is PAIR else twice if t in ("int32", "int64", "float32", "float64") else None,
}
"""Per primitive, its operator for an element type (None: the primitive takes no such operator)."""


def cases():
    """``(primitive, fn, element)`` of every case, as pytest params named ``primitive-type``."""
    for primitive, make in OPERATORS.items():
        for element in TYPES:
            fn = make(element)
            if fn is None or (element == "bool" and primitive not in ("map", "filter")):
                continue
            yield pytest.param(primitive, fn, element, id=f"{primitive}-{'record' if element is PAIR else element}")


def inputs(primitive, element, n, seed=40):
    """``n`` items of ``element`` for ``primitive`` (a histogram's integers are not negative)."""
    rng = np.random.default_rng(seed)
    if element is PAIR:
        xs = np.zeros(n, PAIR)
        xs["value"], xs["index"] = rng.standard_normal(n), np.arange(n)
        return xs
    if element == "bool":
        return rng.random(n) < 0.5
    if "int" in element:
        return rng.integers(0 if primitive == "histogram" else -100, 100, n).astype(element)
    return rng.standard_normal(n).astype(element)


def call(primitive, fn, xs, **given):
    """``primitive`` of ``fn`` on ``xs`` (host or device arrays: ``given`` says where, and the options), as a tuple
    of its results."""
    n = len(xs)
    if primitive == "map":
        found = gpulab.map(fn, xs, **given)
    elif primitive == "filter":
        found = gpulab.filter(fn, xs, **given)
    elif primitive == "sort":
        found = gpulab.sort(xs, key=fn, **given)
    elif primitive == "histogram":
        found = gpulab.histogram(fn, xs, bins=16, **given)
    elif primitive == "reduce":
        found = gpulab.reduce(fn, xs, _first(xs), associative=True, **given)
    elif primitive == "scan":
        found = gpulab.scan(fn, xs, associative=True, **given)
    elif primitive == "segmented_reduce":
        offsets = np.array([0, min(7, n), min(7, n), max(min(7, n), n // 2), n])
        found = gpulab.segmented_reduce(fn, xs, _like(xs, offsets), _first(xs), associative=True, **given)
    else:
        found = gpulab.reduce_by_key(fn, _like(xs, np.arange(n) // 9), xs, associative=True, **given)
    return found if isinstance(found, tuple) else (found,)


def _first(xs):
    """The first item of ``xs`` as a host scalar (a reduce's initial value)."""
    return (xs if isinstance(xs, np.ndarray) else xs[:1].get())[0]


def _like(xs, array):
    """``array`` where ``xs`` lives (a CuPy array beside CuPy inputs)."""
    if isinstance(xs, np.ndarray):
        return array
    import cupy

    return cupy.asarray(array)

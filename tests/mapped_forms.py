"""Fused inputs (``gpulab.mapped``) in every composition issue 16 names; shared by the CPU and the GPU tests.

Each case makes its inputs with ``xp`` (NumPy for the host, CuPy for a
device) and says what NumPy alone computes for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

import gpulab
from gpulab import bool_, f32, f64, i32, i64

N = 5000


def bind(xp) -> None:
    """Make the captured array with ``xp``."""
    global table
    table = xp.asarray(np.arange(N, dtype=np.float32) % 7)


bind(np)


def mul(a: f32, b: f32) -> f32:
    return a * b


def add(a: f32, b: f32) -> f32:
    return a + b


def add64(a: f64, b: f64) -> f64:
    return a + b


def iadd(a: i64, b: i64) -> i64:
    return a + b


def imul(a: i32, b: i32) -> i64:
    return i64(a) * i64(b)


def square(i: i64) -> i64:
    return i * i


def looked_up(i: i64) -> f32:
    return table[i] * f32(2)


def widen(x: f32) -> f64:
    return f64(x) + 0.5


def positive(x: f32) -> bool_:
    return x > 0


def twice(x: f32) -> f32:
    return x + x


@dataclass(frozen=True)
class Case:
    """A primitive over mapped inputs, and the NumPy meaning of it."""

    name: str
    run: Callable  # (xp, device) -> result
    expected: Callable  # () -> NumPy result


def _arrays(xp):
    rng = np.random.default_rng(11)
    a, b = rng.standard_normal(N).astype(np.float32), rng.standard_normal(N).astype(np.float32)
    i, j = rng.integers(-1000, 1000, N).astype(np.int32), rng.integers(-1000, 1000, N).astype(np.int32)
    return (a, b, i, j) if xp is np else tuple(xp.asarray(x) for x in (a, b, i, j))


def _host():
    return _arrays(np)


CASES = [
    Case("dot", lambda xp, d: gpulab.reduce(add, gpulab.mapped(mul, *_arrays(xp)[:2]), 0.0, device=d),
         lambda: np.sum(_host()[0].astype(np.float64) * _host()[1])),
    Case("integer-dot", lambda xp, d: gpulab.reduce(iadd, gpulab.mapped(imul, *_arrays(xp)[2:]), 0, device=d),
         lambda: np.sum(_host()[2].astype(np.int64) * _host()[3])),
    Case("sum-of-squares-of-iota", lambda xp, d: gpulab.reduce(iadd, gpulab.mapped(square, gpulab.iota(N)), 0,
                                                               device=d),
         lambda: np.sum(np.arange(N, dtype=np.int64) ** 2)),
    Case("captured-in-mapped", lambda xp, d: gpulab.map(add, gpulab.mapped(looked_up, gpulab.iota(N)),
                                                        _arrays(xp)[0], device=d),
         lambda: (np.arange(N, dtype=np.float32) % 7) * 2 + _host()[0]),
    Case("nested", lambda xp, d: gpulab.reduce(add64, gpulab.mapped(widen, gpulab.mapped(mul, *_arrays(xp)[:2])),
                                               0.0, device=d),
         lambda: np.sum(_host()[0] * _host()[1] + 0.5, dtype=np.float64)),
    Case("scan", lambda xp, d: gpulab.scan(iadd, gpulab.mapped(imul, *_arrays(xp)[2:]), device=d),
         lambda: np.cumsum(_host()[2].astype(np.int64) * _host()[3])),
    Case("filter", lambda xp, d: gpulab.filter(positive, gpulab.mapped(mul, *_arrays(xp)[:2]), device=d),
         lambda: (lambda p: p[p > 0])(_host()[0] * _host()[1])),
    Case("map", lambda xp, d: gpulab.map(twice, gpulab.mapped(mul, *_arrays(xp)[:2]), device=d),
         lambda: 2 * (_host()[0] * _host()[1])),
]

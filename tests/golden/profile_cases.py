"""The kernels whose measured profiles are golden files (tests/golden/profiles/), shared by the GPU script that
records them (bench/device/record_profiles.py), the GPU tests and the CPU tests that read the recordings.

Each case is a primitive, a function and how to make its inputs; the captured arrays are globals of this module,
made by each case's ``arguments``. ``exp64`` and ``exp_scaled`` compute a float64 ``exp`` on line 3 of their
pane (the ``def`` is line 1): ``exp64`` first uses its loaded input on line 2 (where the wait for the load lands),
``exp_scaled`` on line 3.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from gpulab import f32, f64, i32, i64

source = table = None  # captured arrays, bound by inputs()
STRIDE = 32  # items between two threads' reads in `strided`: 128 bytes of float32, one sector each


def exp64(x: f64) -> f64:
    y = x * 2.0
    z = math.exp(y)
    return z + 1.0


def exp_scaled(x: f64) -> f64:
    scale = 2.0
    z = math.exp(x * scale)
    return z + 1.0


def add32(a: f32, b: f32) -> f32:
    return a + b


def positive(x: f32) -> bool:
    return x > f32(0)


def gather(j: i32) -> f32:
    return table[j]


def contiguous(i: i64) -> f32:
    return source[i]


def strided(i: i64) -> f32:
    return source[i * STRIDE]


def log_add_exp(a: f64, b: f64) -> f64:
    m = max(a, b)
    return m + math.log(math.exp(a - m) + math.exp(b - m))


def divide(a: f32, b: f32) -> f32:
    return a / b


def promoted(a: f32, b: f32) -> f32:
    return a * 0.75 + b


def single(a: f32, b: f32) -> f32:
    return a * f32(0.75) + b


def log_add_exp32(a: f32, b: f32) -> f32:
    return max(a, b) + math.log1p(math.exp(-abs(a - b)))


def axpb(x: f32) -> f32:
    return x * f32(2) + f32(1)


@dataclass(frozen=True)
class Case:
    """One profiled call: ``primitive(function)`` on ``n`` items; ``arguments(xp, n)`` makes its inputs."""

    name: str
    primitive: str
    function: Callable
    n: int
    arguments: Callable
    options: dict

    def make(self, xp) -> list:
        """The call's positional arguments (and binds the captured arrays), made with ``xp`` (numpy or cupy)."""
        return self.arguments(xp, self.n)


def _uniform(dtype, count=1):
    def make(xp, n):
        rng = np.random.default_rng(43)
        return [xp.asarray(rng.uniform(-1, 1, n).astype(dtype)) for _ in range(count)]

    return make


def _every_other(xp, n):
    rng = np.random.default_rng(43)
    return [xp.asarray(rng.uniform(-1, 1, 2 * n).astype(np.float32))[::2]]


def _gather(xp, n):
    global table
    rng = np.random.default_rng(43)
    table = xp.asarray(rng.standard_normal(n).astype(np.float32))
    return [xp.asarray(rng.permutation(n).astype(np.int32))]


def _reads(scale):
    def make(xp, n):
        import gpulab

        global source
        source = xp.asarray(np.arange(n * scale, dtype=np.float32))
        return [gpulab.iota(n)]

    return make


CASES = {case.name: case for case in (
    Case("map-exp64", "map", exp64, 1 << 22, _uniform(np.float64), {}),
    Case("map-exp64-line3", "map", exp_scaled, 1 << 22, _uniform(np.float64), {}),
    Case("reduce-add32", "reduce", add32, 1 << 24, _uniform(np.float32), {}),
    Case("scan-add32", "scan", add32, 1 << 24, _uniform(np.float32), {}),
    Case("filter-positive", "filter", positive, 1 << 24, _uniform(np.float32), {}),
    Case("gather", "map", gather, 1 << 22, _gather, {}),
    Case("read-contiguous", "map", contiguous, 1 << 22, _reads(1), {}),
    Case("read-strided", "map", strided, 1 << 22, _reads(STRIDE), {}),
    Case("scan-spill", "scan", log_add_exp, 1 << 22, _uniform(np.float64), {}),
    Case("map-divide", "map", divide, 1 << 22, _uniform(np.float32, 2), {}),
    # notebook 10's three fixes, before and after (it reads these where it cannot measure)
    Case("map-promoted", "map", promoted, 1 << 24, _uniform(np.float32, 2), {}),
    Case("map-single", "map", single, 1 << 24, _uniform(np.float32, 2), {}),
    Case("scan-log-add-exp32", "scan", log_add_exp32, 1 << 22, _uniform(np.float32), {}),
    Case("map-axpb-strided", "map", axpb, 1 << 24, _every_other, {}),
    Case("map-axpb-contiguous", "map", axpb, 1 << 24, _uniform(np.float32), {}),
)}
"""Every case by name, in the order they are recorded."""

"""Kernels that read captured arrays, in every form issue 16 names; shared by the CPU and the GPU tests.

The arrays are globals of this module, made by :func:`arrays` with NumPy for
the host or CuPy for a device and bound by :func:`bind`; each form says which
primitive runs it and on what inputs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

import gpulab
from gpulab import bool_, c64, f16, f32, f64, i8, i32, i64, u32

WIDTH = 16
RECORD = np.dtype([("weight", np.float32), ("count", np.int32)], align=True)

line = grid = table = strided = column = records = halves = waves = flags = small = cube = allowed = None


def arrays(xp) -> dict:
    """Every captured array, made with ``xp`` (``numpy`` or ``cupy``): 1-D, N-D, strided views, each element kind."""
    rng = np.random.default_rng(16)
    host = {
        "line": rng.standard_normal(1000).astype(np.float32),
        "grid": rng.standard_normal((12, WIDTH)),
        "table": rng.integers(0, 1000, 300).astype(np.int32),
        "records": np.array([(w, c) for w, c in zip(rng.standard_normal(50), rng.integers(-5, 5, 50))], RECORD),
        "halves": rng.standard_normal(64).astype(np.float16),
        "waves": (rng.standard_normal(40) + 1j * rng.standard_normal(40)).astype(np.complex64),
        "flags": rng.integers(0, 2, 70).astype(np.bool_),
        "small": rng.integers(-100, 100, 90).astype(np.int8),
        "cube": rng.standard_normal((3, 4, 5)).astype(np.float32),
        "allowed": rng.integers(0, 2, 500).astype(np.bool_),
    }
    made = {name: xp.asarray(value) for name, value in host.items()}
    made["strided"] = xp.asarray(np.arange(3000, dtype=np.float32))[::3]  # a view: every third item
    made["column"] = made["grid"].T  # a transposed (Fortran-order) view
    return made


def bind(values: dict) -> None:
    """Make ``values`` the arrays the kernels capture."""
    globals().update(values)


def smooth(i: i64) -> f32:
    return (line[i - 1] + line[i] + line[i + 1]) / f32(3)


def laplace(k: i64) -> f64:
    i = k // (WIDTH - 2)
    j = k % (WIDTH - 2)
    centre = grid[i + 1, j + 1]
    return grid[i, j + 1] + grid[i + 2, j + 1] + grid[i + 1, j] + grid[i + 1, j + 2] - 4 * centre


def gather(k: i64) -> f32:
    return line[table[k]]


def from_the_end(i: i64) -> f32:
    return line[-1 - i]


def measured(i: i64) -> i64:
    return len(line) + grid.shape[0] * grid.shape[1] + grid.ndim + line.size + cube.shape[2] + i


def every_third(i: i64) -> f32:
    return strided[i] * f32(2)


def transposed(k: i64) -> f64:
    rows = column.shape[0]
    return column[k % rows, k // rows]


def three_d(k: i64) -> f32:
    return cube[k // 20, k // 5 % 4, k % 5]


def weighted(i: i64) -> f32:
    return records[i].weight * f32(records[i].count)


def unsigned_index(i: u32) -> f32:
    return line[i]


def half(i: i64) -> f16:
    return halves[i]


def squared_wave(i: i64) -> c64:
    return waves[i] * waves[i]


def flag(i: i64) -> bool_:
    return flags[i]


def shifted(i: i64) -> i32:
    return i32(small[i]) + i32(small[i - 1])


def guarded(i: i64) -> f32:
    return line[i] if i < len(line) else f32(0)


def closure_reader(values):
    """A kernel that captures ``values`` through its closure, not a global."""

    def read_closure(i: i64) -> f32:
        return values[i] + f32(1)

    return read_closure


def floor_min(a: f32, b: f32) -> f32:
    return min(a, b, line[0])


def capped_max(a: i32, b: i32) -> i32:
    return max(a, b, i32(table[0]))


def listed(i: i64) -> bool_:
    return allowed[i]


@dataclass(frozen=True)
class Form:
    """One way of reading a captured array: a primitive, its function and its inputs."""

    primitive: str
    function: Callable
    inputs: Callable  # xp -> the primitive's inputs (iota, or arrays made with xp)
    initial: object = None
    options: dict = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"{self.primitive}-{self.function.__name__}"

    def kernel(self, values: dict):
        """The function, made for ``values`` when it captures through a closure."""
        return self.function(values["line"]) if self.function is closure_reader else self.function


def _iota(n, start=0):
    return lambda xp: [gpulab.iota(n, start=start)]


FORMS = [
    Form("map", smooth, _iota(998, start=1)),
    Form("map", laplace, _iota(10 * (WIDTH - 2))),
    Form("map", gather, _iota(300)),
    Form("map", from_the_end, _iota(1000)),
    Form("map", measured, _iota(5)),
    Form("map", every_third, _iota(1000)),
    Form("map", transposed, _iota(12 * WIDTH)),
    Form("map", three_d, _iota(60)),
    Form("map", weighted, _iota(50)),
    Form("map", unsigned_index, lambda xp: [xp.arange(0, 1000, 7, dtype=np.uint32)]),
    Form("map", half, _iota(64)),
    Form("map", squared_wave, _iota(40)),
    Form("map", flag, _iota(70)),
    Form("map", shifted, _iota(89, start=1)),
    Form("map", guarded, _iota(1200)),
    Form("map", closure_reader, _iota(1000)),
    Form("reduce", floor_min, lambda xp: [xp.asarray(np.linspace(-3, 3, 5000, dtype=np.float32))], initial=10.0),
    Form("scan", capped_max, lambda xp: [xp.asarray(np.arange(-2000, 2000, dtype=np.int32) % 1777)]),
    Form("filter", listed, lambda xp: [xp.asarray(np.arange(500, dtype=np.int64))]),
]
"""Every form; ``index`` of an ``ids`` below picks one."""


def run(form: Form, values: dict, device: str):
    """Run ``form`` on ``device`` with the arrays ``values`` bound, as a one-shot primitive call."""
    bind(values)
    xp = np if device == "host" else __import__("cupy")
    inputs = form.inputs(xp)
    fn = getattr(gpulab, form.primitive)
    if form.primitive == "reduce":
        return fn(form.kernel(values), *inputs, form.initial, device=device, **form.options)
    return fn(form.kernel(values), *inputs, device=device, **form.options)

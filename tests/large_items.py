"""Records too large for a tile's shared memory at its usual shape, and operators on them, for the tests of
builds in smaller tiles (tests/nocuda/test_large_items.py, tests/gpu/test_large_items_on_device.py)."""

import numpy as np


def record(size: int) -> np.dtype:
    """A record of ``size`` bytes: float32 fields ``f0``, ``f1``, ..."""
    return np.dtype([(f"f{i}", np.float32) for i in range(size // 4)], align=True)


def larger(a, b):
    """The item of larger ``f0``, the first of equal ones: associative, not commutative (the order shows)."""
    return b if b.f0 > a.f0 else a


def positive(a):
    return a.f0 > 0


def items(dtype: np.dtype, n: int, seed: int = 0) -> np.ndarray:
    """``n`` records of ``dtype`` whose fields hold small integers (ties in ``f0`` show which is kept)."""
    rng = np.random.default_rng(seed)
    found = np.zeros(n, dtype)
    for name in dtype.names:
        found[name] = rng.integers(-50, 50, n)
    return found

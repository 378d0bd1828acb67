"""Fused inputs on a GPU (issue 16): every composition gives what NumPy does, in one launch with no temporary."""

import sys
from pathlib import Path

import numpy as np
import pytest

import gpulab
from gpulab.errors import KernelTypeError

pytestmark = pytest.mark.gpu
cupy = pytest.importorskip("cupy")

sys.path.insert(0, str(Path(__file__).parents[1]))
import mapped_forms as forms  # noqa: E402


@pytest.fixture(autouse=True)
def device_table():
    forms.bind(cupy)
    yield
    forms.bind(np)


@pytest.mark.parametrize("case", forms.CASES, ids=lambda c: c.name)
def test_every_composition_gives_numpys_result(case):
    got, want = gpulab.to_host(case.run(cupy, "cuda:0")), np.asarray(case.expected())
    assert got.shape == want.shape
    if want.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)
    else:
        np.testing.assert_array_equal(got, want)


def test_a_fused_dot_product_writes_no_temporary():
    n = 1 << 24
    a, b = cupy.ones(n, np.float32), cupy.full(n, 2, np.float32)
    gpulab.reduce(forms.add, gpulab.mapped(forms.mul, a, b), 0.0, device="cuda:0")  # build, scratch
    pool = cupy.get_default_memory_pool()
    before = pool.used_bytes() + pool.free_bytes()
    total = gpulab.reduce(forms.add, gpulab.mapped(forms.mul, a, b), 0.0, device="cuda:0")
    assert float(gpulab.to_host(total)) == 2.0 * n
    assert pool.used_bytes() + pool.free_bytes() - before < n  # no n-item temporary was allocated


def test_a_reusable_plan_takes_new_arrays_of_the_same_kind():
    plan = gpulab.make_reduce(forms.add, gpulab.mapped(forms.mul, np.float32, np.float32))
    for n in (10, 100_000):
        a, b = cupy.arange(n, dtype=np.float32), cupy.ones(n, np.float32)
        assert float(gpulab.to_host(plan(gpulab.mapped(forms.mul, a, b), 0.0))) == pytest.approx(n * (n - 1) / 2,
                                                                                               rel=1e-5)
    assert len(plan.builds) == 1
    with pytest.raises(KernelTypeError, match=r"made for gpulab.mapped\(mul, ...\)"):
        plan(cupy.ones(3, np.float32), 0.0)


def test_an_out_of_bounds_read_in_a_mapped_function_raises_on_the_device():
    with pytest.raises(gpulab.errors.KernelIndexError, match=r"`looked_up` read table\[5000\], outside `table`"):
        gpulab.reduce(forms.add, gpulab.mapped(forms.looked_up, gpulab.iota(forms.N + 1)), 0.0, device="cuda:0")
    total = gpulab.reduce(forms.add, gpulab.mapped(forms.looked_up, gpulab.iota(forms.N)), 0.0, device="cuda:0")
    assert float(gpulab.to_host(total)) == pytest.approx(float(np.sum(np.arange(forms.N) % 7) * 2))

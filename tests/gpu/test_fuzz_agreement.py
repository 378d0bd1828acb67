"""Fuzz on a GPU: for every accepted kernel of the grammar, the device's map equals the host's, bit for bit.

FMA contraction is off (``fma=False``), so float results must match exactly
too (NaN matching NaN); integers and bools always must.
"""

import warnings

import numpy as np
import pytest
from fuzz_kernels import define, inputs, kernels
from hypothesis import HealthCheck, given, settings

import gpulab
from gpulab.errors import GpulabError
from gpulab.host import compare

pytestmark = pytest.mark.gpu


@settings(max_examples=60, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(kernels(mistakes=False))
def test_host_and_device_agree_on_every_accepted_kernel(drawn):
    import cupy

    source, type_name = drawn
    a, b = inputs(type_name, n=4096)
    fn = define(source)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            want = gpulab.map(fn, a, b, device="host")
    except GpulabError:
        with pytest.raises(GpulabError):
            gpulab.map(fn, cupy.asarray(a), cupy.asarray(b), device="cuda:0", fma=False)
        return
    got = gpulab.to_host(gpulab.map(fn, cupy.asarray(a), cupy.asarray(b), device="cuda:0", fma=False))
    check = compare(got, want, want.dtype)
    assert check.exact, f"{source}\n{check.message}"

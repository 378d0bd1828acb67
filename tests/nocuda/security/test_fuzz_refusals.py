"""Fuzz: every kernel of a small grammar is accepted or refused with a gpulab error, never a raw exception.

The kernels come from ``tests/fuzz_kernels.py`` (arithmetic, comparisons and
conditionals over the element types, now and then with a user's mistake);
each runs on the host backend and compiles for sm_90. The GPU half, that the
host and the device agree on every accepted kernel, is tests/gpu/test_fuzz_agreement.py.
"""

import warnings

import numpy as np
from fuzz_kernels import define, inputs, kernels
from hypothesis import HealthCheck, given, settings

import gpulab
from gpulab.errors import GpulabError

FUZZ = settings(max_examples=30, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(kernels())
def test_every_generated_kernel_runs_or_is_refused_with_a_gpulab_error(drawn):
    source, type_name = drawn
    a, b = inputs(type_name, n=16)
    try:
        fn = define(source)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's 'divide by zero': the value is the result
            result = gpulab.map(fn, a, b, device="host")
        assert result.dtype == a.dtype and result.shape == a.shape
        gpulab.compile("map", fn, target="sm_90", lineinfo=False)
    except GpulabError:
        pass  # refused clearly: fine


def test_the_grammar_makes_both_kinds():
    """The fuzz test means something only if some kernels are accepted and some refused."""
    from hypothesis import find

    find(kernels(), lambda d: '"text"' in d[0] or "undefined_name" in d[0], settings=FUZZ)
    accepted = find(kernels(mistakes=False), lambda d: " if " in d[0] and "//" in d[0], settings=FUZZ)
    fn = define(accepted[0])
    assert gpulab.map(fn, *inputs(accepted[1], n=4), device="host").size == 4
    assert np.dtype(gpulab.element_type(fn.__annotations__["a"]).dtype).kind in "biuf"

"""One-shot calls find their plan in one lookup, and still see a redefined helper and new uniform types.

Plans are made, not run: a plan builds on its first call, so these need no GPU.
"""

import numpy as np
import pytest

import gpulab
from gpulab.device import Device
from gpulab.primitives import dispatch
from gpulab.registry import PRIMITIVES

A_GPU = Device("cuda:0", "an H200 as described, never touched here", (9, 0), 2**37, 132)
MAP = PRIMITIVES["map"]


@gpulab.kernel
def helper(x: gpulab.i64) -> gpulab.i64:
    return x + 1


def calls_helper(x):
    return helper(x)


scale = 2


def scaled(x):
    return x * scale


def plan_of(fn, dtype=np.int64, **options):
    return dispatch.plan_for(MAP, fn, [np.empty(3, dtype)], A_GPU, gpulab.BuildOptions(**options))


def test_a_repeated_call_gets_the_same_plan():
    first = plan_of(calls_helper)
    assert plan_of(calls_helper) is first
    assert plan_of(calls_helper, dtype=np.int32) is not first
    assert plan_of(calls_helper, lto=False) is not first


def test_a_redefined_helper_makes_a_new_plan(monkeypatch):
    first = plan_of(calls_helper)

    def helper(x: gpulab.i64) -> gpulab.i64:  # what the next notebook cell defines
        return x * 100

    monkeypatch.setitem(globals(), "helper", gpulab.kernel(helper))
    second = plan_of(calls_helper)
    assert second is not first
    assert second.kernel.analysis.references["helper"] is globals()["helper"]
    assert plan_of(calls_helper) is second


def test_a_changed_uniform_keeps_the_plan_and_is_read_at_each_call(monkeypatch):
    first = plan_of(scaled)
    assert first.uniform_values() == (2,)
    monkeypatch.setitem(globals(), "scale", 3.5)
    assert plan_of(scaled) is first
    assert first.uniform_values() == (3.5,)  # a float now: the plan builds for float64 uniforms on its next call


@pytest.fixture(autouse=True)
def no_plans_between_tests():
    dispatch.PLANS.clear()
    dispatch._RECENT.clear()
    yield
    dispatch.PLANS.clear()
    dispatch._RECENT.clear()

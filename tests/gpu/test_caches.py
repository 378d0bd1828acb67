"""In-process caches on the GPU: plans keyed by the checked kernel, modules unloaded once dropped."""

import gc

import numpy as np
import pytest

import gpulab
from gpulab.runtime import module
from gpulab.device import current_device

pytestmark = pytest.mark.gpu
cupy = pytest.importorskip("cupy")


@gpulab.kernel
def helper(x: gpulab.i64) -> gpulab.i64:
    return x + 1


def calls_helper(x):
    return helper(x)


def test_a_redefined_helper_is_seen_by_the_next_device_call(monkeypatch):
    xs = cupy.arange(4, dtype=np.int64)
    np.testing.assert_array_equal(gpulab.map(calls_helper, xs).get(), [1, 2, 3, 4])

    def helper(x: gpulab.i64) -> gpulab.i64:  # what the next notebook cell defines
        return x * 100

    monkeypatch.setitem(globals(), "helper", gpulab.kernel(helper))
    np.testing.assert_array_equal(gpulab.map(calls_helper, xs).get(), [0, 100, 200, 300])


def only_here(a: gpulab.f32, b: gpulab.f32) -> gpulab.f32:
    return a + b


def test_a_dropped_module_is_unloaded_once_nothing_holds_it(capfd):
    build = gpulab.compile("reduce", only_here)
    loaded = module.load(build, current_device())
    assert module.load(build, current_device()) is loaded
    unloader = loaded.unloader
    module.MODULES.clear()
    del loaded
    gc.collect()
    assert not unloader.alive
    assert "Exception ignored" not in capfd.readouterr().err  # cuModuleUnload succeeded
    assert module.load(build, current_device()).address("gpulab_reduce")  # and loading again works


def test_a_plan_lists_the_builds_it_ran_and_shows_the_last():
    plan = gpulab.make_reduce(only_here, np.float32)
    assert plan.builds == ()
    plan(cupy.ones(1000, np.float32), np.float32(0))
    (build,) = plan.builds
    again = plan.build()  # the same build, from memory (each lookup is a record of its own origin)
    assert again.key == build.key and again.origin == "memory"
    assert build.target.cc == current_device().compute_capability
    assert plan._repr_mimebundle_()["application/vnd.gpulab.build+json"]["key"] == build.key

"""A primitive is a registry record and a template: a toy one added here works everywhere, nothing else edited.

The toy, ``naive_map``, is the map a first CUDA tutorial writes (one item per
thread; its template is ``toy/naive_map.cu``). Registered, it compiles for
sm_90, runs on the host reference, is timed by ``gpulab.bench``, checked and
shown by ``%%gpukernel``, and on a GPU runs through its own plan class.
"""

from pathlib import Path

import numpy as np
import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

import gpulab
from gpulab import registry
from gpulab.display.view import MIME_TYPE
from gpulab.host.run import run_map
from gpulab.primitives import call
from gpulab.primitives.plan import DevicePlan, index_bits_of
from gpulab.runtime.arrays import array_fields
from gpulab.runtime.streams import stream_handle


class NaiveMapPlan(DevicePlan):
    """The toy's device plan: one launch of ``gpulab_naive_map``, one thread per item."""

    def __init__(self, kernel, types, device, options, mapped=()):
        super().__init__("naive_map", kernel, types, device, options, mapped)

    def argument_order(self, build):
        return {"gpulab_naive_map": ("in0", "out", "n", "u")}

    def __call__(self, xs, *, stream=None):
        import cupy

        fields, n, extent = array_fields(xs, self.types[0].dtype, "input")
        uniform_values = self.uniform_values()
        prepared = self.prepared(index_bits_of(extent), uniform_values)
        out = cupy.empty(n, dtype=prepared.build.result.dtype)
        out_fields, _, _ = array_fields(out, out.dtype, "output")
        block = prepared.build.geometry.block_threads
        prepared.launcher("gpulab_naive_map")(-(-n // block), stream_handle(stream), *fields, *out_fields, n,
                                              *prepared.uniform_fields(uniform_values))
        return out


NAIVE_MAP = registry.Primitive(
    name="naive_map", template=Path(__file__).parent / "toy" / "naive_map.cu", helpers=(),
    kernels=("gpulab_naive_map",), geometry="vector", operator=registry.OperatorCall("apply", "out_t"),
    arity=(1, 1), same_types=False, takes="a function of one input", result="declared", elementwise=True,
    initial=None, options=(), writes_result=True, plan=NaiveMapPlan, host=run_map)


@pytest.fixture(autouse=True)
def toy(monkeypatch):
    monkeypatch.setitem(registry.PRIMITIVES, "naive_map", NAIVE_MAP)


def triple(x: gpulab.f32) -> gpulab.f32:
    return x * 3


def test_the_toy_compiles_with_its_operator_inlined():
    build = gpulab.compile("naive_map", triple, target="sm_90")
    assert "gpulab_naive_map(Input0 in0, Output out, index_t n, Uniforms u)" in build.source
    assert "apply(load(in0, i), u)" in build.source  # its template's fields filled in
    assert set(build.resources) == {"gpulab_naive_map"} and build.operator_calls == 0
    assert build.key != gpulab.compile("map", triple, target="sm_90").key


def test_the_toy_refuses_what_its_record_refuses():
    with pytest.raises(gpulab.errors.KernelTypeError, match="naive_map takes a function of one input"):
        gpulab.compile("naive_map", lambda a, b: a, types="f32,f32", target="sm_90")
    with pytest.raises(ValueError, match="exclusive is not an option of naive_map"):
        gpulab.compile("naive_map", triple, target="sm_90", exclusive=True)


def test_the_toy_runs_on_the_host_and_is_benchmarked():
    xs = np.arange(5, dtype=np.float32)
    np.testing.assert_array_equal(call("naive_map", triple, [xs], device="host"), xs * 3)
    result = gpulab.bench(triple, "naive_map", [10, 100], devices=["host"], progress=False)
    assert [row["bytes"] for row in result.rows] == [80, 800]  # reads and writes, as its record says


def test_gpukernel_shows_and_checks_the_toy():
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "gpulab")
    shell.run_cell("import gpulab", store_history=False)
    with capture_output() as captured:
        shell.run_cell("%%gpukernel naive_map --target sm_90 --device host --run 1e3\n"
                       "def halve(x: gpulab.f64) -> gpulab.f64:\n    return x / 2\n", store_history=False)
    (view,) = [output.data[MIME_TYPE] for output in captured.outputs if MIME_TYPE in output.data]
    assert view["primitive"] == "naive_map" and "gpulab_naive_map" in view["resources"]
    assert "naive_map(halve) of 1,000 random float64 items" in captured.stdout + "".join(
        output.data["text/plain"] for output in captured.outputs), captured.stderr


def test_unknown_primitives_list_the_registered_ones():
    with pytest.raises(ValueError, match="choose one of map, reduce, scan, filter, .*naive_map") as raised:
        registry.primitive("no_such_primitive")
    assert all(name in str(raised.value) for name in registry.PRIMITIVES)


@pytest.mark.gpu
def test_the_toy_runs_on_a_gpu_through_its_own_plan():
    cupy = pytest.importorskip("cupy")
    xs = cupy.arange(10_000, dtype=np.float32)
    np.testing.assert_array_equal(call("naive_map", triple, [xs]).get(), xs.get() * 3)

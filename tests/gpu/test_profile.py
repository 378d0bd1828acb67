"""gpulab.profile on a GPU with Nsight Compute (issue 43): a map, a reduce, a scan, a filter and captured-array
reads measured, their samples on the right lines, sectors per request telling strided from contiguous reads.

With ``GPULAB_PROFILES_OUT=DIR`` every profile is also saved into ``DIR/<case>`` (what
bench/device/issue43.sh commits as tests/golden/profiles/).
"""

import os
import sys
from pathlib import Path

import numpy as np
import pytest

import gpulab
from gpulab.bench import default_initial
from gpulab.kernel import as_kernel
from gpulab.profiler import ncu

pytestmark = pytest.mark.gpu
cupy = pytest.importorskip("cupy")
if ncu.find() is None:
    pytest.skip("needs Nsight Compute (ncu)", allow_module_level=True)

sys.path[:0] = [str(Path(__file__).parents[1] / "golden"), str(Path(__file__).parents[1])]
import profile_cases as cases  # noqa: E402
from cells import run_fresh  # noqa: E402

SAVED = os.environ.get("GPULAB_PROFILES_OUT")


def run_case(name):
    """Profile one case through gpulab.profile of the one-shot primitive; save it where asked."""
    case = cases.CASES[name]
    arguments = case.make(cupy)
    initial = default_initial(case.primitive, as_kernel(case.function), None)
    if initial is not None:
        arguments.append(initial)
    found = gpulab.profile(getattr(gpulab, case.primitive), case.function, *arguments, **case.options)
    if SAVED:
        found.save(Path(SAVED) / name)
    return found


def row(profile, n: int) -> int:
    """The Python line (as its file numbers it) of row ``n`` of the profile's Python pane."""
    return profile.build.python_first_line + n - 1


@pytest.fixture(scope="module")
def profiles():
    return {}


@pytest.fixture
def profiled(profiles):
    def get(name):
        if name not in profiles:
            profiles[name] = run_case(name)
        return profiles[name]

    return get


@pytest.mark.parametrize("name", list(cases.CASES))
def test_every_sample_lands_on_a_line_and_they_sum_to_the_kernels_total(profiled, name):
    found = profiled(name)
    measures = found.measures()
    on_lines = sum(m.samples for m in measures.python.values()) + measures.inlined.samples + measures.template.samples
    report_total = sum(launch.report.samples for launch in found.launches)
    assert report_total > 0
    assert on_lines == measures.total.samples == report_total
    assert sum(m.samples for m in measures.sass.values()) == report_total
    assert report_total == sum(launch.report.metrics["smsp__pcsamp_sample_count"] for launch in found.launches)
    assert found.verdict.split("%")[0].isdigit()


def test_the_samples_of_a_map_whose_line_3_does_a_float64_exp_land_on_line_3(profiled):
    found = profiled("map-exp64-line3")
    python = found.measures().python
    samples = {line: measure.samples for line, measure in python.items()}
    assert max(samples, key=samples.get) == row(found, 3), samples


def test_a_strided_read_touches_more_sectors_per_request_than_a_contiguous_one(profiled):
    strided = profiled("read-strided").measures().python[row(profiled("read-strided"), 2)]
    contiguous = profiled("read-contiguous").measures().python[row(profiled("read-contiguous"), 2)]
    assert strided.sectors_per_request >= 4 * contiguous.sectors_per_request  # 32 sectors a request against 8
    kinds = {name: [d.kind for d in profiled(name).diagnostics] for name in ("read-strided", "read-contiguous")}
    assert "uncoalesced" in kinds["read-strided"] and "uncoalesced" not in kinds["read-contiguous"]


def test_a_captured_array_gather_is_uncoalesced_on_its_line(profiled):
    found = profiled("gather")
    [diagnostic] = [d for d in found.diagnostics if d.kind == "uncoalesced"]
    assert diagnostic.python_line == row(found, 2) and diagnostic.evidence["sectors_per_request"] > 8


@pytest.mark.parametrize("name", ["scan-add32", "filter-positive"])
def test_the_look_back_wait_is_measured_in_scan_and_filter(profiled, name):
    found = profiled(name)
    [wait] = [d for d in found.diagnostics if d.kind == "lookback"]
    assert 0 < wait.evidence["share"] < 1


def test_a_local_memory_diagnostic_shows_the_traffic_it_caused(profiled):
    [local] = [d for d in profiled("scan-spill").diagnostics if d.kind in ("spill", "stack")]
    assert local.evidence["measured"]["local_bytes"] > 0


def test_a_bank_conflicted_shared_store_is_found(profiled):
    found = [d for d in profiled("filter-positive").diagnostics if d.kind == "bank-conflict"]
    assert [d for d in found if d.evidence["kind"] == "stores"]


def test_the_profiled_call_returns_what_the_call_does():
    xs = cupy.asarray(np.arange(1 << 20, dtype=np.int32) % 7 - 3)
    plan = gpulab.make_scan(_add_i32, xs)
    found = gpulab.profile(plan, xs)
    np.testing.assert_array_equal(cupy.asnumpy(found.result), cupy.asnumpy(plan(xs)))
    assert [launch.kernel for launch in found.launches] == ["gpulab_scan"]
    assert found.measures().total.samples > 0


def _add_i32(a: gpulab.i32, b: gpulab.i32) -> gpulab.i32:
    return a + b


def test_a_profile_saved_and_loaded_is_the_same(profiled, tmp_path):
    found = profiled("reduce-add32")
    again = gpulab.profiler.load(found.save(tmp_path / "reduce"))
    assert again.verdict == found.verdict
    assert again.lines().rows == found.lines().rows


def test_a_call_that_launches_nothing_on_the_gpu_says_so():
    with pytest.raises(gpulab.errors.ProfilerError, match="launched no gpulab kernel"):
        gpulab.profile(lambda: None)


def test_one_shot_and_reused_calls_measure_the_same_kernel(profiled):
    case = cases.CASES["map-exp64"]
    (xs,) = case.make(cupy)
    plan = gpulab.make_map(case.function, xs)
    reused = gpulab.profile(plan, xs)
    assert reused.build.key == profiled("map-exp64").build.key


def test_the_magic_shows_the_view_with_the_measured_column():
    done, captured = run_fresh("%%gpukernel map --profile 1e6 -o\n"
                               "import math\n"
                               "from gpulab import f64\n"
                               "def heavy(x: f64) -> f64:\n"
                               "    return math.exp(x * 2.0) + 1.0\n")
    assert done.success and not captured.stderr, captured.stderr
    result = done.result
    assert result.profile is not None and result.profile_error is None
    bundle = result.view().bundle
    assert bundle["measured"]["total"]["samples"] > 0
    assert bundle["header"]["measured"]["verdict"] == result.profile.verdict
    assert result.profile.kernels().rows[0][0] == "gpulab_map"

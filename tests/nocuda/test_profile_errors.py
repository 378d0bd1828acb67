"""What gpulab.profile says when it cannot measure: no GPU, no Nsight Compute, no permission to read the GPU's
counters, a profiler that fails; always a message that says what to do, never a traceback (issue 43)."""

import sys
from pathlib import Path

import pytest

import gpulab
from gpulab.errors import ProfilerError
from gpulab.profiler import ncu, run

sys.path.insert(0, str(Path(__file__).parents[1]))
from cells import run_fresh  # noqa: E402

# What ncu 2025.3 prints when the driver keeps the counters from this user (NVIDIA's ERR_NVGPUCTRPERM page).
NO_PERMISSION_OUTPUT = ("==PROF== Connected to process 4242 (/usr/bin/python3)\n"
                        "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU "
                        "Performance Counters on the target device 0. For instructions on enabling permissions and "
                        "to get more information see https://developer.nvidia.com/ERR_NVGPUCTRPERM\n")


def double(x: gpulab.f32) -> gpulab.f32:
    return x * gpulab.f32(2)


@pytest.fixture
def no_gpu():
    if any(d.is_gpu for d in gpulab.devices()):
        pytest.skip("this machine has a GPU")


def test_without_a_gpu_the_message_says_so_and_what_needs_none(no_gpu):
    with pytest.raises(ProfilerError, match="this machine has none") as caught:
        gpulab.profile(gpulab.map, double, [1.0, 2.0])
    assert "gpulab.compile" in str(caught.value)


def test_without_ncu_the_message_says_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setenv("GPULAB_NCU", str(tmp_path / "ncu"))  # not there
    assert ncu.find() is None
    with pytest.raises(ProfilerError, match="ncu, which is not installed") as caught:
        run.require_ncu()
    assert "CUDA toolkit" in str(caught.value) and "GPULAB_NCU" in str(caught.value)


def test_ncu_is_found_where_gpulab_ncu_points(monkeypatch, tmp_path):
    tool = tmp_path / "ncu"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    monkeypatch.setenv("GPULAB_NCU", str(tool))
    assert run.require_ncu() == str(tool)


@pytest.mark.parametrize(("params", "root", "refused"), [
    ("ResmanDebugLevel: 4294967295\nRmProfilingAdminOnly: 1\n", False, True),
    ("RmProfilingAdminOnly: 1\n", True, False),
    ("RmProfilingAdminOnly: 0\n", False, False),
    ("", False, False),
])
def test_the_driver_permission_is_read_before_anything_runs(params, root, refused):
    if refused:
        with pytest.raises(ProfilerError, match="NVreg_RestrictProfilingToAdminUsers=0"):
            run.require_permission(params, root=root)
    else:
        run.require_permission(params, root=root)


def test_ncus_permission_error_becomes_what_to_do():
    assert run.failure(NO_PERMISSION_OUTPUT) == run.NO_PERMISSION
    other = run.failure("==PROF== Connected\n==ERROR== Failed to load the profiler library\n")
    assert other.startswith("Nsight Compute could not profile") and "Failed to load" in other


def test_a_profiler_error_shows_without_a_traceback():
    _, captured = run_fresh("from gpulab.errors import ProfilerError\n"
                            "raise ProfilerError('no ncu here\\nsecond line')", load_gpulab=False)
    shown = captured.stdout + captured.stderr
    assert "ProfilerError: no ncu here\nsecond line" in shown and "Traceback" not in shown and "raise" not in shown


def test_the_magic_keeps_the_estimated_view_and_says_why_nothing_was_measured(no_gpu):
    result, captured = run_fresh("%%gpukernel map --target sm_90 --profile 1000 -o\n"
                                 "from gpulab import f32\n"
                                 "def double(x: f32) -> f32:\n"
                                 "    return x * f32(2)\n")
    assert result.success
    kept = result.result
    assert kept.profile is None and "--profile: nothing was measured" in kept.profile_error
    assert "this machine has none" in captured.stderr and "Traceback" not in captured.stderr
    bundle = kept.view().bundle
    assert "measured" not in bundle and bundle["analysis"]["costs"]["python"]  # the estimated view stays


def test_missing_names_what_this_machine_lacks(no_gpu):
    assert "this machine has none" in gpulab.profiler.missing()

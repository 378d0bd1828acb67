"""One architecture table, checked on every path: parsing, the current device, occupancy, widgets, defaults."""

import pytest

import gpulab
from gpulab.compiler.target import ARCHITECTURES, DEFAULT_CC, Target, parse_target
from gpulab.compiler.toolchain import toolchain_targets
from gpulab.device import Device, use
from gpulab.errors import TargetError
from gpulab.notebook import session
from gpulab.notebook.widgets import aot_targets


def twice(x):
    return x + x


def test_the_toolchain_builds_a_subset_of_the_table():
    built = toolchain_targets()
    assert built and {t.cc for t in built} <= set(ARCHITECTURES)
    assert Target(*DEFAULT_CC) in built
    assert aot_targets() == list(built)  # the picker offers what the table and toolchain allow
    assert session.DEFAULT_TARGET == Target(*DEFAULT_CC).arch


@pytest.mark.parametrize("spec", ["sm_1", "9", 9, "compute_8", True, "sm_9x", (9,), (9, "x")])
def test_what_is_not_a_compute_capability_says_so(spec):
    with pytest.raises(TargetError, match="not a compute capability"):
        parse_target(spec)


@pytest.mark.parametrize(("spec", "said"), [("sm_70", "'sm_70'"), ((6, 1), "(6, 1) (sm_61)"), (52, "52 (sm_52)")])
def test_architectures_outside_the_table_are_refused_naming_the_choices(spec, said):
    with pytest.raises(TargetError, match="not a supported target; choose one of sm_75, sm_80") as caught:
        parse_target(spec)
    assert str(caught.value).startswith(f"{said} is not")  # the name once, as given


def gpu(cc) -> Device:
    """A device record as gpulab lists a GPU (none is here: only its compute capability matters)."""
    return Device("cuda:0", "a GPU of compute capability %d.%d" % cc, cc, 16 * 2**30, 40)


def test_the_current_device_is_checked_like_any_target():
    with use(gpu((8, 7))):  # a Jetson Orin: in the table now, so compile() and map() agree
        assert parse_target(None) == Target(8, 7)
        assert gpulab.compile("map", twice, types=("f32",)).target == Target(8, 7)
    with use(gpu((7, 0))), pytest.raises(TargetError, match="sm_70"):
        gpulab.compile("map", twice, types=("f32",))


def test_a_target_the_toolchain_does_not_build_is_refused_before_a_build(monkeypatch):
    from gpulab.compiler import toolchain

    monkeypatch.setattr(toolchain, "toolchain_targets", lambda: (Target(9, 0),))
    assert parse_target("sm_80") == Target(8, 0)  # in the table: parsing asks no toolchain
    with pytest.raises(TargetError, match="sm_80 is not built by the installed NVRTC and nvJitLink; they build sm_90"):
        gpulab.compile("map", twice, types=("f32",), target="sm_80")
    with pytest.raises(TargetError, match="sm_80 is not built"):
        session.SessionDefaults().update(target="sm_80")


def test_no_gpu_and_no_target_says_how_to_compile_ahead_of_time():
    with use("host"), pytest.raises(TargetError, match="target='sm_90'"):
        parse_target(None)


def test_every_target_carries_its_sm_limits():
    for cc, limits in ARCHITECTURES.items():
        assert Target(*cc).limits is limits and limits.threads % 32 == 0

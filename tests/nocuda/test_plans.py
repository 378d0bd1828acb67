"""Plans show themselves as their build's view, and list the builds they ran (no GPU needed to look)."""

import pytest
from IPython.core.interactiveshell import InteractiveShell

import gpulab
from gpulab.device import Device
from gpulab.display.view import MIME_TYPE
from gpulab.primitives.scan import ScanPlan

H100 = Device("cuda:0", "a compute capability 9.0 GPU (a record: nothing runs here)", (9, 0), 80 * 2**30, 132)


def add(a: gpulab.i32, b: gpulab.i32) -> gpulab.i32:
    return a + b


def test_a_plan_displays_its_build_before_it_ran_any():
    plan = ScanPlan(gpulab.Kernel(add), (gpulab.element_type("i32"),) * 2, H100, gpulab.BuildOptions(exclusive=True))
    assert plan.builds == ()
    data, _ = InteractiveShell.instance().display_formatter.format(plan)
    bundle = data[MIME_TYPE]
    assert bundle["primitive"] == "scan" and bundle["target"] == "sm_90" and bundle["options"]["exclusive"]
    assert data["text/plain"].startswith("<gpulab ScanPlan: scan(add) of (int32, int32) on cuda:0, 0 build(s)")
    first, again = plan.build(), plan.build()
    assert again.origin == "memory" and again.artifacts is first.artifacts  # from the build cache
    assert plan.build(64).options.index_bits == 64


def half(i: gpulab.i64) -> gpulab.f32:
    return gpulab.f32(i) / 2


def test_a_map_plan_over_an_iota_writes_its_start_and_refuses_a_range_float32_cannot_hold():
    """Made, not run: an iota input's fields are its start, its size the plan's; the same check of its
    range as the host's (docs/conversion.md), before anything is launched."""
    from gpulab.errors import ConversionError
    from gpulab.primitives import dispatch
    from gpulab.registry import PRIMITIVES

    plan = dispatch.make_plan(PRIMITIVES["map"], half, [gpulab.iota(10)], H100)
    assert plan.input_fields(gpulab.iota(100, start=7), 0, plan.uniform_values())[:2] == ((7,), 100)
    wide = dispatch.make_plan(PRIMITIVES["map"], halve_f32, [gpulab.iota(10)], H100)
    with pytest.raises(ConversionError, match="-16777216 .. 16777216"):
        wide.input_fields(gpulab.iota(2**25), 0, wide.uniform_values())


def halve_f32(x: gpulab.f32) -> gpulab.f32:
    return x / 2

"""Theoretical occupancy from a kernel's resources, as the build view shows it."""

import pytest

import gpulab
from gpulab.compiler.bundle import bundle_of
from gpulab.compiler.occupancy import occupancy
from gpulab.compiler.target import Target
from gpulab.display.view import BuildView
from gpulab.errors import TargetError

H100 = Target(9, 0)


@pytest.mark.parametrize("block, registers, shared, blocks, limit", [
    (256, 32, 0, 8, "threads"),          # 64 warps: the SM is full
    (512, 40, 35_921, 3, "registers"),   # 40 x 32 = 1280 registers a warp: 12 warps per partition
    (256, 64, 0, 4, "registers"),
    (256, 255, 0, 1, "registers"),       # 255 registers round up to 8192 a warp
    (128, 16, 100_000, 2, "shared memory"),
    (32, 16, 0, 32, "blocks"),
])
def test_the_limiting_resource_decides(block, registers, shared, blocks, limit):
    found = occupancy(H100, block, registers, shared)
    assert (found.blocks_per_sm, found.limited_by) == (blocks, limit)
    assert found.fraction == pytest.approx(blocks * block / 2048)


def test_every_target_has_limits_and_unknown_ones_are_refused():
    turing = occupancy(Target(7, 5), 256, 32, 0)  # 1024 threads an SM, nothing reserved per block
    assert (turing.blocks_per_sm, turing.fraction) == (4, 1.0)
    with pytest.raises(TargetError, match="sm_70"):
        Target(7, 0)


def twice(x: gpulab.f32) -> gpulab.f32:
    return x + x


def test_the_view_shows_each_kernels_occupancy():
    bundle = bundle_of(gpulab.compile("map", twice, target="sm_90"))
    resources = bundle["resources"]["gpulab_map"]
    assert resources["blocks_per_sm"] == 8 and resources["occupancy"] == 1.0
    assert resources["occupancy_limit"] == "threads"
    view = BuildView(bundle_of(gpulab.compile("map", twice, target="sm_90")))
    assert "100% · 8 blocks/SM" in view._repr_mimebundle_()["text/html"]
    assert "occupancy 100% · 8 blocks/SM, limited by threads" in view._repr_mimebundle_()["text/plain"]

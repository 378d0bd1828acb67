"""Plans show themselves as their build's view, and list the builds they ran (no GPU needed to look)."""

from IPython.core.interactiveshell import InteractiveShell

import gpulab
from gpulab.device import Device
from gpulab.display.view import MIME_TYPE
from gpulab.primitives.scan import ScanPlan

H100 = Device("cuda:0", "a compute capability 9.0 GPU (a record: nothing runs here)", (9, 0), 80 * 2**30, 132)


def add(a: gpulab.i32, b: gpulab.i32) -> gpulab.i32:
    return a + b


def test_a_plan_displays_its_build_before_it_ran_any():
    plan = ScanPlan(gpulab.Kernel(add), (gpulab.element_type("i32"),) * 2, H100, exclusive=True)
    assert plan.builds == ()
    data, _ = InteractiveShell.instance().display_formatter.format(plan)
    bundle = data[MIME_TYPE]
    assert bundle["primitive"] == "scan" and bundle["target"] == "sm_90" and bundle["options"]["exclusive"]
    assert data["text/plain"].startswith("<gpulab ScanPlan: scan(add) of (int32, int32) on cuda:0, 0 build(s)")
    assert plan.build() is plan.build()  # from the build cache
    assert plan.build(64).options.index_bits == 64

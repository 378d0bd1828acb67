"""On a GPU: a non-associative operator warns at plan time, and the device's result does differ from the host's."""

import re
import warnings

import numpy as np
import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

import gpulab
from gpulab.errors import AssociativityWarning

pytestmark = pytest.mark.gpu
cupy = pytest.importorskip("cupy")


def minus(a, b):
    return a - b


def add(a, b):
    return a + b


def test_a_device_reduce_warns_and_its_result_differs_from_the_hosts():
    xs = np.arange(1, 10**6 + 1, dtype=np.int64)
    with pytest.warns(AssociativityWarning, match="`minus` is not associative") as caught:
        on_device = gpulab.reduce(minus, cupy.asarray(xs), np.int64(0))
    [warning] = [w for w in caught if w.category is AssociativityWarning]
    assert warning.lineno == minus.__code__.co_firstlineno + 1
    # What the warning says the device will do: its tree gives another result than the left-to-right fold.
    assert int(cupy.asnumpy(on_device)) != int(gpulab.reduce(minus, xs, np.int64(0), device="host",
                                                             associative=True))


def test_make_reduce_and_make_scan_warn_when_made_unless_told():
    with pytest.warns(AssociativityWarning):
        made = gpulab.make_reduce(minus, np.int32)
    assert not made.builds
    with pytest.warns(AssociativityWarning, match="scan on a device folds"):
        gpulab.make_scan(minus, np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error", AssociativityWarning)
        plan = gpulab.make_scan(minus, np.int32, associative=True)
        gpulab.make_reduce(add, np.int32)
    assert plan.associative and not plan.builds  # nothing built yet: the probe runs when the plan is made


def test_the_magic_on_a_gpu_warns_and_its_run_check_shows_the_difference():
    shell = InteractiveShell.instance()
    try:
        shell.run_cell("%load_ext gpulab")
        with capture_output() as captured:
            shell.run_cell("%%gpukernel reduce --run 100000\nfrom gpulab import i32\n\n"
                           "def minus(a: i32, b: i32) -> i32:\n    return a - b\n")
        assert "AssociativityWarning: `minus` is not associative" in captured.stderr
        assert "at cell line 5" in captured.stderr
        check = next(o.data["text/plain"] for o in captured.outputs if "host reference" in o.data["text/plain"])
        assert not re.search(r"check\s+(exact|not checked)", check), check
    finally:
        InteractiveShell.clear_instance()


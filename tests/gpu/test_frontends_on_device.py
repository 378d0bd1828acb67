"""Both frontends on a GPU: every primitive x element type built by numba-cuda and by numba-cuda-mlir, run on the
same inputs, gives the same bits (floats built with ``fma=False``, so that neither contracts where the other does
not), and an exact type gives the host's result (docs/frontends.md)."""

import numpy as np
import pytest
from frontend_cases import call, cases, inputs

import gpulab
from gpulab.compiler import frontends
from gpulab.options import FRONTENDS

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif("numba-cuda-mlir" not in frontends.installed(),
                                 reason="numba-cuda-mlir is not installed (pip install 'gpulab[mlir]')")]
cupy = pytest.importorskip("cupy")


def _bits(results) -> list[bytes]:
    return [np.ascontiguousarray(cupy.asnumpy(r) if isinstance(r, cupy.ndarray) else np.asarray(r)).tobytes()
            for r in results]


@pytest.mark.parametrize("n", [1, 1000, 3 * 4096 + 17, 2**22])
@pytest.mark.parametrize("primitive, fn, element", list(cases()))
def test_both_frontends_compute_the_same_bits(primitive, fn, element, n):
    xs = inputs(primitive, element, n)
    exact = not (isinstance(element, str) and "float" in element)  # integers, bools, records (selected whole)
    given = {} if exact else {"fma": False}
    cuda, mlir = (_bits(call(primitive, fn, cupy.asarray(xs), frontend=name, **given)) for name in FRONTENDS)
    assert cuda == mlir, f"{primitive} of {n} {element}: numba-cuda and numba-cuda-mlir differ"
    if exact:
        assert mlir == _bits(call(primitive, fn, xs, device="host")), "an exact type gives the host's result"


def test_a_build_of_each_frontend_runs_from_the_magic():
    """%%gpukernel --frontend numba-cuda-mlir --run checks the numba-cuda-mlir build against the host."""
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    shell = InteractiveShell.instance()
    for line in ("%load_ext gpulab", "from gpulab import f32"):
        assert shell.run_cell(line, store_history=False).success
    with capture_output() as captured:
        result = shell.run_cell("%%gpukernel map --frontend numba-cuda-mlir --no-fma --run 1e5 --compare-frontends\n"
                                "def axpy(x: f32) -> f32:\n    return x * f32(2) + f32(1)\n", store_history=False)
    assert result.success, captured.stderr
    shown = "".join(o.data.get("text/plain", "") for o in captured.outputs)
    assert "numba-cuda-mlir vs numba-cuda" in shown and "check" in shown, shown[:600]
    assert gpulab.compile("map", shell.user_ns["axpy"], frontend="numba-cuda-mlir", fma=False).origin == "memory"

"""Build options on a GPU: ``%%gpukernel --run``, ``--compare``'s timing and the device picker build exactly the
options the cell names (a build the cell did not name is never made)."""

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

import gpulab
from gpulab import cache
from gpulab.compiler.pipeline import build_for, make_spec
from gpulab.device import current_device, device
from gpulab.notebook import session
from gpulab.notebook.widgets import DevicePicker

pytestmark = pytest.mark.gpu
cupy = pytest.importorskip("cupy")


@pytest.fixture(scope="module")
def shell():
    shell = InteractiveShell.instance()
    for line in ("%load_ext gpulab", "from gpulab import f32, i32", "import cupy"):
        assert shell.run_cell(line, store_history=False).success
    return shell


@pytest.fixture(autouse=True)
def fresh():
    """Each test starts with no build in memory or on disk, the built-in defaults and the first GPU."""
    cache.clear_cache()
    session.defaults.__init__()
    gpulab.use("cuda:0")
    yield
    session.defaults.__init__()


def run(shell, cell: str) -> str:
    with capture_output() as captured:
        shell.run_cell(cell, store_history=False)
    return "".join(output.data.get("text/plain", "") for output in captured.outputs) + captured.stderr


def made_by_the_cell(shell, primitive: str, name: str, **options) -> bool:
    """Whether the cell built ``primitive(name)`` with ``options`` for the GPU (it is then in memory)."""
    spec = make_spec(primitive, shell.user_ns[name], target=current_device().compute_capability, **options)
    return build_for(spec).origin == "memory"


MULTIPLY_ADD = "def multiply_add(x: f32, y: f32, z: f32) -> f32:\n    return x * y + z\n"


@pytest.mark.parametrize(("flag", "option"), [("--no-fma", "fma"), ("--no-lto", "lto")])
def test_run_checks_the_build_the_cell_names(shell, flag, option):
    table = run(shell, f"%%gpukernel map {flag} --run 1e5\n" + MULTIPLY_ADD)
    assert "check" in table
    assert made_by_the_cell(shell, "map", "multiply_add", **{option: False})
    assert not made_by_the_cell(shell, "map", "multiply_add")  # the default build was never run


def test_compare_times_the_unchecked_build_the_cell_names(shell):
    table = run(shell, "%%gpukernel map --no-boundscheck --compare\n"
                       "lookup_table = cupy.arange(16, dtype=cupy.float32)\n\n"
                       "def looked_up(x: i32) -> f32:\n    return lookup_table[x % 16]\n")
    assert "time (n=16,777,216, cuda:0)" in table
    for lto in (True, False):
        assert made_by_the_cell(shell, "map", "looked_up", lto=lto, boundscheck=False)
        assert not made_by_the_cell(shell, "map", "looked_up", lto=lto, boundscheck=True)


def test_the_device_picker_runs_the_cell_options_on_the_device_it_picks(shell):
    picker = DevicePicker()
    picker.value = device("cuda:0")
    assert session.defaults.target is None and gpulab.current() == "cuda:0"
    run(shell, "%%gpukernel map --no-fma --run 1e5\n" + MULTIPLY_ADD)
    assert made_by_the_cell(shell, "map", "multiply_add", fma=False)
    assert not made_by_the_cell(shell, "map", "multiply_add")

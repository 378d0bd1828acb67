"""The teaching notebooks run top to bottom, with no error, in a fresh kernel of this interpreter.

The notebooks checked are the ones git holds (its index), not the working
files, which ``make lab`` saves outputs into. Each notebook runs in its own
kernel, started from ``sys.executable`` (never from a kernel spec found
elsewhere on the machine), in a folder that holds the notebooks alone, as a
class gets them (docs/classroom.md, the Dockerfile and the hub's values copy
``notebooks/*.ipynb`` and nothing else), and with an empty build cache of
its own, so every build is made anew, as on a first visit.
A cell fails the test when it raises (``%%gpukernel`` raises the errors it
reports). Without a GPU the notebooks run their device cells on the host.

Set ``GPULAB_EXECUTED_NOTEBOOKS=DIR`` to keep the executed copies, outputs
included, in DIR.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

from jupyter_client.kernelspec import KernelSpec, KernelSpecManager  # noqa: E402
from jupyter_client.manager import AsyncKernelManager  # noqa: E402
from nbclient import NotebookClient  # noqa: E402

NOTEBOOKS_DIR = Path(__file__).resolve().parents[2] / "notebooks"
NOTEBOOKS = sorted(NOTEBOOKS_DIR.glob("[0-9][0-9]-*.ipynb"))
CELL_TIMEOUT = 300  # seconds, per cell
WHICH_PYTHON = "import sys; print(sys.executable)"


class ThisInterpreter(KernelSpecManager):
    """A kernel spec manager whose every kernel is an ipykernel of ``sys.executable``."""

    def get_kernel_spec(self, kernel_name: str) -> KernelSpec:
        return KernelSpec(argv=[sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                          display_name=f"Python ({sys.executable})", language="python")


def stored(path: Path) -> str | None:
    """The notebook as git holds it (the index: what a commit takes), or None outside a git checkout.

    The working file is the user's: running and editing it in ``make lab``
    saves outputs and experiments into it, and that must never turn the
    test suite red.
    """
    try:
        found = subprocess.run(["git", "show", f":./{path.name}"], cwd=path.parent, capture_output=True,
                               text=True, encoding="utf-8", timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return found.stdout if found.returncode == 0 else None


def class_copy(folder: Path) -> Path:
    """``folder``, made to hold ``notebooks/*.ipynb`` as git holds them and nothing else, as a class gets them."""
    folder.mkdir(parents=True)
    for path in NOTEBOOKS_DIR.glob("*.ipynb"):
        text = stored(path)
        (folder / path.name).write_text(path.read_text(encoding="utf-8") if text is None else text, encoding="utf-8")
    return folder


def execute(path: Path, folder: Path, cache: Path) -> tuple[nbformat.NotebookNode, str]:
    """Run a copy of the notebook at ``path``, as git holds it, in a class's copy of the notebooks in ``folder``.

    The build cache is ``cache``. Returns the copy, with its outputs, and the
    kernel's ``sys.executable``. With ``GPULAB_EXECUTED_NOTEBOOKS`` set, the
    copy is kept, also when a cell fails.
    """
    copied = class_copy(folder) / path.name
    notebook = nbformat.read(copied, as_version=4)
    notebook.cells.append(nbformat.v4.new_code_cell(WHICH_PYTHON))
    manager = AsyncKernelManager(kernel_name="python3", kernel_spec_manager=ThisInterpreter())
    client = NotebookClient(notebook, km=manager, timeout=CELL_TIMEOUT, allow_errors=False,
                            resources={"metadata": {"path": str(copied.parent)}})
    try:
        client.execute(env={**os.environ, "GPULAB_CACHE_DIR": str(cache)})
    finally:
        keep = os.environ.get("GPULAB_EXECUTED_NOTEBOOKS")
        if keep:
            Path(keep).mkdir(parents=True, exist_ok=True)
            kept = copy.deepcopy(notebook)
            kept.cells.pop()  # the check below
            nbformat.write(kept, Path(keep) / path.name)
    check = notebook.cells.pop()
    kernel_python = "".join(o.get("text", "") for o in check.outputs if o.output_type == "stream").strip()
    return notebook, kernel_python


def test_there_are_notebooks():
    assert len(NOTEBOOKS) >= 7, f"expected the numbered notebooks in {NOTEBOOKS_DIR}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.stem)
def test_notebook_runs(path: Path, tmp_path: Path):
    start = time.perf_counter()
    _, kernel_python = execute(path, tmp_path / "notebooks", tmp_path / "gpulab-cache")
    seconds = time.perf_counter() - start
    print(f"{path.name}: {seconds:.1f} s")
    assert kernel_python == sys.executable, "the notebook ran in a kernel of another Python"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.stem)
def test_notebook_is_stored_without_outputs(path: Path):
    text = stored(path)
    if text is None:
        pytest.skip("not a git checkout: the check reads the notebooks as git holds them")
    notebook = nbformat.reads(text, as_version=4)
    nbformat.validate(notebook)
    spec = notebook.metadata.get("kernelspec", {})
    assert (spec.get("name"), spec.get("language")) == ("python3", "python"), (
        f"{path.name} as git holds it names kernel {spec.get('name')!r}: the lab would ask which kernel to start "
        "(store it with the default Python 3 kernel, 'python3')")
    for cell in notebook.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, (
                f"{path.name} as git holds it: clear the outputs before committing "
                f"(cell {cell.source.splitlines()[0]!r})")


def test_notebook_10_carries_the_figures_its_bench_run_measured():
    """Notebook 10 shows an H200's timings as a table of its own (it runs outside the repository): bench's."""
    measured = json.loads((NOTEBOOKS_DIR.parent / "bench" / "results" / "h200-2026-12-04-run22-diagnostics.json")
                          .read_text(encoding="utf-8"))
    notebook = nbformat.read(NOTEBOOKS_DIR / "10-why-is-it-slow.ipynb", as_version=4)
    (table,) = [cell.source for cell in notebook.cells if cell.cell_type == "markdown" and "| G items/s |" in cell.source]
    rows = [[field.strip() for field in line.strip("|").split("|")] for line in table.splitlines()[-len(measured["rows"]):]]
    assert [(case, speed, int(registers), spilled) for case, _, speed, registers, spilled, _ in rows] == [
        (row["case"], f"{row['items_per_s'] / 1e9:.1f}", row["registers"], f"{row['spill_stores']} B")
        for row in measured["rows"]]

"""Binder: an environment made from ``binder/`` alone, with no Node.js, has gpulab's extension and runs notebook 1.

mybinder.org (repo2docker) takes the Python version from ``binder/runtime.txt``
and runs ``pip install -r binder/requirements.txt``: gpulab as the prebuilt
wheel attached to its GitHub release (the JupyterLab extension built in) and
every other package pinned. The ``binder_env`` fixture does the same in a new
virtual environment with nothing but that environment on ``PATH`` (no
Node.js), the release wheel replaced by the same wheel built from this
checkout. pip's cache is used, so on a machine that installed gpulab before
the CUDA wheels come from it; it still takes a minute, hence the ``slow``
marker.

Jupyter's user and config folders point at empty temporary ones, so only what
the new environment installed is seen. With ``GPULAB_CLASSROOM_REPORT=FILE``
the environment's size and the seconds from a new environment to notebook
1's first view are written to FILE (``binder`` key) as JSON.
"""

from __future__ import annotations

import json
import os
import re
import textwrap
import time
from pathlib import Path

import pytest
from learnerenv import BINDER, RELEASE_WHEEL, ROOT, project_version, requirement_lines, run

FIRST_NOTEBOOK = ROOT / "notebooks" / "01-first-kernel.ipynb"
ANSI = re.compile(r"\x1b\[[0-9;]*m")

# Run by the new environment's Python: execute a notebook in a kernel of that same Python.
EXECUTE = textwrap.dedent(r"""
    import re
    import sys
    import time

    import nbformat
    from jupyter_client.kernelspec import KernelSpec, KernelSpecManager
    from jupyter_client.manager import AsyncKernelManager
    from nbclient import NotebookClient

    class ThisInterpreter(KernelSpecManager):
        def get_kernel_spec(self, kernel_name):
            return KernelSpec(argv=[sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                              display_name="binder test", language="python")

    path, out = sys.argv[1], sys.argv[2]
    notebook = nbformat.read(path, as_version=4)
    notebook.cells.append(nbformat.v4.new_code_cell("import sys, gpulab; print(sys.executable, gpulab.__file__)"))
    manager = AsyncKernelManager(kernel_name="python3", kernel_spec_manager=ThisInterpreter())
    started, first_view = time.perf_counter(), []

    def seen(cell, **_):
        if not first_view and any("application/vnd.gpulab.build+json" in o.get("data", {}) for o in cell.outputs):
            first_view.append(time.perf_counter() - started)

    NotebookClient(notebook, km=manager, timeout=300, resources={"metadata": {"path": sys.argv[3]}},
                   on_cell_executed=seen).execute()
    nbformat.write(notebook, out)
    errors = [o.text for cell in notebook.cells for o in cell.get("outputs", [])
              if o.output_type == "stream" and o.name == "stderr" and re.search(r"Error|Exception|Traceback", o.text)]
    if errors:
        sys.exit("errors on stderr:\n" + "\n".join(errors))
    print(notebook.cells[-1].outputs[0].text.strip(), first_view[0])
""")


def test_binder_installs_the_release_wheel_and_pins_every_other_package():
    lines = requirement_lines(BINDER / "requirements.txt")
    wheels = [line for line in lines if RELEASE_WHEEL.fullmatch(line)]
    assert len(wheels) == 1, "binder/requirements.txt installs gpulab once, from its release's wheel (make binder)"
    assert RELEASE_WHEEL.fullmatch(wheels[0])["version"] == project_version(), (
        "binder/requirements.txt names another version's wheel than pyproject.toml's: run make binder")
    unpinned = [line for line in lines if line not in wheels and not re.fullmatch(r"[A-Za-z0-9_.\-]+==[^\s=]+", line)]
    assert not unpinned, f"binder/requirements.txt must pin every package (name==version): {unpinned}"
    assert not [line for line in lines if re.match(r"(gpulab|\.|-e)\b", line) and line not in wheels], (
        "gpulab comes from the wheel only: a source install (., -e) would build the extension with Node.js")


def test_the_binder_badge_opens_notebook_01_of_the_release():
    badge = re.search(r"\(https://mybinder\.org/v2/gh/gpulab/gpulab/([^?)]+)\?urlpath=([^)]+)\)",
                      (ROOT / "README.md").read_text())
    assert badge, "README.md has no Binder badge"
    ref, urlpath = badge.groups()
    assert ref == f"v{project_version()}", "the badge opens the release whose wheel binder/ installs"
    assert urlpath == f"lab/tree/notebooks/{FIRST_NOTEBOOK.name}" and FIRST_NOTEBOOK.exists(), urlpath


@pytest.mark.slow
def test_binder_environment_runs_the_first_notebook(binder_env, tmp_path):
    env = binder_env.environ(JUPYTER_DATA_DIR=str(tmp_path / "jupyter-data"),
                             JUPYTER_CONFIG_DIR=str(tmp_path / "jupyter-config"), IPYTHONDIR=str(tmp_path / "ipython"))
    bin_dir, prefix = binder_env.bin, binder_env.prefix

    # gpulab imports from the new environment (not from the checkout), installed from binder's wheel.
    where = run([bin_dir / "python", "-c", "import gpulab; print(gpulab.__file__)"], cwd=tmp_path, env=env)
    assert Path(where.stdout.strip()).is_relative_to(prefix), where.stdout

    # JupyterLab lists the gpulab extension as enabled and OK, installed in the new environment.
    listing = run([bin_dir / "jupyter", "labextension", "list"], cwd=tmp_path, env=env)
    text = ANSI.sub("", listing.stdout + listing.stderr)
    sections = re.split(r"^(?=\S)", text, flags=re.M)
    ours = [s for s in sections if s.startswith(str(prefix / "share" / "jupyter" / "labextensions"))]
    assert ours and re.search(r"^\s+gpulab v\S+ enabled OK", ours[0], re.M), text

    # The first notebook runs top to bottom in a kernel of the new environment.
    executed = tmp_path / FIRST_NOTEBOOK.name
    started = time.perf_counter()
    done = run([bin_dir / "python", "-c", EXECUTE, FIRST_NOTEBOOK, executed, FIRST_NOTEBOOK.parent],
               cwd=tmp_path, env={**env, "GPULAB_CACHE_DIR": str(tmp_path / "cache")}, timeout=900)
    kernel_python, module, first_view = done.stdout.strip().splitlines()[-1].split()
    assert Path(kernel_python).parent == bin_dir and Path(module).is_relative_to(prefix), done.stdout
    _report(binder_env, binder_env.install_seconds + float(first_view), time.perf_counter() - started)


def _report(env, to_first_view_s: float, notebook_s: float) -> None:
    target = os.environ.get("GPULAB_CLASSROOM_REPORT")
    if not target:
        return
    path = Path(target)
    figures = json.loads(path.read_text()) if path.exists() else {}
    figures["binder"] = {"environment_bytes": env.size_bytes(), "install_s": round(env.install_seconds, 1),
                         "new_environment_to_first_view_s": round(to_first_view_s, 1),
                         "notebook_01_s": round(notebook_s, 1)}
    path.write_text(json.dumps(figures, indent=2) + "\n")

"""Binder: an environment made from ``binder/`` alone imports gpulab, has its JupyterLab extension and runs notebook 1.

mybinder.org (repo2docker) takes the Python version from ``binder/runtime.txt``,
runs ``pip install -r binder/requirements.txt`` from the repository's root and
then ``binder/postBuild``, if there is one. This test does the same in a new
virtual environment, with no GPU. pip's cache is used, so on a machine that
installed gpulab before, the CUDA wheels come from the cache; it still takes
minutes, hence the ``slow`` marker.

Jupyter's user and config folders point at empty temporary ones, so only what
the new environment installed is seen.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
BINDER = ROOT / "binder"
FIRST_NOTEBOOK = ROOT / "notebooks" / "01-first-kernel.ipynb"
ANSI = re.compile(r"\x1b\[[0-9;]*m")

# Run by the new environment's Python: execute a notebook in a kernel of that same Python.
EXECUTE = textwrap.dedent(r"""
    import re
    import sys

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
    NotebookClient(notebook, km=manager, timeout=300, resources={"metadata": {"path": sys.argv[3]}}).execute()
    nbformat.write(notebook, out)
    errors = [o.text for cell in notebook.cells for o in cell.get("outputs", [])
              if o.output_type == "stream" and o.name == "stderr" and re.search(r"Error|Exception|Traceback", o.text)]
    if errors:
        sys.exit("errors on stderr:\n" + "\n".join(errors))
    print(notebook.cells[-1].outputs[0].text.strip())
""")


def runtime_python() -> str:
    """An interpreter of the version binder/runtime.txt names (skips the test when there is none)."""
    text = (BINDER / "runtime.txt").read_text().strip()
    match = re.fullmatch(r"python-(\d+\.\d+)(\.\d+)?", text)
    assert match, f"binder/runtime.txt should read python-X.Y, not {text!r}"
    version = match[1]
    if f"{sys.version_info.major}.{sys.version_info.minor}" == version:
        return sys.executable
    found = shutil.which(f"python{version}")
    if found is None:
        pytest.skip(f"binder/runtime.txt asks for Python {version}, which is not installed here")
    return found


def run(command, **options) -> subprocess.CompletedProcess:
    """Run ``command``; on failure, fail the test with its output."""
    done = subprocess.run([str(c) for c in command], capture_output=True, text=True, **options)
    if done.returncode:
        pytest.fail(f"{' '.join(map(str, command))} exited with {done.returncode}:\n"
                    f"{done.stdout[-4000:]}\n{done.stderr[-4000:]}")
    return done


def test_binder_environment_runs_the_first_notebook(tmp_path):
    assert (BINDER / "requirements.txt").is_file()
    prefix = tmp_path / "binder-env"
    run([runtime_python(), "-m", "venv", prefix])
    bin_dir = prefix / "bin"
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("JUPYTER", "PYTHON", "VIRTUAL_ENV", "IPYTHON"))}
    env.update(PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", VIRTUAL_ENV=str(prefix),
               JUPYTER_DATA_DIR=str(tmp_path / "jupyter-data"), JUPYTER_CONFIG_DIR=str(tmp_path / "jupyter-config"),
               IPYTHONDIR=str(tmp_path / "ipython"), PYTHONUNBUFFERED="1")

    # What repo2docker does: install the requirements from the repository's root, then postBuild.
    run([bin_dir / "python", "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         "-r", BINDER / "requirements.txt"], cwd=ROOT, env=env)
    if (BINDER / "postBuild").exists():
        run(["bash", BINDER / "postBuild"], cwd=ROOT, env=env)

    # gpulab imports from the new environment (not from the checkout).
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
    done = run([bin_dir / "python", "-c", EXECUTE, FIRST_NOTEBOOK, executed, FIRST_NOTEBOOK.parent],
               cwd=tmp_path, env=env, timeout=900)
    kernel_python, module = done.stdout.strip().splitlines()[-1].split()
    assert Path(kernel_python).parent == bin_dir and Path(module).is_relative_to(prefix), done.stdout

"""Fill a shared cache folder with every build some notebooks make, as learners' runs will look them up.

A build's key holds the kernel's source, its bytecode, its element and
uniform types and its target (docs/security.md): the only way to be sure a
folder holds the keys a learner's run computes is to run what the learner
runs. So :func:`warm` executes each notebook top to bottom, in a fresh
kernel of this Python (the learners' environment: same gpulab, numba-cuda,
toolchain and Python), with the build cache pointed at the folder:

- once as it is, with no GPU here: the builds a learner on a CPU-only
  server makes (cells without ``--target`` compile for
  :data:`~gpulab.compiler.target.DEFAULT_CC`);
- once per extra target, with ``%gpulab defaults --target T`` run first:
  the builds a learner on a GPU of that compute capability makes from
  cells that name no target. (Runs on such a GPU also build for their
  device what the notebook runs there; those are the same builds where the
  types are the same.)

The runs fill a folder of their own inside the one asked for, reading that
one's entries as a shared layer; only when every notebook ran are the new
builds moved in. A notebook that stops leaves the folder as it was (or
not there, where it was not).

nbclient, nbformat and ipykernel are needed (``pip install 'gpulab[classroom]'``).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..cache.buildcache import ENV_DIR, ENV_MAX_BYTES, ENV_SHARED
from ..cache.folder import EntryFolder
from ..compiler.target import parse_target
from ..errors import ToolkitNotFoundError, WarmError

__all__ = ["Warmed", "kernel_manager", "notebooks_in", "read_notebook", "warm"]

CELL_TIMEOUT_S = 600
STAGING_PREFIX = ".warming-"
"""The folder the runs fill, inside the one to fill, until every notebook has run."""
UNBOUNDED = str(2**62)
"""The folder's size bound while warming: nothing a notebook builds is evicted."""


@dataclass
class Warmed:
    """What :func:`warm` did.

    Attributes
    ----------
    folder : Path
        The folder filled.
    runs : list of (str, str, int)
        Per notebook and pass (``"no GPU"`` or a target), the entries it added.
    entries : int
        Entry files in the folder at the end.
    """

    folder: Path
    runs: list[tuple[str, str, int]] = field(default_factory=list)
    entries: int = 0

    def __str__(self) -> str:
        width = max((len(name) for name, _, _ in self.runs), default=0)
        lines = [f"  {name.ljust(width)}  {target:8}  +{added} builds" for name, target, added in self.runs]
        return "\n".join([f"{self.folder}: {self.entries} entries", *lines])


def notebooks_in(paths) -> list[Path]:
    """The notebooks ``paths`` name: files as given, folders' ``*.ipynb`` in name order.

    Raises
    ------
    FileNotFoundError
        For a path that is not there, or when no notebook is found.
    """
    found: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            found += sorted(p for p in path.glob("*.ipynb") if not p.name.startswith("."))
        elif path.is_file():
            found.append(path)
        else:
            raise FileNotFoundError(f"no notebook or folder {path}")
    if not found:
        raise FileNotFoundError(f"no notebooks in {', '.join(map(str, paths))}")
    return found


def read_notebook(path: Path):
    """The notebook at ``path``, as nbformat 4.

    Raises
    ------
    WarmError
        When the file is not a notebook nbformat can read (not JSON, not a notebook's structure).
    OSError
        When it cannot be read at all.
    """
    import nbformat

    try:
        return nbformat.read(path, as_version=4)
    except OSError:
        raise
    except Exception as exc:  # noqa: BLE001 - nbformat raises many classes for a file that is no notebook
        raise WarmError(f"{path} is not a notebook nbformat can read ({type(exc).__name__}: {exc}); "
                        "warm runs .ipynb files that Jupyter saved") from None


def _setup_cell(target: str | None) -> str | None:
    return None if target is None else f"%load_ext gpulab\n%gpulab defaults --target {target}"


def kernel_manager():
    """A kernel manager whose kernels are ipykernels of this Python, whatever kernel specs the machine has.

    Raises
    ------
    ToolkitNotFoundError
        When nbclient, nbformat or ipykernel is not installed.
    """
    try:
        import ipykernel, nbclient, nbformat  # noqa: F401, E401
        from jupyter_client.kernelspec import KernelSpec, KernelSpecManager
        from jupyter_client.manager import AsyncKernelManager
    except ImportError as exc:
        raise ToolkitNotFoundError(f"running notebooks needs {exc.name}: pip install 'gpulab[classroom]'") from None

    class ThisPython(KernelSpecManager):
        def get_kernel_spec(self, kernel_name):
            return KernelSpec(argv=[sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                              display_name="gpulab warm", language="python")

    return AsyncKernelManager(kernel_spec_manager=ThisPython())


def _execute(path: Path, folder: Path, target: str | None, known: Path | None) -> None:
    """Run ``path`` in a fresh kernel of this Python whose build cache writes to ``folder`` and also reads ``known``."""
    manager = kernel_manager()
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    notebook = read_notebook(path)
    setup = _setup_cell(target)
    if setup:
        notebook.cells.insert(0, nbformat.v4.new_code_cell(setup))
    env = {**os.environ, ENV_DIR: str(folder), ENV_SHARED: str(known or ""), ENV_MAX_BYTES: UNBOUNDED}
    client = NotebookClient(notebook, km=manager,
                            timeout=CELL_TIMEOUT_S, resources={"metadata": {"path": str(path.parent)}})
    try:
        client.execute(env=env)
    except CellExecutionError as exc:
        raise WarmError(f"{path} ({target or 'no GPU'}) stopped at a cell: {exc}") from None


def warm(paths, out, targets=()) -> Warmed:
    """Run the notebooks ``paths`` names, so that ``out`` holds every build they make.

    Parameters
    ----------
    paths : sequence of str or os.PathLike
        Notebooks, or folders of them.
    out : str or os.PathLike
        The folder to fill: created (0700) if missing, and it must be the
        current user's (see :class:`~gpulab.cache.BuildCache`). Entries
        already there are kept (and not built again); nothing is added
        unless every notebook ran. :func:`~gpulab.cache.share.publish` then
        opens it to readers.
    targets : sequence of str
        Compute capabilities (``"sm_80"``) of the class's GPUs: one more run
        of every notebook for each.

    Returns
    -------
    Warmed

    Raises
    ------
    WarmError
        When a file is not a notebook, or a notebook stops at an error (a learner's run would too); ``out``
        is left as it was.
    TargetError
        For a target gpulab or the installed toolchain does not build for.
    Untrusted, OSError
        When ``out`` cannot be a cache folder of the current user.
    """
    passes = [None, *(parse_target(t).arch for t in targets)]
    notebooks = notebooks_in(paths)
    for notebook in notebooks:  # every one readable before any runs
        read_notebook(notebook)
    out_path = Path(out).expanduser().absolute()
    created = not out_path.exists()
    folder = EntryFolder(out_path, shared=False)
    staging = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=out_path))
    try:
        runs = EntryFolder(staging, shared=False)
        report = Warmed(out_path)
        for notebook in notebooks:
            for target in passes:
                before = len(runs.listing().entries)
                try:
                    _execute(notebook, staging, target, None if created else out_path)
                except WarmError as exc:
                    raise WarmError(f"{exc}\n{out_path} is left as it was") from None
                report.runs.append((notebook.name, target or "no GPU", len(runs.listing().entries) - before))
        for key in runs.listing().entries:
            folder.write(key, runs.read(key))
    except BaseException:
        shutil.rmtree(out_path if created else staging, ignore_errors=True)
        raise
    shutil.rmtree(staging)
    report.entries = len(folder.listing().entries)
    return report

"""Fixtures of the CPU tests."""

import shutil
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell

import gpulab


@pytest.fixture
def gpulab_shell():
    """An IPython shell with gpulab's magics loaded and ``gpulab`` imported."""
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "gpulab")
    shell.run_cell("import gpulab", store_history=False)
    return shell


@pytest.fixture
def source_checkout(tmp_path) -> Path:
    """A copy of the ``gpulab`` package as a source checkout holds it, its view never built (no ``static`` folder,
    no bytecode): a subprocess runs it with the copy's parent on ``PYTHONPATH``."""
    copy = tmp_path / "checkout" / "gpulab"
    shutil.copytree(Path(gpulab.__file__).parent, copy, ignore=shutil.ignore_patterns("__pycache__", "static"))
    return copy

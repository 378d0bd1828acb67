"""Fixtures of the CPU tests."""

import pytest
from IPython.core.interactiveshell import InteractiveShell


@pytest.fixture
def gpulab_shell():
    """An IPython shell with gpulab's magics loaded and ``gpulab`` imported."""
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "gpulab")
    shell.run_cell("import gpulab", store_history=False)
    return shell

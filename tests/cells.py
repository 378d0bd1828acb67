"""Run a notebook cell in a fresh IPython shell with gpulab loaded, as a new notebook would (the profile tests)."""

from __future__ import annotations

from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output


def run_fresh(cell: str, load_gpulab: bool = True):
    """``(result, captured)`` of ``cell`` run in a new shell (``%load_ext gpulab`` first unless told not to)."""
    shell = InteractiveShell()
    try:
        if load_gpulab:
            shell.run_line_magic("load_ext", "gpulab")
        with capture_output() as captured:
            result = shell.run_cell(cell)
    finally:
        InteractiveShell.clear_instance()
    return result, captured

"""A broken ``%%gpukernel`` or ``%gpulab`` cell stops Run All (and nbclient), showing its short error alone.

The magics raise what goes wrong in their cell; IPython shows it as the
error's ``_render_traceback_`` says: a build error's message at its cell
line, with no traceback.
"""

from __future__ import annotations

import re

import pytest

nbformat = pytest.importorskip("nbformat")
pytest.importorskip("nbclient")

from nbclient import NotebookClient  # noqa: E402
from nbclient.exceptions import CellExecutionError  # noqa: E402

from gpulab.notebook.warm import kernel_manager  # noqa: E402

SETUP = "%load_ext gpulab\nfrom gpulab import f32"
BROKEN = "%%gpukernel map --target sm_90\ndef broken(x: f32) -> f32:\n    y = x\n    return y.nope\n"
SHORT = ["FrontendError: numba could not compile `broken`: f32 has no attribute `nope`",
         "  at cell line 4:", "    return y.nope", "           ^"]


def plain(lines: list[str]) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(lines))


def notebook(*sources: str):
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in sources])


def test_run_all_stops_at_a_broken_kernel_cell_which_shows_its_short_error():
    book = notebook(SETUP, BROKEN, "reached = True")
    with pytest.raises(CellExecutionError) as raised:
        NotebookClient(book, km=kernel_manager(), timeout=300).execute()
    assert raised.value.ename == "FrontendError"
    (error,) = [output for output in book.cells[1].outputs if output.output_type == "error"]
    assert plain(error.traceback) == "\n".join(SHORT)  # the message at the cell line, nothing else
    assert book.cells[2].execution_count is None  # Run All stopped at the broken cell


ERRORS = [
    # the cell's own code raises: its frame alone, none of gpulab's
    ("%%gpukernel map --target sm_90\ndef fine(x: f32) -> f32:\n    return x\n1 / 0\n", "ZeroDivisionError",
     r"^-+\nZeroDivisionError +Traceback \(most recent call last\)\nCell In\[\d+\], line 4\n(.*\n)*----> 4 1 / 0\n"),
    # the cell does not parse: the syntax error at its line
    ("%%gpukernel map --target sm_90\ndef unparsed(x: f32) -> f32:\n    return x +\n", "SyntaxError",
     r"^  Cell In\[\d+\], line 3\n    return x \+\n +\^\nSyntaxError: invalid syntax$"),
    # a %gpulab command that cannot be done
    ("%gpulab use cuda:99", "DeviceError", r"^DeviceError: cuda:99 is not available: [^\n]+$"),
]


def test_every_error_of_a_magic_is_raised_with_its_short_rendering():
    """Each cell raises (nbclient stops Run All at such a cell, as above), shown without gpulab's frames."""
    book = notebook(SETUP, *(source for source, _, _ in ERRORS))
    client = NotebookClient(book, km=kernel_manager(), timeout=300)
    with client.setup_kernel():
        client.execute_cell(book.cells[0], 0)
        for index, (_, ename, shown) in enumerate(ERRORS, start=1):
            with pytest.raises(CellExecutionError) as raised:
                client.execute_cell(book.cells[index], index)
            assert raised.value.ename == ename
            (error,) = [output for output in book.cells[index].outputs if output.output_type == "error"]
            assert re.search(shown, plain(error.traceback)), plain(error.traceback)
            assert "gpulab/" not in plain(error.traceback)

"""Every example a user is shown runs as pasted, here with no GPU: the README's code blocks and the magics' help.

Each source is run top to bottom in a fresh IPython shell, as a new user
would paste it into a new notebook: the README's ``python`` blocks in order,
each example of ``%%gpukernel?`` and ``%gpulab?`` as a cell of its own. A
cell fails the test when it raises or writes an error to stderr (the magics
report errors in the user's code that way).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from gpulab.notebook.magics import GpulabMagics

README = Path(__file__).resolve().parents[2] / "README.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
STDERR_ERROR = re.compile(r"\b\w*(Error|Exception)\b|Traceback")


def readme_blocks() -> list[str]:
    """The README's ``python`` code blocks, in order."""
    return [body for language, body in FENCE.findall(README.read_text()) if language == "python"]


def help_examples(doc: str) -> list[str]:
    """The cells of a magic's "Examples" section: each ``%%`` example with its body, each ``%`` line alone."""
    block = doc.split("Examples\n", 1)[1].split("::\n", 1)[1].splitlines()
    first = next(line for line in block if line.strip())
    indent = len(first) - len(first.lstrip())
    section = []
    for line in block:  # the literal block: up to the first line indented less (IPython appends the usage)
        if line.strip() and len(line) - len(line.lstrip()) < indent:
            break
        section.append(line[indent:])
    cells: list[list[str]] = []
    for line in section:
        if line.startswith("%"):
            cells.append([line])
        elif cells:
            cells[-1].append(line)
    return ["\n".join(cell).strip() + "\n" for cell in cells]


def run_all(cells: list[str]) -> None:
    """Run ``cells`` in one fresh shell; fail on the first that raises or writes an error."""
    shell = InteractiveShell()
    try:
        for cell in cells:
            with capture_output() as captured:
                result = shell.run_cell(cell, store_history=True)
            shown = captured.stdout + captured.stderr
            assert result.success, f"this example failed:\n{cell}\n{shown}"
            assert not STDERR_ERROR.search(captured.stderr), f"this example wrote an error:\n{cell}\n{shown}"
    finally:
        InteractiveShell.clear_instance()


def test_the_readme_has_python_examples():
    blocks = readme_blocks()
    assert len(blocks) >= 3 and any("%%gpukernel" in block for block in blocks)


def test_the_readme_links_to_files_that_exist():
    links = re.findall(r"\]\(((?:docs|notebooks|bench)/[^)#\s]+)\)", README.read_text())
    assert links and [link for link in links if not (README.parent / link).exists()] == []


def test_the_readme_examples_run_as_pasted():
    run_all(readme_blocks())


@pytest.mark.parametrize("magic", ["gpukernel", "gpulab"])
def test_the_help_examples_run_as_pasted(magic):
    examples = help_examples(getattr(GpulabMagics, magic).__doc__)
    assert len(examples) >= 3, examples
    run_all(["%load_ext gpulab", *examples])


def test_help_examples_are_split_into_cells():
    doc = """Text.

        Examples
        --------
        ::

            %%gpukernel map
            def f(x):
                return x

            %gpulab devices
            %gpulab cache
        """
    assert help_examples(doc) == ["%%gpukernel map\ndef f(x):\n    return x\n", "%gpulab devices\n", "%gpulab cache\n"]

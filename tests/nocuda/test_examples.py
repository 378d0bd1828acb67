"""Every example a user is shown runs as pasted, here with no GPU: the README's code blocks and the magics' help.

Each source is run top to bottom in a fresh IPython shell, as a new user
would paste it into a new notebook: the README's ``python`` blocks in order,
each example of ``%%gpukernel?`` and ``%gpulab?`` as a cell of its own. A
cell fails the test when it raises or writes an error to stderr (the magics
report errors in the user's code that way), or when a build it makes is one
the lab itself flags: a warning-level diagnostic in the view it shows, in a
``gpulab.compile`` it keeps, or (on a GPU) in a build its calls make. The
docs' examples are checked for that too. A build a ``--compare`` or
``--diff`` makes to set beside the example's own is left out: it is there to
show what the other way costs.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from gpulab.compiler.build import Build
from gpulab.display.view import MIME_TYPE
from gpulab.notebook import session
from gpulab.notebook.magics import GpulabMagics
from gpulab.primitives.plan import DevicePlan

README = Path(__file__).resolve().parents[2] / "README.md"
DOCS = sorted((README.parent / "docs").glob("*.md"))
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
STDERR_ERROR = re.compile(r"\b\w*(Error|Exception)\b|Traceback")


def python_blocks(page: Path) -> list[str]:
    """The ``python`` code blocks of a Markdown page, in order."""
    return [body for language, body in FENCE.findall(page.read_text()) if language == "python"]


def readme_blocks() -> list[str]:
    """The README's ``python`` code blocks, in order."""
    return python_blocks(README)


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


def run_all(cells: list[str], must_run: bool = True) -> None:
    """Run ``cells`` in one fresh shell; fail on the first that raises or writes an error (unless not
    ``must_run``) or whose builds the lab flags."""
    shell = InteractiveShell()
    planned: list[Build] = []  # what a device call built (on a GPU)
    real = DevicePlan.build

    def build(plan, *args):
        planned.append(real(plan, *args))
        return planned[-1]

    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(DevicePlan, "build", build)
            seen: set[int] = set()
            for cell in cells:
                planned.clear()
                with capture_output() as captured:
                    result = shell.run_cell(cell, store_history=True)
                shown = captured.stdout + captured.stderr
                assert result.success or not must_run, f"this example failed:\n{cell}\n{shown}"
                assert not STDERR_ERROR.search(captured.stderr) or not must_run, \
                    f"this example wrote an error:\n{cell}\n{shown}"
                kept = [value for value in shell.user_ns.values() if isinstance(value, Build) and id(value) not in seen]
                seen.update(map(id, kept))
                found = flagged(captured.outputs, kept + planned)
                assert not found, f"the lab flags this example:\n{cell}\n" + "\n".join(found)
    finally:
        InteractiveShell.clear_instance()
        session.defaults.__init__()  # what `%gpulab defaults ...` set, for the tests after these


def flagged(outputs, builds: list[Build]) -> list[str]:
    """The warning-level diagnostics of the views in ``outputs`` (not of a build shown beside one to compare)
    and of ``builds``."""
    found = [(d["kind"], d["line"], d["message"]) for output in outputs
             for d in (output.data.get(MIME_TYPE) or {}).get("header", {}).get("diagnostics", [])
             if d["severity"] == "warning"]
    found += [(d.kind, d.python_line, d.message) for build in builds for d in build.diagnostics
              if d.severity == "warning"]
    return [f"{kind} (line {line}): {message}" for kind, line, message in found]


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


@pytest.mark.parametrize("page", DOCS, ids=lambda page: page.name)
def test_the_docs_examples_make_no_build_the_lab_flags(page):
    """(That they run as pasted is another test's; without a GPU they make no build but a compile.)"""
    run_all(python_blocks(page), must_run=False)


def test_the_lab_flags_a_float64_uniform_in_an_example():
    with pytest.raises(AssertionError, match="the lab flags this example"):
        run_all(["import gpulab\nfrom gpulab import f32\nscale = 2.0\n\n"
                 "def saxpy(x: f32, y: f32) -> f32:\n    return scale * x + y\n\n"
                 "build = gpulab.compile('map', saxpy, target='sm_90')\n"])

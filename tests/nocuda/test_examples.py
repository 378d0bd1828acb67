"""Every example a user is shown runs as pasted, here with no GPU: the magics' help, and what the pages' checks hold.

The python blocks of README.md and docs/*.md are tests of their own
(tests/doc_examples.py, collected by conftest.py); here each example of
``%%gpukernel?`` and ``%gpulab?`` runs as a cell of its own, in a fresh
IPython shell, and fails as a page's block does: when it raises, or when a
build it makes is one the lab itself flags.
"""

from __future__ import annotations

import re

import pytest
from doc_examples import ROOT, page_examples, run_all

from gpulab.notebook.magics import GpulabMagics

README = ROOT / "README.md"


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


def test_the_readme_has_python_examples_with_a_magic():
    pytest.importorskip("sybil")
    blocks = [example.parsed for example in page_examples().parse(README).examples()]
    assert len(blocks) >= 3 and any("%%gpukernel" in block for block in blocks)


def test_the_readme_links_to_files_that_exist():
    links = re.findall(r"\]\(((?:docs|notebooks|bench)/[^)#\s]+)\)", README.read_text())
    assert links and [link for link in links if not (README.parent / link).exists()] == []


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


def test_the_lab_flags_a_float64_uniform_in_an_example():
    with pytest.raises(AssertionError, match="the lab flags this example"):
        run_all(["import gpulab\nfrom gpulab import f32\nscale = 2.0\n\n"
                 "def saxpy(x: f32, y: f32) -> f32:\n    return scale * x + y\n\n"
                 "build = gpulab.compile('map', saxpy, target='sm_90')\n"])

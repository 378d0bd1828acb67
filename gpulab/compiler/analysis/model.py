"""One build's SASS, analysed: each instruction with its class, Python and CUDA line, role and live registers."""

from __future__ import annotations

from dataclasses import dataclass

from ...lru import LRU
from .. import listing
from ..build import Build
from .attribution import Attribution, attribute
from .guide import sass_class


@dataclass(frozen=True)
class Row:
    """One instruction and what the analysis found about it.

    Attributes
    ----------
    instruction : Instruction
    klass : str
        Its class id (see :func:`gpulab.compiler.analysis.guide.classes`).
    python_line : int or None
        The Python line, as its file or cell numbers it (what the Python pane prints beside it).
    cuda_line : int or None
        1-based line of ``kernel.cu``.
    role : {"computes", "supports", "inlined", "kernel"}
        See :mod:`gpulab.compiler.analysis.attribution`.
    live : int or None
        General-purpose registers live at the instruction (nvdisasm's count).
    """

    instruction: listing.Instruction
    klass: str
    python_line: int | None
    cuda_line: int | None
    role: str
    live: int | None


@dataclass
class Analysis:
    """The analysed SASS of one build (``rows`` in program order)."""

    build: Build
    rows: list[Row]

    def kernel_rows(self, kernel: str) -> list[Row]:
        """The rows of one function of the cubin."""
        return [r for r in self.rows if r.instruction.function == kernel]


ANALYSES: LRU = LRU(64)
"""Analyses by build key: a view, its diagnostics and its costs read one build's analysis several times."""


def analyse(build: Build) -> Analysis:
    """The :class:`Analysis` of ``build``, from nvdisasm's two outputs its disassembly keeps (made once per build
    and process)."""
    return ANALYSES.get_or_make(build.key, lambda: _analysis(build, *build.disassembled().raw))


def _analysis(build: Build, raw_sass: str, raw_live: str) -> Analysis:
    instructions = listing.parse(raw_sass)
    live = listing.parse_live(raw_live)
    classes = [sass_class(i.opcode, i.operands) for i in instructions]
    found: list[Attribution] = attribute(instructions, classes, build.sources(), build.python_source)
    rows = [Row(i, klass, a.python_line, a.cuda_line, a.role, live.get((i.function, i.offset), {}).get("GPR"))
            for i, klass, a in zip(instructions, classes, found)]
    return Analysis(build, rows)

"""One build's SASS, analysed: each instruction with its class, Python and CUDA line, role and live registers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .. import disasm
from . import listing
from .attribution import Attribution, attribute
from .guide import sass_class

if TYPE_CHECKING:
    from ..build import Build


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
    """The analysed SASS of one build (``rows`` in program order; ``raw``: the two nvdisasm outputs)."""

    build: object  # a Build: the cache checks these annotations at run time, and build.py imports this module
    rows: list[Row]
    raw: tuple[str, str]

    def kernel_rows(self, kernel: str) -> list[Row]:
        """The rows of one function of the cubin."""
        return [r for r in self.rows if r.instruction.function == kernel]


def _analysis(build: Build, raw_sass: str, raw_live: str) -> Analysis:
    instructions = listing.parse(raw_sass)
    live = listing.parse_live(raw_live)
    classes = [sass_class(i.opcode, i.operands) for i in instructions]
    found: list[Attribution] = attribute(instructions, classes, build.sources(), build.python_source)
    rows = [Row(i, klass, a.python_line, a.cuda_line, a.role, live.get((i.function, i.offset), {}).get("GPR"))
            for i, klass, a in zip(instructions, classes, found)]
    return Analysis(build, rows, (raw_sass, raw_live))


def analyse(build: Build) -> Analysis:
    """The :class:`Analysis` of ``build``: from the cache (:func:`keep_disassembly` wrote it when the build's
    SASS was made), else two nvdisasm runs."""
    from ... import cache

    return cache.default_cache().get_or_build(
        _key(build),
        lambda: _analysis(build, *disasm.disassemble_with_live_registers(build.cubin)),
        encode=lambda found: _encode(found.raw),
        decode=lambda meta, blobs: _analysis(build, blobs["sass"].decode(), blobs["live"].decode()))


def keep_disassembly(build: Build, raw: tuple[str, str]) -> None:
    """Store nvdisasm's two outputs for ``build`` (``disasm.disassemble_with_live_registers``) as its analysis'
    cache entry, unparsed: the SASS and the live registers come from one run of nvdisasm's side by side, and the
    view, which asks for both, does not wait for nvdisasm (about 0.27 s a run, however small the cubin) again."""
    from ... import cache

    cache.default_cache().put(_key(build), raw, encode=_encode)


def _key(build: Build) -> str:
    return f"{build.key}-analysis"


def _encode(raw: tuple[str, str]) -> tuple[dict, dict[str, bytes]]:
    return {}, {"sass": raw[0].encode(), "live": raw[1].encode()}

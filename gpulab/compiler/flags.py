"""What the build options mean to each tool, in one place: NVRTC's, nvJitLink's and ptxas' flags, NVVM's options.

The same option is spelled differently by each tool (contraction is
NVRTC's ``-fmad=``, nvJitLink's ``-fma=`` for its LTO optimiser and
ptxas' ``--fmad=``); a stage asks here and passes what it gets.
"""

from __future__ import annotations

from ..options import BuildOptions
from .target import Target


def _true(value: bool) -> str:
    return "true" if value else "false"


def nvrtc(options: BuildOptions, target: Target) -> tuple[str, ...]:
    """NVRTC's flags for the generated kernel: LTO-IR for an LTO link (``-dlto``), else PTX."""
    return (f"-arch={target.arch}", "-rdc=true", "-std=c++17", f"-fmad={_true(options.fma)}",
            *(["-dlto"] if options.lto else []), *(["-lineinfo"] if options.lineinfo else []))


def nvjitlink(options: BuildOptions, target: Target) -> list[str]:
    """nvJitLink's flags common to every link step (``-verbose``: ptxas' register and spill report)."""
    return [f"-arch={target.arch}", "-verbose", *(["-lineinfo"] if options.lineinfo else [])]


def lto_optimiser(options: BuildOptions) -> list[str]:
    """nvJitLink's flags for its link-time optimiser, which writes the whole kernel's PTX."""
    return ["-lto", "-ptx", f"-fma={int(options.fma)}"]


def ptxas(options: BuildOptions, max_registers: int | None = None) -> list[str]:
    """nvJitLink's flags for ptxas, which assembles the linked PTX (``max_registers``: a PTX link's cap)."""
    return [f"-Xptxas=--fmad={_true(options.fma)}", *([f"-maxrregcount={max_registers}"] if max_registers else [])]


def nvvm(options: BuildOptions) -> dict:
    """The options a frontend's NVVM step takes (contraction)."""
    return {"fma": options.fma}

"""NVRTC: the generated CUDA C++ -> LTO-IR (for an LTO link) or PTX (for a PTX link)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..errors import NvrtcError, ToolkitNotFoundError
from .artifacts import Artifact

KERNEL_FILENAME = "kernel.cu"


def _nvrtc():
    try:
        from cuda.bindings import nvrtc
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ToolkitNotFoundError(
            "NVRTC is not installed: pip install 'cuda-bindings>=13' 'cuda-toolkit[nvrtc]==13.*'"
        ) from exc
    return nvrtc


def _check(result, program=None, source=""):
    nvrtc = _nvrtc()
    status, *values = result
    if status != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        log = _log(program) if program is not None else ""
        raise NvrtcError(f"NVRTC failed ({status.name})", _with_source_lines(log, source))
    return values[0] if len(values) == 1 else values


def _log(program) -> str:
    nvrtc = _nvrtc()
    _, size = nvrtc.nvrtcGetProgramLogSize(program)
    buffer = b" " * size
    nvrtc.nvrtcGetProgramLog(program, buffer)
    return buffer.rstrip(b"\x00 ").decode(errors="replace")


def _with_source_lines(log: str, source: str) -> str:
    """Append each line of ``kernel.cu`` the log names, so the error reads on its own."""
    lines = source.splitlines()
    quoted = []
    for number in dict.fromkeys(int(n) for n in re.findall(rf"{KERNEL_FILENAME}\((\d+)\)", log)):
        if 0 < number <= len(lines):
            quoted.append(f"  {KERNEL_FILENAME}:{number}: {lines[number - 1].strip()}")
    return log + ("\n" + "\n".join(quoted) if quoted else "")


def version() -> tuple[int, int]:
    """Return NVRTC's ``(major, minor)`` version."""
    return tuple(_check(_nvrtc().nvrtcVersion()))


def supported_archs() -> tuple[int, ...]:
    """The ``sm_XY`` architectures (as ``XY``) the installed NVRTC compiles for."""
    return tuple(_check(_nvrtc().nvrtcGetSupportedArchs()))


def compile_kernel(source: str, flags: Sequence[str], *, output: str) -> Artifact:
    """Compile ``source`` with ``flags`` (:func:`gpulab.compiler.flags.nvrtc`) into ``output`` code
    (``"ltoir"`` or ``"ptx"``, as the flags ask).

    Raises
    ------
    NvrtcError
        With NVRTC's log and the generated lines it points at.
    """
    nvrtc = _nvrtc()
    program = _check(nvrtc.nvrtcCreateProgram(source.encode(), KERNEL_FILENAME.encode(), 0, [], []))
    try:
        encoded = [flag.encode() for flag in flags]
        _check(nvrtc.nvrtcCompileProgram(program, len(encoded), encoded), program, source)
        if output == "ltoir":
            size = _check(nvrtc.nvrtcGetLTOIRSize(program))
            buffer = b" " * size
            _check(nvrtc.nvrtcGetLTOIR(program, buffer))
            return Artifact("ltoir", buffer, "kernel")
        size = _check(nvrtc.nvrtcGetPTXSize(program))
        buffer = b" " * size
        _check(nvrtc.nvrtcGetPTX(program, buffer))
        return Artifact("ptx", buffer.rstrip(b"\x00"), "kernel")
    finally:
        nvrtc.nvrtcDestroyProgram(program)

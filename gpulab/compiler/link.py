"""nvJitLink: the kernel and the operator -> one cubin (and the linked PTX)."""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass

from ..errors import GpulabWarning, LinkError, ToolkitNotFoundError
from ..options import BuildOptions
from . import flags
from .artifacts import Artifact
from .target import Target

NVVM_SYMBOL_BUG = "Symbol name with unsupported characters"
"""What nvJitLink 13.0's optimizer (NVVM at -opt=2 and 3) says about some valid operators, a u8 map
found by the fuzz test among them (tests/nocuda/security/test_fuzz_refusals.py); at -opt=1 they link."""
FALLBACK_OPT = "-Xnvvm=-opt=1"


@dataclass(frozen=True)
class Linked:
    """What the link produced."""

    cubin: bytes
    ptx: str
    info_log: str


def _nvjitlink():
    try:
        from cuda.bindings import nvjitlink
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ToolkitNotFoundError(
            "nvJitLink is not installed: pip install 'cuda-bindings>=13' 'cuda-toolkit[nvjitlink]==13.*'"
        ) from exc
    return nvjitlink


def version() -> tuple[int, int]:
    """Return nvJitLink's ``(major, minor)`` version."""
    nvjitlink = _nvjitlink()
    return tuple(nvjitlink.version())


def supports(cc: tuple[int, int]) -> bool:
    """Whether the installed nvJitLink links for compute capability ``cc`` (it refuses others when created)."""
    nvjitlink = _nvjitlink()
    try:
        handle = nvjitlink.create(1, [f"-arch=sm_{cc[0]}{cc[1]}"])
    except nvjitlink.nvJitLinkError:
        return False
    nvjitlink.destroy(handle)
    return True


def _run(options: list[str], inputs: list[Artifact], want_ptx: bool):
    nvjitlink = _nvjitlink()
    kinds = {"ptx": nvjitlink.InputType.PTX, "ltoir": nvjitlink.InputType.LTOIR}
    handle = nvjitlink.create(len(options), options)
    try:
        for artifact in inputs:
            nvjitlink.add_data(handle, kinds[artifact.kind], artifact.data, len(artifact.data), artifact.name)
        try:
            nvjitlink.complete(handle)
        except nvjitlink.nvJitLinkError as exc:
            raise LinkError(f"nvJitLink could not link the kernel and the operator ({exc})",
                            _read(handle, nvjitlink.get_error_log_size, nvjitlink.get_error_log)) from None
        info = _read(handle, nvjitlink.get_info_log_size, nvjitlink.get_info_log)
        if want_ptx:
            return _read(handle, nvjitlink.get_linked_ptx_size, nvjitlink.get_linked_ptx), info
        return bytes(_read_bytes(handle, nvjitlink.get_linked_cubin_size, nvjitlink.get_linked_cubin)), info
    finally:
        nvjitlink.destroy(handle)


def _read_bytes(handle, size_of, read) -> bytearray:
    buffer = bytearray(size_of(handle))
    read(handle, buffer)
    return buffer


def _read(handle, size_of, read) -> str:
    return _read_bytes(handle, size_of, read).rstrip(b"\x00").decode(errors="replace")


def link(kernel: Artifact, operator: Artifact, target: Target, options: BuildOptions, *, libraries=(), more=(),
         max_registers: int | None = None) -> Linked:
    """Link the kernel with the operator for ``target``, as their kind says.

    Parameters
    ----------
    kernel, operator : Artifact
        Both LTO-IR (link-time optimisation: the operator is inlined) or
        both PTX (a PTX link: it stays a called function).
    options : BuildOptions
        The build's options (their flags: :mod:`gpulab.compiler.flags`).
    libraries : sequence of Artifact
        LTO-IR that numba links with the operator (in both modes).
    more : sequence of Artifact
        Further operators, of the operator's kind (those of mapped inputs).
    max_registers : int, optional
        The kernel's register cap (its ``__launch_bounds__``): in a PTX link
        the called operators must fit under it too, or ptxas refuses the
        call; they spill instead.

    Returns
    -------
    Linked
        The cubin, the whole kernel's PTX and the linker's info log
        (ptxas' register and spill report).

    Raises
    ------
    ValueError
        When the kernel and the operator are not of one kind.
    """
    kinds = {code.kind for code in (kernel, operator, *more)}
    if len(kinds) != 1 or kernel.kind not in ("ltoir", "ptx"):
        raise ValueError(f"link takes a kernel and an operator of one kind, both LTO-IR or both PTX; "
                         f"got {kernel.kind} and {operator.kind}")
    common = flags.nvjitlink(options, target)
    libraries = list(libraries)
    if kernel.kind == "ltoir":
        # Optimise once to the whole kernel's PTX (which the view shows), then
        # assemble that PTX: the same steps nvJitLink takes inside one LTO link.
        ptx = _optimise(common + flags.lto_optimiser(options), [kernel, operator, *more, *libraries])
        inputs = [Artifact("ptx", ptx.encode(), "kernel")]
        assemble = common + flags.ptxas(options)
    else:
        ptx = "\n".join(code.text for code in (kernel, operator, *more))
        inputs = [kernel, operator, *more, *libraries]  # libraries: LTO-IR, optimised among themselves, still called
        assemble = common + (["-lto"] if libraries else []) + flags.ptxas(options, max_registers)
    cubin, info = _run(assemble, inputs, want_ptx=False)
    return Linked(cubin=cubin, ptx=ptx, info_log=info)


_TOO_MUCH_SHARED = re.compile(r"uses too much shared data \((0x[0-9a-fA-F]+) bytes, (0x[0-9a-fA-F]+) max\)")


def shared_overflow(error: LinkError) -> tuple[int, int] | None:
    """``(bytes, most)`` where ``error`` is ptxas refusing a kernel's shared memory (more than a block may
    declare), else None."""
    found = _TOO_MUCH_SHARED.search(str(error))
    return (int(found[1], 16), int(found[2], 16)) if found else None


def _optimise(options: list[str], inputs: list[Artifact]) -> str:
    """The whole kernel's PTX after link-time optimisation; at ``-opt=1`` where NVVM's own bug refuses -opt=3.

    A program the host accepts must not be refused for the optimiser's fault;
    the fallback warns, since the operator then stays a called function.
    """
    try:
        return _run(options, inputs, want_ptx=True)[0]
    except LinkError as exc:
        if NVVM_SYMBOL_BUG not in exc.log:
            raise
    warnings.warn(f"nvJitLink's optimiser refused this operator ({NVVM_SYMBOL_BUG!r}, an NVVM bug), so it is "
                  f"linked with {FALLBACK_OPT}: it works, but stays a called function (CALL in the SASS)",
                  GpulabWarning, stacklevel=2)
    return _run(options + [FALLBACK_OPT], inputs, want_ptx=True)[0]

"""Every error and warning gpulab raises, in one place.

Errors about the user's own code carry a :class:`SourceLocation` and print
the offending line with a caret, so a notebook shows the cell line at fault
instead of a compiler traceback.
"""

from __future__ import annotations

import linecache
from dataclasses import dataclass


@dataclass(frozen=True)
class SourceLocation:
    """A line (and optional column) of a source file.

    Parameters
    ----------
    filename : str
        File name as the code object knows it (a notebook cell has a
        synthetic name that ``linecache`` resolves).
    line : int
        1-based line number in that file.
    column : int, optional
        0-based column of the caret.
    offset : int
        Added to ``line`` when printed (a cell-relative line number is
        ``line - offset``).
    """

    filename: str
    line: int
    column: int | None = None
    offset: int = 0

    def text(self) -> str:
        """Return the source line, or an empty string when it is unknown."""
        return linecache.getline(self.filename, self.line).rstrip("\n")

    def describe(self) -> str:
        """Return ``File "...", line N`` followed by the line and a caret."""
        head = f'File "{self.filename}", line {self.line - self.offset}'
        text = self.text()
        if not text:
            return head
        caret = ""
        if self.column is not None:
            caret = "\n    " + " " * self.column + "^"
        return f"{head}\n    {text}{caret}"


def described(value) -> str:
    """``value`` as a message names a wrong argument: its text when short, and its type (``b'FFMA' (a bytes)``)."""
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - a user's object whose repr fails is still named by its type
        text = ""
    name = type(value).__name__
    kind = f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"
    return f"{text} ({kind})" if text and len(text) <= 40 and "\n" not in text else kind


class GpulabError(Exception):
    """Base class of every gpulab error."""


class UserCodeError(GpulabError):
    """An error in the user's function, shown with its line.

    Parameters
    ----------
    message : str
        What is wrong and what to do about it.
    location : SourceLocation, optional
        Where in the user's code.
    """

    def __init__(self, message: str, location: SourceLocation | None = None):
        self.message = message
        self.location = location
        super().__init__(self._render())

    def _render(self) -> str:
        if self.location is None:
            return self.message
        return f"{self.message}\n  {self.location.describe()}"


class KernelTypeError(UserCodeError, TypeError):
    """An element type is missing, unknown or unsupported."""


class ConversionError(KernelTypeError, ValueError):
    """A value a call passes (an array, ``out=``, ``initial=``, an iota) is not exactly of the kernel's type.

    gpulab converts only what keeps every value (docs/conversion.md); the
    message says how to convert the rest.
    """


class ImpureKernelError(UserCodeError):
    """The function does something a kernel may not (I/O, mutation, unknown calls)."""


class KernelNameError(UserCodeError, NameError):
    """The function uses a name that is not defined (in its globals, closure or the allowed built-ins)."""


class LimitError(UserCodeError):
    """A kernel or a call goes past one of gpulab's limits (a name's length, a kernel's size, how deeply
    expressions, kernels or mapped inputs nest); the message names the limit and how to stay within it."""


class NestingError(LimitError):
    """An expression is nested too deeply to compile (split it into several assignments)."""


class SourceMismatchError(UserCodeError):
    """The source gpulab can read no longer matches the function Python runs (its file changed)."""


class KernelRuntimeError(UserCodeError):
    """The function raised while the host backend interpreted it (it returned a string, say)."""


class KernelTimeoutError(UserCodeError, TimeoutError):
    """A kernel ran on the host past its time limit (``gpulab.check(timeout=)``, ``gpulab.host.time_limit``)
    and was stopped; the message names the loop it was in and the item."""


class KernelIndexError(UserCodeError, IndexError):
    """A kernel read a captured array outside its shape; the message names the line, the array, the index and the shape."""


class FrontendError(UserCodeError):
    """numba could not type or compile the user's function."""


class FrontendUnsupportedError(FrontendError):
    """The build's frontend cannot build something gpulab supports (another frontend can); the message names what
    is missing and the frontend that builds it (docs/frontends.md)."""


class ToolError(GpulabError):
    """A compiler tool (NVRTC, nvJitLink, nvdisasm) failed; ``log`` holds its output.

    Parameters
    ----------
    message : str
        What failed.
    log : str
        The tool's own log.
    """

    def __init__(self, message: str, log: str = ""):
        self.log = log
        super().__init__(f"{message}\n{log}".rstrip())


class NvrtcError(ToolError):
    """NVRTC rejected the generated CUDA C++."""


class LinkError(ToolError):
    """nvJitLink could not link the kernel and the operator."""


class DisassemblerError(ToolError):
    """nvdisasm or cuobjdump failed on a cubin."""


class ToolkitNotFoundError(GpulabError):
    """A CUDA component is not installed; the message names the package."""


class TargetError(GpulabError, ValueError):
    """A compute capability could not be understood or is unsupported."""


class DeviceError(GpulabError):
    """A device is unknown, missing, or cannot run the call."""


class LengthMismatchError(GpulabError, ValueError):
    """Inputs (or an input and ``out=``) that must hold as many items as each other do not."""


class ArgumentError(GpulabError, ValueError):
    """An argument has a value gpulab cannot take (a size of ``inf``, more items than memory holds, an
    unknown primitive or option); the message says which value and what to give instead."""


class OffsetsError(ArgumentError):
    """Segment offsets that decrease, or reach outside the input; the message names the first bad one."""


class UnknownNameError(GpulabError, AttributeError):
    """``gpulab.NAME`` for a name the module does not have; the message names the close ones, or where it is."""


class HostArrayError(GpulabError, TypeError):
    """A host array was given to a device run (or the reverse)."""


class VerificationError(GpulabError):
    """A device result differs from the host reference where it must be exact."""


class WarmError(GpulabError):
    """A notebook run to fill a shared build cache stopped at an error (the message names the cell)."""


class ProfilerError(GpulabError):
    """Measuring a kernel could not be done: no GPU, no Nsight Compute, no permission to read the GPU's
    counters, or the profiler failed. The message says what is missing and what to do; IPython shows it
    alone, without a traceback (the build's estimated view does not need the profiler)."""

    def _render_traceback_(self) -> list[str]:
        return [f"{type(self).__name__}: {line}" if n == 0 else line for n, line in enumerate(str(self).splitlines())]


USER_ERRORS = (UserCodeError, TargetError, DeviceError, LengthMismatchError, ArgumentError, UnknownNameError,
               HostArrayError, VerificationError)
"""Errors in what the user wrote or passed (not failures of gpulab's tools): their message says it all,
so a notebook shows them without gpulab's frames."""


class GpulabWarning(UserWarning):
    """Base class of gpulab's warnings."""


class HostFallbackWarning(GpulabWarning):
    """No GPU could take the call, so it ran on the host reference backend."""


class CacheWarning(GpulabWarning):
    """The build cache skipped a bad entry or fell back to memory."""


class VerificationWarning(GpulabWarning):
    """A floating-point device result differs from the host's; the message gives the error."""


class AssociativityWarning(GpulabWarning):
    """A fold's operator is not associative: the device's result will differ from the host's.

    Parameters
    ----------
    message : str
        The counterexample, what the device will do, and how to silence it.
    location : SourceLocation, optional
        The operator's line.
    """

    def __init__(self, message: str, location: SourceLocation | None = None):
        super().__init__(message)
        self.message = message
        self.location = location

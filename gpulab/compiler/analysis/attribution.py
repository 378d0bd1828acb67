"""Which Python line each SASS instruction belongs to, and its role there.

The rule, applied to each instruction's location chain (``nvdisasm -gi``:
its source line, then every line it was inlined at):

- Its **Python line** is the innermost line of the chain in the user's
  function. Code of gpulab's operator wrapper (which reads the arguments
  and converts the result to the declared type) belongs to the ``def``
  line. Its **CUDA line** is the innermost line of ``kernel.cu``.
- An instruction with a Python line **computes** that line when it does the
  line's arithmetic: floating-point work, conversions and calls always; an
  integer instruction when its result reaches a value (see
  :mod:`.dataflow`). The rest with a Python line **supports** it: integer
  work whose results only become addresses, guards or branch conditions,
  control flow, and loads of constants; line info places them there, they
  are not what the line asks for.
- An instruction with no Python line whose chain passes through a CUDA
  line where the operator was inlined (the template lines that call it:
  ``apply(...)``, ``op(a, b)``) was **inlined** along with it: the loads of
  the arguments, the stores of the results, their address arithmetic and
  the loop around the call. Hovering a Python line used to light these too,
  because they share its CUDA keys.
- Everything else is the **kernel**'s own (the template's) code.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..frontends import WRAPPER_FILENAME
from .dataflow import computing
from ..listing import Instruction

if TYPE_CHECKING:
    from ..linemap import Sources

ROLES = ("computes", "supports", "inlined", "kernel")
_ALWAYS_COMPUTES = {"fp32", "fp64", "fp16", "conv", "call"}


@dataclass(frozen=True)
class Attribution:
    """Where one instruction belongs.

    Attributes
    ----------
    python_line : int or None
        The Python line, as its file or cell numbers it (what the Python pane prints beside it).
    cuda_line : int or None
        1-based line of ``kernel.cu``.
    role : {"computes", "supports", "inlined", "kernel"}
    """

    python_line: int | None
    cuda_line: int | None
    role: str


def def_line(python_source: str, first_line: int) -> int:
    """The line of the function's ``def`` (after any decorators) in a Python pane whose first line is ``first_line``."""
    for number, text in enumerate(python_source.splitlines(), first_line):
        if text.lstrip().startswith(("def ", "async def ")):
            return number
    return first_line


def _lines(chain, sources: Sources, wrapper_line: int) -> tuple[int | None, int | None, list[int]]:
    python = cuda = None
    cuda_lines = []
    for location in chain:
        key = sources.key(location.file, location.line)
        if python is None and location.file.endswith(WRAPPER_FILENAME):
            python = wrapper_line
        elif key and key.startswith("py:") and python is None:
            python = sources.python_line(key)
        elif key and key.startswith("cu:"):
            cuda_lines.append(int(key[3:]))
            cuda = cuda if cuda is not None else int(key[3:])
    return python, cuda, cuda_lines


def attribute(instructions: list[Instruction], classes: list[str], sources: Sources,
              python_source: str) -> list[Attribution]:
    """The :class:`Attribution` of each instruction (``classes`` are their class ids)."""
    wrapper_line = def_line(python_source, sources.python_first_line)
    found = [_lines(i.chain, sources, wrapper_line) for i in instructions]
    call_sites = {line for python, _, lines in found if python is not None for line in lines}
    values = computing(instructions)
    result = []
    for index, (python, cuda, cuda_lines) in enumerate(found):
        klass = classes[index]
        if python is not None:
            computes = klass in _ALWAYS_COMPUTES or (klass == "int" and index in values)
            role = "computes" if computes else "supports"
        elif call_sites.intersection(cuda_lines):
            role = "inlined"
        else:
            role = "kernel"
        result.append(Attribution(python, cuda, role))
    return result

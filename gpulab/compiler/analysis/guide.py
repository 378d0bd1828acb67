"""The instruction guide: what a SASS or PTX instruction does and its class, from ``guide.tsv``.

``explain("LDG.E.128")`` names the opcode and each of its modifiers in a
line; an opcode or modifier the guide does not know is said to be unknown.
``classify`` gives the class that per-line costs count (FP32, global
memory, ...). The table and its sources are in ``guide.tsv``.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from importlib import resources

from ...errors import ArgumentError, described

# A PTX type suffix decides the class of arithmetic ("typed" stems); a state space that of memory.
_PTX_TYPE_CLASS = {"f32": "fp32", "f64": "fp64", "f16": "fp16", "f16x2": "fp16", "bf16": "fp16", "bf16x2": "fp16"}
_PTX_SPACE_CLASS = {"global": "global", "shared": "shared", "local": "local", "const": "const", "param": "other"}


@dataclass(frozen=True)
class InstructionClass:
    """A class of instructions that costs are counted in."""

    id: str
    label: str
    description: str


@dataclass(frozen=True)
class _Table:
    classes: dict[str, InstructionClass]
    opcodes: dict[str, tuple[str, str]]  # "sass:FFMA" -> (class, text)
    modifiers: dict[str, str]  # "sass:.E" or "sass:MUFU.RCP" -> text


@functools.cache
def _table() -> _Table:
    classes, opcodes, modifiers = {}, {}, {}
    text = resources.files(__package__).joinpath("guide.tsv").read_text(encoding="utf-8")
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        kind, name, klass, what = line.split("\t")
        if kind == "class":
            classes[name] = InstructionClass(name, klass, what)
        elif kind in ("sass", "ptx"):
            opcodes[f"{kind}:{name}"] = (klass, what)
        elif kind in ("sass-mod", "ptx-mod"):
            modifiers[f"{kind[:-4]}:{name}"] = what
        else:
            raise ValueError(f"guide.tsv line {number}: unknown kind {kind!r}")
    return _Table(classes, opcodes, modifiers)


def classes() -> tuple[InstructionClass, ...]:
    """Every instruction class, in the order tables show them."""
    return tuple(_table().classes.values())


@dataclass(frozen=True)
class Explanation:
    """What an instruction does.

    Attributes
    ----------
    opcode : str
        As asked (``LDG.E.128``).
    isa : {"sass", "ptx"}
    known : bool
        Whether the guide knows the opcode's stem.
    klass : str
        Its class id (``global``), ``"other"`` when unknown.
    summary : str
        One line on the opcode.
    modifiers : tuple of (str, str or None)
        Each modifier not covered by the summary, with its meaning (None: unknown).
    """

    opcode: str
    isa: str
    known: bool
    klass: str
    summary: str
    modifiers: tuple[tuple[str, str | None], ...]

    def __str__(self) -> str:
        parts = [f"{self.opcode}: {self.summary}"]
        parts += [f".{m}: {text or 'unknown modifier'}" for m, text in self.modifiers]
        return " ".join(f"{part.rstrip('.')}." for part in parts)

    def as_dict(self) -> dict:
        """The explanation as the view's bundle carries it."""
        return {"opcode": self.opcode, "isa": self.isa, "known": self.known, "class": self.klass,
                "summary": self.summary, "modifiers": [[m, text] for m, text in self.modifiers]}


def explain(opcode: str) -> Explanation:
    """Explain a SASS opcode (``"FFMA"``, ``"LDG.E.128"``) or a PTX instruction (``"ld.global.v4.f32"``).

    Upper-case text is read as SASS, lower-case as PTX. A leading guard
    (``@P0``) and anything after the first space (the operands) are ignored.

    Raises
    ------
    ArgumentError
        When ``opcode`` is not a str.
    """
    if not isinstance(opcode, str):
        raise ArgumentError(f"gpulab.explain takes an instruction as text, such as \"FFMA\" or "
                            f"\"ld.global.v4.f32\", not {described(opcode)}")
    words = opcode.strip().split()
    if words and words[0].startswith("@"):
        words = words[1:]
    name = words[0].rstrip(";") if words else ""
    isa = "ptx" if name[:1].islower() else "sass"
    table = _table()
    parts = name.split(".")
    for size in range(len(parts), 0, -1):
        found = table.opcodes.get(f"{isa}:{'.'.join(parts[:size])}")
        if found:
            klass, summary = found
            rest = parts[size:]
            break
    else:
        return Explanation(name, isa, False, "other", "not in gpulab's instruction guide", ())
    if isa == "ptx":
        klass = _ptx_class(klass, parts[1:])
    modifiers = tuple((m, table.modifiers.get(f"{isa}:{parts[0]}.{m}") or table.modifiers.get(f"{isa}:.{m}"))
                      for m in rest)
    return Explanation(name, isa, True, klass, summary, modifiers)


def _ptx_class(klass: str, modifiers: list[str]) -> str:
    if klass == "typed":
        types = [m for m in modifiers if m in _PTX_TYPE_CLASS or m == "pred" or (m[:1] in "sub" and m[1:].isdigit())]
        return _PTX_TYPE_CLASS.get(types[-1], "int") if types else "int"
    if klass == "memory":
        return next((_PTX_SPACE_CLASS[m] for m in modifiers if m in _PTX_SPACE_CLASS), "global")
    return klass


def sass_class(opcode: str, operands: str = "") -> str:
    """The class of a SASS instruction, from its opcode (and operands, for one idiom).

    ptxas sets a register to a constant with ``HFMA2.MMA Rd, -RZ, RZ, c``
    (0 * 0 + c, on an idle pipe): that is a move, counted as integer work,
    not FP16 arithmetic.
    """
    if opcode.startswith("HFMA2") and operands.replace(" ", "").split(",")[1:3] == ["-RZ", "RZ"]:
        return "int"
    return explain(opcode).klass


_PTX_INSTRUCTION = re.compile(r"^\s*(?:@!?%\w+\s+)?([a-z][a-z0-9_]*(?:\.[a-z0-9_]+)*)(?:\s+\S|\s*;)")


def ptx_opcode(line: str) -> str | None:
    """The instruction of a line of PTX (``ld.global.v4.f32``), or None for directives, labels and the like."""
    found = _PTX_INSTRUCTION.match(line)
    return found.group(1) if found else None


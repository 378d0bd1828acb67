"""SASS as nvdisasm prints it, parsed into instructions with their source locations and live registers.

``nvdisasm -c -gi`` prints, before a run of instructions, ``//## File "F",
line N inlined at "G", line M`` notes: one note per level of inlining,
innermost first. An instruction inherits the notes above it until the next
note block or the next function: nvdisasm prints a note where the line
table's row changes, in address order, so an instruction after a branch
label (``.L_x_3:``) without a note of its own has the row of the one before. ``nvdisasm -c -lrm count`` prints the same
instructions with the number of live registers of each kind in a trailing
column (it ignores ``-gi``, so it is a second run).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_NOTE = re.compile(r'^\s*//## File "([^"]+)", line (\d+)(.*)$')
_INLINED_AT = re.compile(r'inlined at "([^"]+)", line (\d+)')
_INSTRUCTION = re.compile(
    r"^\s*/\*([0-9a-f]{4,})\*/\s+(?:(@!?U?P(?:T|\d+))\s+)?([A-Z][A-Z0-9_.]*)\s*(.*?)\s*;")
_LABEL = re.compile(r"^\.L\w*:$")  # a branch target inside a function
_SECTION = re.compile(r"^\s*\.section\s+\.text\.([^,\s]+)")
_LIVE_HEADER = re.compile(r"//\s*\|\s*GPR\s*\|(.*)$")


@dataclass(frozen=True)
class Location:
    """A line of a source file."""

    file: str
    line: int


@dataclass(frozen=True)
class Instruction:
    """One SASS instruction.

    Attributes
    ----------
    line : int
        0-based line of the shown SASS (``Build.sass``), annotations removed.
    function : str
        The function (kernel or callee) it belongs to.
    offset : int
        Byte offset in that function.
    predicate : str
        Its guard (``@P0``, ``@!P1``), or ``""``.
    opcode : str
        Opcode with modifiers (``LDG.E.128``).
    operands : str
        The operands as printed (``R4, desc[UR6][R8.64]``).
    chain : tuple of Location
        Where it came from: the innermost source line first, then each line
        it was inlined at. Empty when nvdisasm gave no line.
    """

    line: int
    function: str
    offset: int
    predicate: str
    opcode: str
    operands: str
    chain: tuple[Location, ...]

    @property
    def stem(self) -> str:
        """The opcode without modifiers (``LDG``)."""
        return self.opcode.split(".", 1)[0]

    @property
    def modifiers(self) -> tuple[str, ...]:
        """The opcode's modifiers (``("E", "128")``)."""
        return tuple(self.opcode.split(".")[1:])

    @property
    def text(self) -> str:
        """The instruction as nvdisasm prints it, without offset and padding."""
        guard = f"{self.predicate} " if self.predicate else ""
        return f"{guard}{self.opcode} {self.operands}".rstrip() + " ;"


def shown_lines(raw: str):
    """Yield ``(shown_line, text, chain)`` for every line of ``nvdisasm -gi`` output that is shown.

    Note lines are folded into the chain of the lines after them; the
    numbering is that of the SASS pane (notes removed).
    """
    shown = 0
    chain: tuple[Location, ...] = ()
    in_notes = False
    for text in raw.splitlines():
        note = _NOTE.match(text)
        if note:
            found = [Location(note.group(1), int(note.group(2)))]
            found += [Location(f, int(n)) for f, n in _INLINED_AT.findall(note.group(3))]
            chain = tuple(dict.fromkeys((*chain, *found))) if in_notes else tuple(found)
            in_notes = True
            continue
        in_notes = False
        stripped = text.strip()
        if not _INSTRUCTION.match(text) and not _LABEL.match(stripped) and (stripped.startswith(".")
                                                                             or stripped.endswith(":")):
            chain = ()
        yield shown, text, chain
        shown += 1


def parse(raw: str) -> list[Instruction]:
    """Return the instructions of ``nvdisasm -c -gi`` output, in order."""
    found, function = [], ""
    for line, text, chain in shown_lines(raw):
        section = _SECTION.match(text)
        if section:
            function = section.group(1)
            continue
        match = _INSTRUCTION.match(text)
        if match:
            offset, predicate, opcode, operands = match.groups()
            found.append(Instruction(line, function, int(offset, 16), predicate or "", opcode, operands, chain))
    return found


def parse_live(raw: str) -> dict[tuple[str, int], dict[str, int]]:
    """Return live register counts per ``(function, offset)`` from ``nvdisasm -c -lrm count`` output.

    Each value maps a register file (``GPR``, ``PRED``, ``UGPR``, ``UPRED``)
    to how many of its registers are live at that instruction.
    """
    live, function, files = {}, "", ["GPR"]
    for text in raw.splitlines():
        section = _SECTION.match(text)
        if section:
            function = section.group(1)
            continue
        header = _LIVE_HEADER.search(text)
        if header:
            files = ["GPR", *(c.strip() for c in header.group(1).split("|") if c.strip())]
            continue
        match = _INSTRUCTION.match(text)
        if match and "//" in text:
            cells = text.rsplit("//", 1)[1].strip().strip("|").split("|")
            counts = {name: int(cell) for name, cell in zip(files, cells) if cell.strip().isdigit()}
            live[(function, int(match.group(1), 16))] = {name: counts.get(name, 0) for name in files}
    return live

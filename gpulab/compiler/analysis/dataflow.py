"""Which SASS instructions compute values, and which only feed addresses, guards and branches.

A backward slice over registers: an instruction *computes* when a register
it writes reaches a value use (data stored to memory, data shuffled across
lanes, or a value operand of another computing instruction). Registers read
inside ``[...]`` are addresses, a ``@P`` guard is control, and neither makes
its producer compute. Within one function, the definition that reaches a
use is taken as the last one before it in program order: exact for straight
code, an approximation across loop back-edges (fine for classing work).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..listing import Instruction

_REGISTER = re.compile(r"\b(U?R)(\d+|Z)\b|\b(U?P)(\d|T)\b")
_NO_DESTINATION = {
    "ST", "STG", "STS", "STL", "RED", "REDG", "BRA", "BRX", "JMP", "EXIT", "RET", "CALL", "BAR", "BSSY", "BSYNC",
    "WARPSYNC", "MEMBAR", "FENCE", "ERRBAR", "CGAERRBAR", "CCTL", "NOP", "YIELD", "BREAK", "NANOSLEEP", "DEPBAR",
    "ENDCOLLECTIVE", "KILL", "BPT",
}
_STORES = {"ST", "STG", "STS", "STL", "RED", "REDG", "ATOM", "ATOMG", "ATOMS"}
_DOUBLE = {"DADD", "DMUL", "DFMA", "DSETP"}


@dataclass(frozen=True)
class Access:
    """The registers one instruction writes and reads: as values, or as addresses and other controls."""

    writes: tuple[str, ...]
    values: tuple[str, ...]
    addresses: tuple[str, ...]
    guard: str | None


def _split(operands: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for char in operands:
        depth += char == "["
        depth -= char == "]"
        if char == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += char
    return [p for p in (*parts, current.strip()) if p]


def _registers(text: str, width: int = 1) -> list[str]:
    """Registers named in an operand; a pair or quad for wide operands (R4 of a 64-bit value is R4, R5)."""
    found = []
    for match in _REGISTER.finditer(text):
        kind, number = (match.group(1), match.group(2)) if match.group(1) else (match.group(3), match.group(4))
        if number in ("Z", "T"):
            continue  # RZ, URZ, PT, UPT: constants
        wide = 2 if ".64" in text[match.end():match.end() + 3] else width
        found += [f"{kind}{int(number) + k}" for k in range(wide if kind in ("R", "UR") else 1)]
    return found


def _is_predicate(operand: str) -> bool:
    return bool(re.fullmatch(r"U?P(\d|T)", operand))


def _is_register(operand: str) -> bool:
    return bool(re.fullmatch(r"U?R(\d+|Z)", operand))


def _widths(instruction: Instruction) -> tuple[int, int]:
    """Registers per written value and per read value."""
    mods = instruction.modifiers
    stem = instruction.stem
    vector = 4 if "128" in mods else 2 if "64" in mods else 1
    if stem in _DOUBLE:
        return (1 if stem == "DSETP" else 2), 2
    if stem in ("F2F", "I2F", "F2I", "I2I"):
        types = [m for m in mods if m[:1] in "FSU" and m[1:].isdigit()]
        write = 2 if types and types[0].endswith("64") else 1
        read = 2 if len(types) > 1 and types[1].endswith("64") else 1
        return write, read
    if "WIDE" in mods:
        return 2, 1
    return vector, vector if stem in _STORES else 1


def access(instruction: Instruction) -> Access:
    """Split an instruction's registers into writes, value reads and address reads."""
    operands = _split(instruction.operands)
    write_width, read_width = _widths(instruction)
    writes: list[str] = []
    if instruction.stem not in _NO_DESTINATION and operands:
        first = operands[0]
        taken = 1
        extra = operands[1:]
        limit = 1 if _is_predicate(first) else 2
        while extra and taken <= limit and _is_predicate(extra[0]):
            taken += 1
            extra = extra[1:]
        if _is_predicate(first) and taken == 1 and extra and _is_register(extra[0]):
            taken += 1
        for operand in operands[:taken]:
            writes += _registers(operand, 1 if _is_predicate(operand) else write_width)
        operands = operands[taken:]
    values, addresses = [], []
    for position, operand in enumerate(operands):
        if "[" in operand or (instruction.stem == "SHFL" and position > 0):  # a shuffle's lane and clamp
            addresses += _registers(operand)
        else:
            values += _registers(operand, read_width)
    guard = instruction.predicate.lstrip("@!") or None
    return Access(tuple(writes), tuple(values), tuple(addresses), guard)


def computing(instructions: list[Instruction]) -> set[int]:
    """Indices of the instructions whose results reach a value use (see the module docstring)."""
    accesses = [access(i) for i in instructions]
    producer: dict[int, dict[str, int]] = {}  # instruction -> register -> the instruction that wrote it last
    last: dict[tuple[str, str], int] = {}
    for index, (instruction, found) in enumerate(zip(instructions, accesses)):
        producer[index] = {r: last[(instruction.function, r)] for r in (*found.values, *found.addresses)
                           if (instruction.function, r) in last}
        for register in found.writes:
            last[(instruction.function, register)] = index
    roots = [i for i, ins in enumerate(instructions)
             if ins.stem in _STORES or ins.stem == "SHFL"]
    computed: set[int] = set()
    work = list(roots)
    while work:
        index = work.pop()
        for register in accesses[index].values:
            source = producer[index].get(register)
            if source is not None and source not in computed:
                computed.add(source)
                work.append(source)
    return computed

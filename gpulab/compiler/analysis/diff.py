"""Two builds side by side: their SASS aligned instruction by instruction, and counts per class and per line."""

from __future__ import annotations

import difflib
import re
from collections import Counter
from dataclasses import dataclass
from ...errors import ArgumentError, described
from ...shown import Shown
from ..build import Build
from .calls import calls, count_by_kind
from .guide import classes
from .model import Row, analyse

_REGISTER = re.compile(r"\b(U?R|U?P|B|SR)\d+\b")
_LABEL = re.compile(r"\.L_x_\d+")


def normalise(row: Row) -> str:
    """An instruction with register numbers and labels blanked, so that allocation differences align."""
    ins = row.instruction
    guard = _REGISTER.sub(lambda m: m.group(1), ins.predicate)
    operands = _LABEL.sub(".L", _REGISTER.sub(lambda m: m.group(1), ins.operands.replace(".reuse", "")))
    return f"{guard} {ins.opcode} {operands}".strip()


@dataclass(frozen=True)
class DiffRow:
    """One aligned pair: ``tag`` is ``equal``, ``replace``, ``delete`` (only in a) or ``insert`` (only in b).

    ``a_line``/``b_line`` are 0-based lines of each build's SASS pane (None where that side has nothing).
    """

    tag: str
    function: str
    a_line: int | None
    a_text: str
    b_line: int | None
    b_text: str


@dataclass
class BuildDiff(Shown):
    """What :func:`diff` returns: shown as HTML in a notebook and as text elsewhere.

    Attributes
    ----------
    labels : (str, str)
        What tells the two builds apart (``"sm_80"`` / ``"sm_90"``).
    rows : list of DiffRow
        Every instruction of both, aligned.
    classes : dict of str to (int, int)
        Class id -> instructions in a and in b.
    python : dict of int to (Counter, Counter)
        Python pane line -> instructions by class in a and in b.
    calls : (dict, dict)
        Call kind -> CALL instructions, in a and in b.
    registers : (dict, dict)
        Kernel -> registers per thread, in a and in b.
    """

    labels: tuple[str, str]
    rows: list[DiffRow]
    classes: dict[str, tuple[int, int]]
    python: dict[int, tuple[Counter, Counter]]
    calls: tuple[dict, dict]
    registers: tuple[dict, dict]

    @property
    def changed(self) -> int:
        """Aligned rows that differ."""
        return sum(1 for r in self.rows if r.tag != "equal")

    def as_dict(self) -> dict:
        """The diff as the view's bundle carries it (see docs/bundle.md); lines index each build's SASS pane."""
        return {"labels": list(self.labels), "class_labels": {c.id: c.label for c in classes()},
                "rows": [[r.tag, r.a_line, r.a_text, r.b_line, r.b_text] for r in self.rows],
                "classes": {c: list(v) for c, v in self.classes.items()},
                "python": {str(k): [dict(a), dict(b)] for k, (a, b) in self.python.items()},
                "calls": list(self.calls), "registers": list(self.registers)}

    def __repr__(self) -> str:
        total = [sum(v[side] for v in self.classes.values()) for side in (0, 1)]
        return (f"<BuildDiff {self.labels[0]} vs {self.labels[1]}: {total[0]} and {total[1]} SASS instructions, "
                f"{self.changed} aligned rows differ>")


def _labels(a: Build, b: Build) -> tuple[str, str]:
    """What differs between two builds, in words."""
    def describe(build: Build, other: Build) -> str:
        parts = []
        if build.name != other.name or build.python_source != other.python_source:
            parts.append(build.name if build.name != other.name else "version")
        if build.target != other.target:
            parts.append(build.target.arch)
        if build.options.lto != other.options.lto:
            parts.append("LTO" if build.options.lto else "PTX link")
        if build.options.fma != other.options.fma:
            parts.append("fma" if build.options.fma else "no fma")
        if build.options.frontend != other.options.frontend:
            parts.append(build.options.frontend)
        if build.options.index_bits != other.options.index_bits:
            parts.append(f"{build.options.index_bits}-bit indices")
        if build.primitive != other.primitive:
            parts.append(build.primitive)
        return ", ".join(parts) or build.key[:8]
    first, second = describe(a, b), describe(b, a)
    if first == second:  # two versions of one function, told apart by nothing but their code
        first, second = f"{first} (a)", f"{second} (b)"
    return first, second


def _align(rows_a: list[Row], rows_b: list[Row]) -> list[DiffRow]:
    functions = list(dict.fromkeys([r.instruction.function for r in rows_a] + [r.instruction.function for r in rows_b]))
    aligned = []
    for function in functions:
        a = [r for r in rows_a if r.instruction.function == function]
        b = [r for r in rows_b if r.instruction.function == function]
        matcher = difflib.SequenceMatcher(None, [normalise(r) for r in a], [normalise(r) for r in b], autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            for k in range(max(i2 - i1, j2 - j1)):
                left = a[i1 + k] if i1 + k < i2 else None
                right = b[j1 + k] if j1 + k < j2 else None
                kind = tag if tag != "replace" or (left and right) else ("delete" if left else "insert")
                aligned.append(DiffRow(kind, function, left.instruction.line if left else None,
                                       left.instruction.text if left else "",
                                       right.instruction.line if right else None,
                                       right.instruction.text if right else ""))
    return aligned


def _per_line(rows: list[Row]) -> dict[int, Counter]:
    found: dict[int, Counter] = {}
    for row in rows:
        if row.python_line is not None:
            found.setdefault(row.python_line, Counter())[row.klass] += 1
    return found


def diff(a: Build, b: Build) -> BuildDiff:
    """Compare two builds: LTO vs PTX link, fma vs none, sm_80 vs sm_90, two frontends, two versions of a function.

    Parameters
    ----------
    a, b : Build
        What :func:`gpulab.compile` returned, for any two specs.

    Raises
    ------
    ArgumentError
        When ``a`` or ``b`` is not a build; for a target (``"sm_80"``) it says how to build ``a`` for it.

    Returns
    -------
    BuildDiff
        Shown side by side in IPython and Jupyter (``gpulab.display.analysis``).
        The SASS of both aligned (difflib on instructions with register
        numbers blanked), and counts per class, Python line, call kind and
        kernel registers.
    """
    for name, build in (("a", a), ("b", b)):
        _require_build(name, build, a)
    rows_a, rows_b = analyse(a).rows, analyse(b).rows
    count_a, count_b = Counter(r.klass for r in rows_a), Counter(r.klass for r in rows_b)
    per_class = {c.id: (count_a[c.id], count_b[c.id]) for c in classes() if count_a[c.id] or count_b[c.id]}
    lines_a, lines_b = _per_line(rows_a), _per_line(rows_b)
    python = {line: (lines_a.get(line, Counter()), lines_b.get(line, Counter()))
              for line in sorted(set(lines_a) | set(lines_b))}
    return BuildDiff(_labels(a, b), _align(rows_a, rows_b), per_class, python,
                     (count_by_kind(calls(a)), count_by_kind(calls(b))),
                     ({k: r.registers for k, r in a.resources.items()},
                      {k: r.registers for k, r in b.resources.items()}))


def _require_build(name: str, value, a) -> None:
    if isinstance(value, Build):
        return
    wanted = f"gpulab.diff compares two builds (what gpulab.compile returns); {name} is {described(value)}"
    if name == "b" and isinstance(value, str) and isinstance(a, Build):
        wanted += (f". To compare this build with the same function built for {value}, build it there: "
                   f"gpulab.diff(build, gpulab.compile({a.primitive!r}, {a.name}, target={value!r}))")
    raise ArgumentError(wanted)

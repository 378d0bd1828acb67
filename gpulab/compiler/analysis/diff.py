"""Two builds side by side: their SASS aligned instruction by instruction, and counts per class and per line."""

from __future__ import annotations

import difflib
import html
import re
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...table import Table
from .calls import calls, count_by_kind
from .guide import classes
from .model import Row, analyse

if TYPE_CHECKING:
    from ..build import Build

_REGISTER = re.compile(r"\b(U?R|U?P|B|SR)\d+\b")
_LABEL = re.compile(r"\.L_x_\d+")
CONTEXT = 2  # equal instructions shown around each change
MAX_ROWS = 400  # rows a repr shows; the rest is counted


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
class BuildDiff:
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

    def table(self) -> Table:
        """Counts per class, per Python line, calls and registers: a, b and b - a."""
        labels = {c.id: c.label for c in classes()}
        rows = [["SASS instructions", *_pair(sum(a for a, _ in self.classes.values()),
                                             sum(b for _, b in self.classes.values()))]]
        rows += [[labels[c], *_pair(a, b)] for c, (a, b) in self.classes.items()]
        for line, (a, b) in self.python.items():
            rows.append([f"Python line {line}", *_pair(sum(a.values()), sum(b.values()))])
        for kind in sorted(set(self.calls[0]) | set(self.calls[1])):
            rows.append([f"CALL: {kind}", *_pair(self.calls[0].get(kind, 0), self.calls[1].get(kind, 0))])
        for kernel in sorted(set(self.registers[0]) | set(self.registers[1])):
            rows.append([f"registers: {kernel}", *_pair(self.registers[0].get(kernel, 0),
                                                          self.registers[1].get(kernel, 0))])
        return Table(["", *self.labels, "change"], rows, f"{self.labels[0]} vs {self.labels[1]}")

    def _shown(self) -> list[DiffRow | None]:
        """The changed rows with CONTEXT equal rows around them; None marks a gap."""
        keep = set()
        for index, row in enumerate(self.rows):
            if row.tag != "equal":
                keep.update(range(max(0, index - CONTEXT), min(len(self.rows), index + CONTEXT + 1)))
        shown, previous = [], -1
        for index in sorted(keep):
            if index != previous + 1:
                shown.append(None)
            shown.append(self.rows[index])
            previous = index
        return shown

    def __repr__(self) -> str:
        width = 56
        lines = [repr(self.table()), "", f"{self.labels[0]:<{width}}   {self.labels[1]}"]
        shown = self._shown()
        for row in shown[:MAX_ROWS]:
            if row is None:
                lines.append("...")
                continue
            mark = {"equal": " ", "replace": "|", "delete": "<", "insert": ">"}[row.tag]
            lines.append(f"{row.a_text[:width]:<{width}} {mark} {row.b_text[:width]}".rstrip())
        if len(shown) > MAX_ROWS:
            lines.append(f"... {len(shown) - MAX_ROWS} more rows")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        colours = {"replace": "rgba(230,160,0,.18)", "delete": "rgba(220,50,50,.15)", "insert": "rgba(40,160,60,.15)"}
        cells = []
        shown = self._shown()
        for row in shown[:MAX_ROWS]:
            if row is None:
                cells.append("<tr><td colspan='2' style='color:#888'>...</td></tr>")
                continue
            style = f" style='background:{colours[row.tag]}'" if row.tag in colours else ""
            cells.append(f"<tr{style}><td>{html.escape(row.a_text)}</td><td>{html.escape(row.b_text)}</td></tr>")
        more = f"<div>... {len(shown) - MAX_ROWS} more rows</div>" if len(shown) > MAX_ROWS else ""
        head = "".join(f"<th style='text-align:left'>{html.escape(label)}</th>" for label in self.labels)
        return (f"<div class='gpulab-diff'>{self.table()._repr_html_()}"
                f"<table style='font-family:monospace;font-size:12px;border-collapse:collapse'>"
                f"<thead><tr>{head}</tr></thead><tbody>{''.join(cells)}</tbody></table>{more}</div>")

    def as_dict(self) -> dict:
        """The diff as the view's bundle carries it (see docs/bundle.md); lines index each build's SASS pane."""
        return {"labels": list(self.labels),
                "rows": [[r.tag, r.a_line, r.b_line] for r in self.rows],
                "classes": {c: list(v) for c, v in self.classes.items()},
                "python": {str(k): [dict(a), dict(b)] for k, (a, b) in self.python.items()},
                "calls": list(self.calls), "registers": list(self.registers)}


def _pair(a: int, b: int) -> list:
    return [a, b, f"{b - a:+d}" if b != a else ""]


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
    """Compare two builds: LTO vs PTX link, fma vs none, sm_80 vs sm_90, two versions of a function.

    Parameters
    ----------
    a, b : Build
        What :func:`gpulab.compile` returned, for any two specs.

    Returns
    -------
    BuildDiff
        The SASS of both aligned (difflib on instructions with register
        numbers blanked), and counts per class, Python line, call kind and
        kernel registers.
    """
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

"""The analysis of a build as the view's bundle carries it (``docs/bundle.md``, section "Analysis")."""

from __future__ import annotations

from ..build import Build
from .calls import calls, count_by_kind
from .costs import line_costs
from .diagnostics import diagnostics
from .guide import classes, explain, ptx_opcode
from .model import analyse
from .pressure import pressure

VERSION = 1
SASS_FIELDS = ("class", "role", "python_line", "cuda_line", "live")


def analysis_bundle(build: Build, panes=("sass", "ptx")) -> dict:
    """Everything the view shows about what a build costs, as plain JSON-able data.

    Every Python line is named as its file or cell numbers it; what is tied
    to one (a line's costs, a diagnostic, a kernel's pressure peak) also
    carries its ``key``, which finds its row of the Python pane. The SASS
    rows, opcodes and guide entries of a pane not in `panes` are left out.
    """
    rows = analyse(build).rows

    def key(line):
        return build.python_key(line) if line is not None else None

    found_calls = calls(build)
    costs = line_costs(build).as_dict()
    ptx_lines = ({str(i): op for i, op in enumerate(map(ptx_opcode, build.ptx.splitlines())) if op}
                 if "ptx" in panes else {})
    sass_rows = rows if "sass" in panes else []
    sass_ops = sorted({r.instruction.opcode for r in sass_rows})
    return {
        "version": VERSION,
        "classes": [{"id": c.id, "label": c.label, "description": c.description} for c in classes()],
        "sass_fields": list(SASS_FIELDS),
        "sass": {str(r.instruction.line): [r.klass, r.role, r.python_line, r.cuda_line, r.live] for r in sass_rows},
        "costs": {**costs, "python": [{**line, "key": key(line["line"])} for line in costs["python"]]},
        "pressure": {kernel: {**found.as_dict(), "peak_key": key(found.peak_python_line)}
                     for kernel, found in pressure(build).items()},
        "calls": [c.as_dict() for c in found_calls],
        "call_counts": count_by_kind(found_calls),
        "diagnostics": [{**d.as_dict(), "key": key(d.python_line)} for d in diagnostics(build)],
        "opcodes": {"sass": {str(r.instruction.line): r.instruction.opcode for r in sass_rows}, "ptx": ptx_lines},
        "guide": {"sass": {op: _guide_entry(op) for op in sass_ops},
                  "ptx": {op: _guide_entry(op) for op in sorted(set(ptx_lines.values()))}},
    }


def _guide_entry(opcode: str) -> dict:
    """The guide's explanation of `opcode`, with ``text``: the one line a view shows on hover."""
    found = explain(opcode)
    label = next((c.label for c in classes() if c.id == found.klass), found.klass)
    text = f"{found.opcode} ({label}): {found.summary}" if found.known else f"{found.opcode}: {found.summary}"
    modifiers = "; ".join(f".{m}: {meaning or 'unknown modifier'}" for m, meaning in found.modifiers)
    return {**found.as_dict(), "text": f"{text} {modifiers}".strip()}

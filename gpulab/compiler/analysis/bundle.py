"""The analysis of a build as the view's bundle carries it (``docs/bundle.md``, section "Analysis")."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .calls import calls, count_by_kind
from .costs import line_costs
from .diagnostics import diagnostics
from .guide import classes, explain, ptx_opcode
from .model import analyse
from .pressure import pressure

if TYPE_CHECKING:
    from ..build import Build

VERSION = 1
SASS_FIELDS = ("class", "role", "python_line", "cuda_line", "live")


def analysis_bundle(build: Build) -> dict:
    """Everything the view shows about what a build costs, as plain JSON-able data."""
    rows = analyse(build).rows
    found_calls = calls(build)
    ptx = sorted({op for op in map(ptx_opcode, build.ptx.splitlines()) if op})
    return {
        "version": VERSION,
        "classes": [{"id": c.id, "label": c.label, "description": c.description} for c in classes()],
        "sass_fields": list(SASS_FIELDS),
        "sass": {str(r.instruction.line): [r.klass, r.role, r.python_line, r.cuda_line, r.live] for r in rows},
        "costs": line_costs(build).as_dict(),
        "pressure": {kernel: found.as_dict() for kernel, found in pressure(build).items()},
        "calls": [c.as_dict() for c in found_calls],
        "call_counts": count_by_kind(found_calls),
        "diagnostics": [d.as_dict() for d in diagnostics(build)],
        "guide": {"sass": {op: explain(op).as_dict() for op in sorted({r.instruction.opcode for r in rows})},
                  "ptx": {op: explain(op).as_dict() for op in ptx}},
    }

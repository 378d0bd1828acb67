"""What the HTML view draws from a bundle's ``analysis`` (``docs/bundle.md``): gutters, findings, opcode hints.

- a cost bar beside each Python line: its SASS instructions by class, as
  wide as its share of the heaviest line;
- a register-pressure strip beside each SASS line: live registers against
  the kernel's allocation, the peak marked;
- the header's register summary and diagnostics, each tied (``data-k``) to
  its Python line so that hovering it lights that line in every pane;
- the instruction guide's one line for a SASS opcode or PTX instruction.

Every string here is compiler or user text and is escaped.
"""

from __future__ import annotations

import html
import re
from typing import Any

CLASS_ID = re.compile(r"[a-z][a-z0-9]{0,15}", re.ASCII)
"""A class id that may go into a CSS variable name; anything else is drawn as ``other``."""


def _esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _class_id(value: Any) -> str:
    return value if isinstance(value, str) and CLASS_ID.fullmatch(value) else "other"


def parse_key(key: Any) -> tuple[str, int] | None:
    """Split a line's key, ``"py:12"`` (row 12 of the Python pane), into ``("py", 12)``; None for anything else."""
    kind, _, num = str(key).partition(":")
    return (kind, int(num)) if num.isdigit() else None


def cost_gutter(bundle: dict) -> dict[int, str]:
    """The Python pane's cost bars, by 0-based row (found by each line's ``key``): a stack of segments per class."""
    analysis = bundle.get("analysis") or {}
    costs = analysis.get("costs") or {}
    lines = [row for row in costs.get("python") or [] if isinstance(row, dict)]
    labels = costs.get("labels") or {}
    heaviest = max((row.get("total") or 0 for row in lines), default=0)
    bars = {}
    for row in lines:
        key = parse_key(row.get("key"))
        counts: dict[str, int] = {}
        for part in ("computes", "supports"):
            for klass, n in (row.get(part) or {}).items():
                counts[klass] = counts.get(klass, 0) + int(n)
        total = sum(counts.values())
        if not total or not heaviest or key is None or key[0] != "py":
            continue
        segments = "".join(f'<i class="gl-k-{_class_id(k)}" style="flex-grow:{n}"></i>'
                           for k, n in sorted(counts.items(), key=lambda item: -item[1]))
        title = (f"{total} SASS instruction{'s' if total != 1 else ''}: "
                 + ", ".join(f"{n} {labels.get(k, k)}" for k, n in sorted(counts.items(), key=lambda i: -i[1]))
                 + (f"; peak {row['peak_live']} live registers" if row.get("peak_live") is not None else ""))
        bars[key[1] - 1] = (f'<span class="gl-g" title="{_esc(title)}"><span style="width:'
                                       f'{100 * total / heaviest:.0f}%">{segments}</span></span>')
    return bars


def pressure_strip(bundle: dict) -> tuple[dict[int, str], str]:
    """The SASS pane's live-register bars by 0-based line, and the pane title's note on the peak."""
    analysis = bundle.get("analysis") or {}
    fields = analysis.get("sass_fields") or []
    if "live" not in fields:
        return {}, ""
    live_at = fields.index("live")
    kernels = [k for k in (analysis.get("pressure") or {}).values() if isinstance(k, dict)]
    registers = max((k.get("registers") or 0 for k in kernels), default=0)
    peaks = {k.get("peak_sass_line") for k in kernels}
    strip = {}
    for index, row in (analysis.get("sass") or {}).items():
        live = row[live_at] if isinstance(row, list) and len(row) > live_at else None
        if not isinstance(live, int) or not registers:
            continue
        line = int(index)
        peak = " gl-peak" if line in peaks else ""
        strip[line] = (f'<span class="gl-p{peak}" title="{live} of {registers} registers live'
                       f'{" (the peak)" if peak else ""}"><span style="width:{min(100, 100 * live / registers):.0f}%">'
                       "</span></span>")
    note = "; ".join(f"peak {k.get('peak_live')} live at line {k.get('peak_sass_line', 0) + 1}"
                     for k in kernels if k.get("peak_sass_line") is not None)
    return strip, note


def opcode_hints(bundle: dict, pane_id: str) -> dict[int, str]:
    """The instruction guide's one line for the opcode of each SASS or PTX line, by 0-based line."""
    analysis = bundle.get("analysis") or {}
    opcodes = (analysis.get("opcodes") or {}).get(pane_id) or {}
    guide = (analysis.get("guide") or {}).get(pane_id) or {}
    hints = {}
    for index, opcode in opcodes.items():
        entry = guide.get(opcode) or {}
        hints[int(index)] = str(entry.get("text") or f"{opcode}: not in gpulab's instruction guide")
    return hints


def render_findings(header: dict) -> str:
    """The header's register summary per kernel and its diagnostics, each with its fix."""
    parts = []
    for item in header.get("pressure") or []:
        key = f' data-k="{_esc(item["key"])}"' if item.get("key") else ""
        parts.append(f'<div class="gl-row gl-reg"{key}><span class="gl-muted">registers</span> '
                     f'<b>{_esc(item.get("kernel", ""))}</b> {_esc(item.get("text", ""))}</div>')
    rows = []
    for item in header.get("diagnostics") or []:
        key = f' data-k="{_esc(item["key"])}"' if item.get("key") else ""
        severity = "gl-dw" if item.get("severity") == "warning" else "gl-di"
        rows.append(f'<li class="{severity}"{key}><span class="gl-dk">{_esc(item.get("kind", ""))}</span> '
                    f'{_esc(item.get("message", ""))} '
                    f'<span class="gl-fix">Fix: {_esc(item.get("fix", ""))}</span></li>')
    if rows:
        parts.append(f'<ul class="gl-diag">{"".join(rows)}</ul>')
    return "".join(parts)


CSS = """
& .gl-g,& .gl-p{flex:none;width:5ch;display:flex;align-items:center;padding:0 3px;
 border-right:1px solid var(--gl-border)}
& .gl-g>span{display:flex;height:.7em;min-width:2px;border-radius:2px;overflow:hidden}
& .gl-g i{display:block;height:100%;min-width:1px}
& .gl-p>span{display:block;height:.55em;min-width:1px;background:var(--gl-accent);opacity:.55;border-radius:1px}
& .gl-p.gl-peak>span{background:var(--gl-warn);opacity:1}
& .gl-op{text-decoration:underline dotted var(--gl-muted);text-underline-offset:2px;cursor:help}
& .gl-diag{list-style:none;margin:4px 0;padding:0;font-size:12px}
& .gl-diag>li{margin:2px 0;padding:2px 6px;border-left:3px solid var(--gl-muted);background:var(--gl-head)}
& .gl-diag>li.gl-dw{border-left-color:var(--gl-warn)}
& .gl-diag>li.gl-hot{outline:1px solid var(--gl-accent)}
& .gl-dk{font-weight:600;color:var(--gl-warn)}
& .gl-di .gl-dk{color:var(--gl-muted)}
& .gl-fix{display:block;color:var(--gl-ok)}
& .gl-k-fp32{background:#3b82f6} & .gl-k-fp64{background:#dc2626} & .gl-k-fp16{background:#14b8a6}
& .gl-k-int{background:#8b949e} & .gl-k-conv{background:#f59e0b} & .gl-k-global{background:#16a34a}
& .gl-k-shared{background:#9333ea} & .gl-k-local{background:#7f1d1d} & .gl-k-const{background:#a3a3a3}
& .gl-k-control{background:#eab308} & .gl-k-sync{background:#ec4899} & .gl-k-call{background:#c026d3}
& .gl-k-other{background:#6b7280}
"""
"""The styles of what this module draws (``&`` is the view's root selector)."""

"""What the HTML view draws from a bundle's ``measured`` section (``docs/bundle.md``, "Measured").

- beside each Python line, next to its estimated cost bar, and beside each CUDA C++ line: its warp-stall
  samples as a bar, as wide as its share of the line with the most, in segments coloured by stall reason;
  its title names the top reason;
- beside each SASS instruction: a thin bar of its samples, coloured by its top reason;
- in the header: the verdict, each launch's figures and a legend of the reasons.

Every string is gpulab's or the profiler's text and is escaped.
"""

from __future__ import annotations

import html
import re
from typing import Any

REASON_ID = re.compile(r"[a-z][a-z_]{0,23}", re.ASCII)
"""A stall reason id that may go into a CSS class name; anything else is drawn as ``misc``."""

COLOURS = {
    "long_sb": "#d1242f", "lg": "#e16f24", "drain": "#bf8700", "tex": "#fb8f44", "imc": "#a40e26",
    "barrier": "#8250df", "membar": "#bf3989", "sleep": "#6639ba",
    "short_sb": "#0969da", "mio": "#54aeff", "wait": "#1b7c83", "math": "#218bff", "branch_resolving": "#0550ae",
    "dispatch": "#3192aa",
    "selected": "#2da44e", "not_selected": "#8c959f", "no_inst": "#6e7781", "misc": "#afb8c1",
}
"""Each stall reason's colour: reds and oranges wait on memory, purples on synchronisation, blues and teals on the
pipes, green issues, greys the rest (the extension's ``measured.ts`` draws the same)."""


def _esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _reason_id(value: Any) -> str:
    return value if isinstance(value, str) and REASON_ID.fullmatch(value) and value in COLOURS else "misc"


def _labels(measured: dict) -> dict[str, tuple[str, str]]:
    return {r.get("id"): (str(r.get("label", r.get("id"))), str(r.get("description", "")))
            for r in measured.get("reasons") or [] if isinstance(r, dict)}


def _segments(reasons: dict) -> str:
    counts = [(reason, int(n)) for reason, n in reasons.items() if isinstance(n, (int, float)) and n > 0]
    return "".join(f'<i class="gl-r-{_reason_id(reason)}" style="flex-grow:{n}"></i>'
                   for reason, n in sorted(counts, key=lambda item: -item[1]))


def _title(samples: int, total: int, reasons: dict, labels: dict) -> str:
    ranked = sorted(((r, int(n)) for r, n in reasons.items() if isinstance(n, (int, float)) and n > 0),
                    key=lambda item: -item[1])
    share = f" ({samples / total:.0%} of the kernel's)" if total else ""
    title = f"{samples} stall sample{'s' if samples != 1 else ''}{share}"
    if ranked:
        top, count = ranked[0]
        label, doing = labels.get(top, (top, ""))
        title += f"; top: {label} {count / samples:.0%}" + (f", {doing}" if doing else "")
        rest = ", ".join(f"{labels.get(r, (r,))[0]} {n / samples:.0%}" for r, n in ranked[1:4])
        title += f"; then {rest}" if rest else ""
    return title


def line_gutter(bundle: dict, pane_id: str = "python") -> dict[int, str]:
    """The Python (or CUDA C++) pane's stall-sample bars by 0-based line (empty without a ``measured`` section)."""
    measured = bundle.get("measured")
    if not isinstance(measured, dict):
        return {}
    lines = [row for row in measured.get(pane_id) or [] if isinstance(row, dict)]
    total = int((measured.get("total") or {}).get("samples") or 0)
    most = max((int(row.get("samples") or 0) for row in lines), default=0)
    labels = _labels(measured)
    bars = {}
    for row in lines:
        samples = int(row.get("samples") or 0)
        if not samples or not most:
            continue
        reasons = row.get("reasons") or {}
        key = row.get("key")  # a Python line's row; a CUDA line is its own row
        at = int(key[3:]) - 1 if isinstance(key, str) and key.startswith("py:") and key[3:].isdigit() \
            else int(row.get("line", 0)) - 1
        bars[at] = (
            f'<span class="gl-m" title="{_esc(_title(samples, total, reasons, labels))}">'
            f'<span style="width:{100 * samples / most:.0f}%">{_segments(reasons)}</span></span>')
    return bars


def sass_strip(bundle: dict) -> dict[int, str]:
    """The SASS pane's stall-sample marks by 0-based line, each coloured by the instruction's top reason."""
    measured = bundle.get("measured")
    if not isinstance(measured, dict):
        return {}
    rows = {int(k): v for k, v in (measured.get("sass") or {}).items() if isinstance(v, list) and len(v) == 2}
    most = max((int(v[0]) for v in rows.values()), default=0)
    total = int((measured.get("total") or {}).get("samples") or 0)
    labels = _labels(measured)
    marks = {}
    for line, (samples, reasons) in rows.items():
        if not samples or not most or not isinstance(reasons, dict):
            continue
        top = max(reasons, key=reasons.get) if reasons else "misc"
        marks[line] = (f'<span class="gl-ms" title="{_esc(_title(int(samples), total, reasons, labels))}">'
                       f'<span class="gl-r-{_reason_id(top)}" style="width:{100 * samples / most:.0f}%"></span></span>')
    return marks


def add_column(bundle: dict, pane_id: str, gutter: dict[int, str], empty: str) -> tuple[dict[int, str], str]:
    """A pane's gutter (by 0-based line) and its blank cell with the measured column after what is there: the
    Python and CUDA C++ panes' stall-sample bars, the SASS pane's marks; the same for the PTX pane or an
    unmeasured build."""
    found = (line_gutter(bundle, pane_id) if pane_id in ("python", "cuda") else sass_strip(bundle)
             if pane_id == "sass" else {})
    if not found:
        return gutter, empty
    blank = '<span class="gl-ms"></span>' if pane_id == "sass" else '<span class="gl-m"></span>'
    lines = set(gutter) | set(found)
    return {i: gutter.get(i, empty) + found.get(i, blank) for i in lines}, empty + blank


def render_measured(bundle: dict) -> str:
    """The header's measured lines: the verdict, each launch's figures, a legend of the stall reasons."""
    measured, header = bundle.get("measured"), (bundle.get("header") or {}).get("measured")
    if not isinstance(measured, dict) or not isinstance(header, dict):
        return ""
    device = f' on {_esc(measured["device"])}' if measured.get("device") else ""
    key = f' data-k="{_esc(header["key"])}"' if header.get("key") else ""
    parts = [f'<div class="gl-row gl-verdict"{key}><span class="gl-muted">measured{device}</span> '
             f'<b>{_esc(header.get("verdict", ""))}</b></div>']
    for kernel in header.get("kernels") or []:
        parts.append(f'<div class="gl-row"><span class="gl-muted">{_esc(kernel.get("kernel", ""))}</span> '
                     f'{_esc(kernel.get("text", ""))}</div>')
    legend = "".join(f'<span title="{_esc(r.get("description", ""))}"><i class="gl-r-{_reason_id(r.get("id"))}">'
                     f'</i>{_esc(r.get("label", r.get("id", "")))}</span>'
                     for r in measured.get("reasons") or [] if isinstance(r, dict))
    if legend:
        parts.append(f'<div class="gl-row gl-legend"><span class="gl-muted">stall reasons</span>{legend}</div>')
    return "".join(parts)


CSS = ("""
& .gl-m,& .gl-ms{flex:none;width:6ch;display:flex;align-items:center;padding:0 3px;
 border-right:1px solid var(--gl-border)}
& .gl-ms{width:4ch}
& .gl-m>span{display:flex;height:.7em;min-width:2px;border-radius:2px;overflow:hidden;
 outline:1px solid var(--gl-border)}
& .gl-m i{display:block;height:100%;min-width:1px}
& .gl-ms>span{display:block;height:.55em;min-width:1px;border-radius:1px}
& .gl-verdict b{font-weight:600}
& .gl-legend>span{display:inline-flex;align-items:center;gap:3px;margin-right:10px;font-size:11px}
& .gl-legend i{display:inline-block;width:.8em;height:.8em;border-radius:2px}
""" + "".join(f"& .gl-r-{reason}{{background:{colour}}}\n" for reason, colour in COLOURS.items()))
"""The styles of what this module draws (``&`` is the view's root selector)."""

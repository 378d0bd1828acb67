"""Tables of a build's analysis (per-line costs, diagnostics, diffs), rendered from their ``as_dict()`` data.

The data come from ``gpulab.compiler.analysis``; these functions know only
its shape (``docs/bundle.md``, section "Analysis"). Every cell is text and
is escaped in HTML.
"""

from __future__ import annotations

import html

from .table import Table

CONTEXT = 2  # equal instructions shown around each change of a diff
MAX_ROWS = 400  # diff rows shown; the rest are counted
_MARKS = {"equal": " ", "replace": "|", "delete": "<", "insert": ">"}
_COLOURS = {"replace": "rgba(230,160,0,.18)", "delete": "rgba(220,50,50,.15)", "insert": "rgba(40,160,60,.15)"}


def _columns(labels: dict, counters) -> list[str]:
    used = set().union(*(set(c) for c in counters))
    return [c for c in labels if c in used]


def _blank(value) -> str:
    return "" if value is None or value == 0 else str(value)


def _pair(computes: int, supports: int) -> str:
    if not computes and not supports:
        return ""
    return f"{computes}+{supports}" if supports else str(computes)


def line_costs_table(data: dict) -> Table:
    """Python lines (computes+supports per class), then what was inlined along and the rest of the kernel."""
    labels = data["labels"]
    lines = data["python"]
    columns = _columns(labels, [data["inlined"], data["kernel"]] + [line["computes"] for line in lines]
                       + [line["supports"] for line in lines])
    rows = [[line["line"], line["text"].strip()[:48], line["total"],
             *[_pair(line["computes"].get(c, 0), line["supports"].get(c, 0)) for c in columns],
             _blank(line["peak_live"])] for line in lines]
    for title, counts in (("inlined with the operator", data["inlined"]), ("rest of the kernel", data["kernel"])):
        rows.append(["", title, sum(counts.values()), *[_blank(counts.get(c)) for c in columns], ""])
    return Table(["line", "source", "SASS", *[labels[c] for c in columns], "peak live"], rows,
                 f"{data['name']} on {data['target']}: SASS instructions per Python line "
                 "(computes+supports: the arithmetic the line asks for + address, guard and branch work placed there)")


def cuda_costs_table(data: dict) -> Table:
    """Every line of ``kernel.cu`` that reached the SASS, with its instructions per class."""
    labels = data["labels"]
    columns = _columns(labels, [line["computes"] for line in data["cuda"]])
    rows = [[line["line"], line["text"].strip()[:60], line["total"],
             *[_blank(line["computes"].get(c)) for c in columns], _blank(line["peak_live"])]
            for line in data["cuda"]]
    return Table(["line", "kernel.cu", "SASS", *[labels[c] for c in columns], "peak live"], rows,
                 f"{data['name']} on {data['target']}: SASS instructions per CUDA line")


def diagnostics_table(data: list[dict]) -> Table:
    """One row per diagnostic: severity, kind, Python line, what was found and the fix."""
    rows = [[d["severity"], d["kind"], _blank(d["python_line"]), d["message"], d["fix"]] for d in data]
    return Table(["", "kind", "line", "found", "fix"], rows, "diagnostics" if data else "no diagnostics")


def diff_table(data: dict) -> Table:
    """Counts of both builds per class, Python line, call kind and kernel registers, with the change."""
    def row(title, a, b):
        return [title, a, b, f"{b - a:+d}" if b != a else ""]
    classes = data["classes"]
    rows = [row("SASS instructions", sum(a for a, _ in classes.values()), sum(b for _, b in classes.values()))]
    rows += [row(data["class_labels"][c], a, b) for c, (a, b) in classes.items()]
    rows += [row(f"Python line {line}", sum(a.values()), sum(b.values())) for line, (a, b) in data["python"].items()]
    calls_a, calls_b = data["calls"]
    rows += [row(f"CALL: {kind}", calls_a.get(kind, 0), calls_b.get(kind, 0)) for kind in sorted({*calls_a, *calls_b})]
    registers_a, registers_b = data["registers"]
    rows += [row(f"registers: {kernel}", registers_a.get(kernel, 0), registers_b.get(kernel, 0))
             for kernel in sorted({*registers_a, *registers_b})]
    return Table(["", *data["labels"], "change"], rows, " vs ".join(data["labels"]))


def _shown(rows: list) -> tuple[list[tuple[str, str, str]], int]:
    """``(tag, left, right)`` of the changed rows and CONTEXT equal rows around them (tag ``gap`` between),
    at most MAX_ROWS of them, and how many more there were."""
    keep = set()
    for index, row in enumerate(rows):
        if row[0] != "equal":
            keep.update(range(max(0, index - CONTEXT), min(len(rows), index + CONTEXT + 1)))
    shown, previous = [], -1
    for index in sorted(keep):
        if index != previous + 1:
            shown.append(("gap", "...", ""))
        tag, _, left, _, right = rows[index]
        shown.append((tag, left, right))
        previous = index
    return shown[:MAX_ROWS], max(0, len(shown) - MAX_ROWS)


def diff_text(data: dict) -> str:
    """The counts, then the changed instructions side by side (``|`` changed, ``<`` only left, ``>`` only right)."""
    width = 56
    shown, more = _shown(data["rows"])
    lines = [repr(diff_table(data)), "", f"{data['labels'][0]:<{width}}   {data['labels'][1]}"]
    lines += [f"{left[:width]:<{width}} {_MARKS.get(tag, ' ')} {right[:width]}".rstrip() for tag, left, right in shown]
    return "\n".join(lines + ([f"... {more} more rows"] if more else []))


def diff_html(data: dict) -> str:
    """The counts, then the changed instructions side by side, coloured by change."""
    shown, more = _shown(data["rows"])
    cell = "style='text-align:left;white-space:pre;padding:1px 16px 1px 4px'"  # a notebook right-aligns cells
    cells = "".join(
        f"<tr style='background:{_COLOURS.get(tag, 'none')}'><td {cell}>{html.escape(left)}</td>"
        f"<td {cell}>{html.escape(right)}</td></tr>" for tag, left, right in shown)
    head = "".join(f"<th style='text-align:left;position:sticky;top:0;background:var(--jp-layout-color0,#fff)'>"
                   f"{html.escape(label)}</th>" for label in data["labels"])
    tail = f"<div>... {more} more rows</div>" if more else ""
    return (f"<div class='gpulab-diff'>{diff_table(data)._repr_html_()}"
            "<div style='max-height:36em;overflow:auto'>"  # the listing scrolls: it may be hundreds of rows
            "<table style='font-family:monospace;font-size:12px;border-collapse:collapse'>"
            f"<thead><tr>{head}</tr></thead><tbody>{cells}</tbody></table></div>{tail}</div>")


def tables_mimebundle(*tables: Table) -> dict:
    """HTML and text of tables shown one after another."""
    return {"text/html": "".join(t._repr_html_() for t in tables),
            "text/plain": "\n\n".join(repr(t) for t in tables)}

"""Tables: rows of text shown as an HTML table in a notebook and as aligned text elsewhere."""

from __future__ import annotations

import html
import re

__all__ = ["Table", "format_seconds"]


class Table:
    """Rows of text shown as an HTML table in a notebook and as aligned text elsewhere.

    Parameters
    ----------
    headers : sequence of str
        Column titles.
    rows : sequence of sequence
        Cells, converted with ``str``; every cell is escaped in HTML.
    caption : str
        A line above the table.
    """

    def __init__(self, headers, rows, caption: str = ""):
        self.headers = [str(h) for h in headers]
        self.rows = [[str(cell) for cell in row] for row in rows]
        self.caption = caption

    def _aligns(self) -> list[str]:
        return [_align([row[i] for row in self.rows]) for i in range(len(self.headers))]

    def _repr_html_(self) -> str:
        aligns = self._aligns()
        cell = "padding:2px 14px 2px 0;border:none;text-align:"
        head = "".join(f"<th style='{cell}{a};border-bottom:1px solid #bbb'>{html.escape(h)}</th>"
                       for h, a in zip(self.headers, aligns))
        body = "".join(
            "<tr>" + "".join(f"<td style='{cell}{a};font-family:monospace'>{html.escape(c)}</td>"
                             for c, a in zip(row, aligns)) + "</tr>"
            for row in self.rows)
        caption = f"<div style='font-weight:600;margin:4px 0'>{html.escape(self.caption)}</div>" if self.caption else ""
        return (f"<div class='gpulab-table'>{caption}<table style='border-collapse:collapse;margin:0 0 4px 0'>"
                f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>")

    def __repr__(self) -> str:
        widths = [max(len(row[i]) for row in [self.headers, *self.rows]) for i in range(len(self.headers))]
        lines = ["  ".join(cell.rjust(w) if a == "right" else cell.ljust(w)
                           for cell, w, a in zip(row, widths, self._aligns())).rstrip()
                 for row in [self.headers, *self.rows]]
        lines.insert(1, "  ".join("-" * w for w in widths))
        return "\n".join([self.caption, *lines] if self.caption else lines)


_NUMBER = re.compile(r"[-+]?[\d,.]+(e[-+]?\d+)?( \S+)?")


def _align(column: list[str]) -> str:
    """A column of numbers (each with an optional unit) to the right, others to the left."""
    cells = [c for c in column if c not in ("", "-")]
    return "right" if cells and all(_NUMBER.fullmatch(c) for c in cells) else "left"


def format_seconds(seconds: float) -> str:
    """``2.5e-05`` -> ``"25.0 µs"``."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"

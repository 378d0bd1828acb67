"""The view of fold orders side by side (``gpulab.fold_orders``): each order's tree, value, height and errors.

A tree is drawn as nested boxes, one per combine, its two operands inside
(``⊕`` between them), darker the more combines lie below it: a left-to-right
fold is a staircase as deep as the input is long, the portable tree's blocks
are balanced. It renders the plain data of ``FoldOrders.as_dict()``.
"""

from __future__ import annotations

import html

from .table import Table

__all__ = ["fold_orders_html", "fold_orders_text", "fold_orders_mimebundle"]

OPERATOR = "⊕"


def _height(node) -> int:
    return 1 + max(_height(node[0]), _height(node[1])) if isinstance(node, list) else 0


def tree_text(node) -> str:
    """A tree as an expression: ``((x0 ⊕ x1) ⊕ (x2 ⊕ x3)) ⊕ x4`` (outermost pair without parentheses)."""
    def inner(part):
        return f"({tree_text(part)})" if isinstance(part, list) else part

    return f"{inner(node[0])} {OPERATOR} {inner(node[1])}" if isinstance(node, list) else node


def _tree_html(node, top: int) -> str:
    if not isinstance(node, list):
        return f"<span style='font-family:monospace;padding:0 2px'>{html.escape(node)}</span>"
    lightness = 96 - 24 * _height(node) / max(top, 1)  # opaque: a box's shade is its own height's
    return ("<span style='display:inline-flex;align-items:center;border:1px solid #8a9be0;color:#111;"
            f"border-radius:4px;padding:1px 2px;margin:1px;background:hsl(228,70%,{lightness:.0f}%)'>"
            f"{_tree_html(node[0], top)}<span style='padding:0 2px'>{OPERATOR}</span>{_tree_html(node[1], top)}"
            "</span>")


def _error(fold: dict, against: str) -> str:
    found = fold["errors"].get(against)
    return "-" if found is None else f"{found['absolute']:.3g} ({found['ulps']:.1f} ulp)"


def _table(data: dict) -> Table:
    columns = ["order", "value", "height"]
    against = [name for name in ("exact", "float64") if data[name if name == "exact" else "reference"] is not None]
    columns += [f"error vs {name}" for name in against]
    rows = [[fold["order"], fold["value"], fold["depth"], *(_error(fold, name) for name in against)]
            for fold in data["folds"]]
    reference = f"; float64 reference {data['reference']}" if data["reference"] is not None else ""
    exact = f"; exact {data['exact']}" if data["exact"] is not None else ""
    caption = (f"reduce({data['name']}) of {data['n']:,} {data['dtype']} items from initial {data['initial']}"
               f"{reference}{exact}")
    return Table(columns, rows, caption)


def too_many_to_draw(data: dict) -> str:
    """Why no tree is drawn, and how to see one."""
    return (f"The trees of {data['n']:,} items are not drawn (at most {data['drawn_items']}): pass a slice, "
            f"xs[:{data['drawn_items']}], to see them.")


def fold_orders_html(data: dict) -> str:
    """The table of values and errors, then each order's tree (for inputs small enough to draw)."""
    parts = [_table(data)._repr_html_()]
    if data["items"] is not None:
        items = ", ".join(f"x{i} = {value}" for i, value in enumerate(data["items"]))
        parts.append(f"<div style='font-family:monospace;font-size:small;margin:4px 0'>{html.escape(items)}</div>")
        for fold in data["folds"]:
            top = _height(fold["tree"])
            parts.append(f"<div style='margin:6px 0 2px 0;font-weight:600'>{html.escape(fold['order'])}: "
                         f"{fold['depth']} combines deep</div><div style='display:flex;flex-wrap:wrap;"
                         f"align-items:center'>{_tree_html(fold['tree'], top)}</div>")
    else:
        parts.append(f"<div style='font-size:small'>{too_many_to_draw(data)}</div>")
    return f"<div class='gpulab-fold-orders'>{''.join(parts)}</div>"


def fold_orders_text(data: dict) -> str:
    """The table, then each order's tree as an expression."""
    lines = [repr(_table(data))]
    if data["items"] is not None:
        lines += [f"{fold['order']}: {tree_text(fold['tree'])}" for fold in data["folds"]]
    else:
        lines.append(too_many_to_draw(data))
    return "\n".join(lines)


def fold_orders_mimebundle(data: dict) -> dict:
    """HTML and text of :func:`fold_orders_html` and :func:`fold_orders_text`."""
    return {"text/html": fold_orders_html(data), "text/plain": fold_orders_text(data)}

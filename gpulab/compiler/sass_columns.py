"""SASS as the view shows it: nvdisasm's listing in four narrow columns, offset, predicate, opcode, operands.

nvdisasm pads every instruction to about 40 columns before its opcode, which
leaves a notebook pane showing offsets and the stubs of opcodes. The view's
text is the same listing, line for line (the line map is unchanged), with
that padding gone and the columns aligned:

    "        /*00e0*/               @P0 BRA `(.L_x_0) ;"  ->  "/*00e0*/ @P0 BRA          `(.L_x_0)"
"""

from __future__ import annotations

import re

_INSTRUCTION = re.compile(r"^\s*/\*([0-9a-fA-F]{4,})\*/\s+(@!?U?P(?:[0-7]|T)\s+)?([^\s;]+)\s*(.*?)\s*;?\s*$")
OPCODE_WIDTH = 12
"""The opcode column's width at most (a longer opcode pushes its operands right)."""


def sass_columns(text: str) -> str:
    """``nvdisasm`` output with each instruction as ``offset predicate opcode operands``, aligned.

    Other lines (directives, labels) lose their leading tabs; there are as
    many lines as before.
    """
    lines = text.splitlines()
    found = [_INSTRUCTION.match(line) for line in lines]
    matches = [m for m in found if m]
    if not matches:
        return text
    offset_width = max(len(m.group(1)) for m in matches)
    guard_width = max(len((m.group(2) or "").strip()) for m in matches)
    opcode_width = min(OPCODE_WIDTH, max(len(m.group(3)) for m in matches))
    shown = []
    for line, match in zip(lines, found):
        if match is None:
            shown.append(" ".join(line.split()) if line.strip().startswith(".") else line.strip())
            continue
        offset, guard, opcode, operands = match.groups()
        offset = f"/*{offset:0>{offset_width}}*/"
        row = f"{offset} {(guard or '').strip():<{guard_width}} {opcode:<{opcode_width}} {operands}"
        shown.append(row.rstrip())
    return "\n".join(shown) + ("\n" if text.endswith("\n") else "")

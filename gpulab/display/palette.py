"""Colours shared by every view: line ``py:N`` of a build takes ``PALETTE[(N - 1) % len(PALETTE)]``.

The JupyterLab extension mirrors this list (``extension/src/palette.ts``).
"""

PALETTE = (
    "#e6194b33",
    "#3cb44b33",
    "#4363d833",
    "#f5823133",
    "#911eb433",
    "#42d4f433",
    "#f032e633",
    "#bfef4533",
    "#46999033",
    "#9a632433",
    "#80000033",
    "#00007533",
)


def colour_index(python_line: int) -> int:
    """Return where in :data:`PALETTE` the background colour of 1-based Python pane line ``python_line`` is."""
    return (python_line - 1) % len(PALETTE)

"""An error in the user's code as a few lines of text: the message, the line and a caret."""

from __future__ import annotations

from ..errors import UserCodeError

__all__ = ["format_error"]


def format_error(exc: Exception, cell_file: str | None = None) -> str:
    """Describe an error in the user's code in a few lines: the message, the line and a caret.

    Parameters
    ----------
    exc : Exception
        A :class:`~gpulab.errors.UserCodeError` (shown with its location),
        or any other error (its message only).
    cell_file : str, optional
        The file name of the cell being run; a location in it is called
        ``cell line N``.
    """
    message = exc.message if isinstance(exc, UserCodeError) else str(exc)
    lines = [f"{type(exc).__name__}: {message}"]
    location = getattr(exc, "location", None)
    if location is None:
        return "\n".join(lines)
    number = location.line - location.offset
    where = f"cell line {number}" if location.filename == cell_file else f"{location.filename}, line {number}"
    lines.append(f"  at {where}:")
    text = location.text()
    if text:
        stripped = text.lstrip()
        lines.append(f"    {stripped}")
        if location.column is not None:
            lines.append("    " + " " * max(0, location.column - (len(text) - len(stripped))) + "^")
    return "\n".join(lines)

"""gpulab's errors in a notebook cell, shown as IPython shows a cell's own error: none of gpulab's frames.

``gpulab.map(saxpy, xs)`` with a missing input raises deep inside gpulab;
the traceback would list a dozen of its frames above a message that already
names the function and its line. After ``%load_ext gpulab`` the errors of
:data:`gpulab.errors.USER_ERRORS` show the user's frames only.

The magics raise what goes wrong in their cell, so that Run All and nbclient
stop there, and give each error the text it is shown as (IPython's
``_render_traceback_``): a build error its message at the cell line, an
error of the cell's own code the cell's frames.
"""

from __future__ import annotations

import os
import types
from pathlib import Path

from ..errors import USER_ERRORS

_PACKAGE = str(Path(__file__).resolve().parents[1]) + os.sep


def without_gpulab_frames(tb: types.TracebackType | None) -> types.TracebackType | None:
    """``tb`` with the frames of gpulab's own files left out."""
    kept = []
    while tb is not None:
        if not tb.tb_frame.f_code.co_filename.startswith(_PACKAGE):
            kept.append(tb)
        tb = tb.tb_next
    trimmed = None
    for entry in reversed(kept):
        trimmed = types.TracebackType(trimmed, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return trimmed


def shown_as(error: BaseException, lines) -> BaseException:
    """``error``, to be shown in a notebook as ``lines`` (a list of strings, or a function that makes them).

    IPython shows an exception that has ``_render_traceback_`` as the lines
    it returns, in place of a traceback.
    """
    error._render_traceback_ = lines if callable(lines) else (lambda: list(lines))
    return error


def _show(shell, kind, error, tb, tb_offset=None) -> None:
    if isinstance(error, USER_ERRORS):
        shell.showtraceback((kind, error, without_gpulab_frames(tb)), tb_offset=tb_offset)
    elif hasattr(error, "_render_traceback_"):  # a magic's cell that does not parse (IPython would list frames)
        shell._showtraceback(kind, error, error._render_traceback_())
    else:  # any other SyntaxError, as IPython shows it
        shell.showtraceback(running_compiled_code=True)


def register(shell) -> None:
    """Show :data:`~gpulab.errors.USER_ERRORS` raised in ``shell``'s cells without gpulab's frames.

    A ``SyntaxError`` a magic raised about its cell is shown as its
    ``_render_traceback_`` says; IPython asks that of other errors only.
    """
    shell.set_custom_exc((*USER_ERRORS, SyntaxError), _show)

"""gpulab's errors in a notebook cell, shown as IPython shows a cell's own error: none of gpulab's frames.

``gpulab.map(saxpy, xs)`` with a missing input raises deep inside gpulab;
the traceback would list a dozen of its frames above a message that already
names the function and its line. After ``%load_ext gpulab`` the errors of
:data:`gpulab.errors.USER_ERRORS` show the user's frames only.
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


def _show(shell, kind, error, tb, tb_offset=None) -> None:
    shell.showtraceback((kind, error, without_gpulab_frames(tb)), tb_offset=tb_offset)


def register(shell) -> None:
    """Show :data:`~gpulab.errors.USER_ERRORS` raised in ``shell``'s cells without gpulab's frames."""
    shell.set_custom_exc(USER_ERRORS, _show)

"""Which panes a build view shows first: every pane where four fit a row, else the Python and the SASS.

At 1280 px with JupyterLab's file browser open a notebook's output is about 900 px wide: four panes
there are two a row of about 420 px, their lines cut off and the SASS below the fold. The two that
say most (what was written, what runs) side by side fit; the other panes are one click away. Both
renderers read this (the extension mirrors it in ``extension/src/layout.ts``; a test checks that).
"""

from __future__ import annotations

ALL_PANES = ("python", "cuda", "ptx", "sass")
FIRST_PANES = ("python", "sass")
ALL_PANES_PX = 1500  # narrowest view (px) whose row holds four panes with their lines whole


def first_hidden(panes, width: float | None) -> tuple[str, ...]:
    """The panes a view `width` px wide hides at first, of `panes` (ids, in order).

    A page that cannot measure itself (`width` None: the static HTML on GitHub or nbviewer, whose
    columns are narrow) shows the narrow view. Only the default four-pane view narrows; panes a
    user chose (``--show``) all show.
    """
    if width is not None and width >= ALL_PANES_PX or sorted(panes) != sorted(ALL_PANES):
        return ()
    return tuple(p for p in panes if p not in FIRST_PANES)

"""How gpulab's data shows itself in a notebook, whoever reads it: IPython, Jupyter's frontends, marimo.

A :class:`~gpulab.compiler.build.Build`, its line costs, diagnostics and diffs are made in the
compiler, below the layers that draw them. They carry the display protocols themselves
(:class:`Shown`: ``_repr_mimebundle_``, which IPython and every Jupyter frontend read, and
marimo's ``_display_``) and ask here for what to show, which the notebook layer says once
(:func:`register`, done by ``import gpulab``). No IPython formatter needs registering.
"""

from __future__ import annotations

from typing import Callable

_MIMEBUNDLES: dict[str, Callable[[object], dict | tuple[dict, dict]]] = {}
_LIVE: dict[str, Callable[[object], object]] = {}


def register(kind: str, mimebundle: Callable[[object], dict | tuple[dict, dict]],
             live: Callable[[object], object] | None = None) -> None:
    """Show objects of class name `kind` as `mimebundle(obj)` (a MIME bundle, or one and its metadata), and in
    marimo as `live(obj)` (an anywidget) if given."""
    _MIMEBUNDLES[kind] = mimebundle
    if live is not None:
        _LIVE[kind] = live


class Shown:
    """The display protocols of an object whose view the notebook layer registered (:func:`register`)."""

    def _repr_mimebundle_(self, include=None, exclude=None):
        show = _MIMEBUNDLES.get(type(self).__name__)
        if show is None:  # gpulab.notebook not imported: the text repr
            return None
        found = show(self)
        data, metadata = found if isinstance(found, tuple) else (found, {})
        data = {k: v for k, v in data.items() if (not include or k in include) and (not exclude or k not in exclude)}
        return (data, metadata) if metadata else data

    def _display_(self):
        """marimo's protocol: the live view where there is one, else this object as its MIME bundle says."""
        live = _LIVE.get(type(self).__name__)
        if live is not None:
            return live(self)
        found = self._repr_mimebundle_() or {"text/plain": repr(self)}
        return _Bundle(found[0] if isinstance(found, tuple) else found)


class _Bundle:
    """A MIME bundle as marimo shows one: its richest type (marimo reads ``_mime_``)."""

    ORDER = ("text/html", "text/markdown", "image/svg+xml", "image/png", "text/plain")

    def __init__(self, data: dict):
        self.data = data

    def _mime_(self) -> tuple[str, str]:
        mime = next((m for m in self.ORDER if m in self.data), "text/plain")
        return mime, self.data.get(mime, "")

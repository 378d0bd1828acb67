"""BuildView: a build bundle (``docs/bundle.md``) as a Jupyter MIME bundle: extension JSON, HTML, plain text."""

from __future__ import annotations

from .html import render_html
from .text import render_text

MIME_TYPE = "application/vnd.gpulab.build+json"


class BuildView:
    """Show a build bundle: interactive in JupyterLab, HTML elsewhere, text in a terminal.

    Parameters
    ----------
    bundle : dict
        What :func:`gpulab.compiler.bundle.bundle_of` made of a build.
    """

    def __init__(self, bundle: dict):
        self.bundle = bundle

    def _repr_mimebundle_(self, include=None, exclude=None):
        data = {
            MIME_TYPE: self.bundle,
            "text/html": render_html(self.bundle),
            "text/plain": render_text(self.bundle),
        }
        if include:
            data = {k: v for k, v in data.items() if k in include}
        if exclude:
            data = {k: v for k, v in data.items() if k not in exclude}
        return data

    def __repr__(self) -> str:
        return render_text(self.bundle)

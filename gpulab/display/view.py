"""BuildView: a build as a Jupyter MIME bundle (extension JSON, HTML, plain text)."""

from __future__ import annotations

from ..compiler.build import Build
from ..compiler.occupancy import occupancy
from .html import render_html
from .text import render_text

MIME_TYPE = "application/vnd.gpulab.build+json"
PANES = ("python", "cuda", "ptx", "sass")
_TITLES = {"python": "Python", "cuda": "CUDA C++", "ptx": "PTX", "sass": "SASS"}


def bundle_of(build: Build, *, panes=PANES, compare: Build | None = None) -> dict:
    """Return the JSON bundle of ``build`` (see ``docs/bundle.md``).

    Parameters
    ----------
    build : Build
        What to show.
    panes : sequence of str
        Which panes, in order, of ``python``, ``cuda``, ``ptx``, ``sass``.
    compare : Build, optional
        The same function linked the other way, shown behind a toggle.
    """
    unknown = set(panes) - set(PANES)
    if unknown:
        raise ValueError(f"unknown pane(s) {', '.join(sorted(unknown))}; choose from {', '.join(PANES)}")
    texts = {"python": build.python_source, "cuda": build.source, "ptx": build.ptx, "sass": build.sass}
    first_lines = {"python": build.python_first_line}
    links = build.line_map.links(build.python_source, build.source)
    return {
        "version": 1,
        "name": build.name,
        "primitive": build.primitive,
        "target": build.target.arch,
        "lto": build.options.lto,
        "key": build.key,
        "options": build.options.as_dict(),
        "panes": [
            {"id": pane, "title": _TITLES[pane], "language": "cuda" if pane == "cuda" else pane,
             "text": texts[pane], "first_line": first_lines.get(pane, 1)}
            for pane in panes
        ],
        "links": {pane: links[pane] for pane in panes},
        "resources": {name: _with_occupancy(build, r) for name, r in build.resources.items()},
        "timings": dict(build.timings),
        "stats": {"sass_instructions": build.sass_instructions, "sass_calls": build.sass_calls,
                  "operator_calls": build.operator_calls, "ptx_lines": len(build.ptx.splitlines())},
        "compare": bundle_of(compare, panes=panes) if compare is not None else None,
    }


def _with_occupancy(build, resources) -> dict:
    """A kernel's resources, with its theoretical occupancy on the build's target where gpulab knows it."""
    found = occupancy(build.target, build.geometry.block_threads, resources.registers, resources.shared_bytes)
    return {**resources.as_dict(), **(found.as_dict() if found else {})}


class BuildView:
    """Show a build in a notebook: interactive in JupyterLab, HTML elsewhere, text in a terminal.

    Parameters
    ----------
    build : Build
        What to show.
    panes : sequence of str
        Which panes, in order.
    compare : Build, optional
        The same function linked the other way.
    """

    def __init__(self, build: Build, *, panes=PANES, compare: Build | None = None):
        self.build = build
        self.bundle = bundle_of(build, panes=panes, compare=compare)

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

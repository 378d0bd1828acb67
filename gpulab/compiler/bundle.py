"""A build as the view's JSON bundle (``docs/bundle.md``): what every renderer of a build reads."""

from __future__ import annotations

from .build import Build
from .occupancy import occupancy

VERSION = 1
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

    Raises
    ------
    ValueError
        For an unknown pane.
    """
    unknown = set(panes) - set(PANES)
    if unknown:
        raise ValueError(f"unknown pane(s) {', '.join(sorted(unknown))}; choose from {', '.join(PANES)}")
    texts = {"python": build.python_source, "cuda": build.source, "ptx": build.ptx, "sass": build.sass}
    first_lines = {"python": build.python_first_line}
    links = build.line_map.links(build.python_source, build.source)
    return {
        "version": VERSION,
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
    """A kernel's resources, with its theoretical occupancy on the build's target."""
    found = occupancy(build.target, build.geometry.block_threads, resources.registers, resources.shared_bytes)
    return {**resources.as_dict(), **found.as_dict()}

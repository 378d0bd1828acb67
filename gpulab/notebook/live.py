"""The live build view: an anywidget that draws a build as the JupyterLab extension does, and rebuilds.

Its ES module is the extension's own view (``extension/src/widget.ts``), built into ``static/``
(``npm --prefix extension run build:widget``; the Python package build runs it). The view's ~240 KB
module and its CSS travel once per kernel, in one shared :class:`ViewModule` model; each view's own
model carries a loader of ~1 KB (``extension/src/loader.ts``) that names it. It renders in
every frontend with a widget manager: JupyterLab 4, Notebook 7, VS Code, Colab and marimo. The
header's build bar asks the kernel, by a custom message, to rebuild with another target or with
LTO, FMA or the bounds check flipped (through the build cache: going back is instant), or to show
the SASS diff against a build with one option flipped (:func:`gpulab.diff`).

Its output also carries the static renderings (:class:`~gpulab.display.view.BuildView`): the build
bundle the JupyterLab extension draws when the widget's model is gone (a saved notebook reopened),
and the HTML that nbviewer and GitHub show (docs/architecture.md says which frontend takes which).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
from pathlib import Path

import anywidget
import ipywidgets
import traitlets

from ..compiler.analysis.diff import diff as build_diff
from ..compiler.build import Build
from ..compiler.pipeline import build_for
from ..compiler.bundle import PANES, bundle_of
from ..compiler.target import parse_target
from ..compiler.toolchain import require_buildable
from ..display.analysis import diff_text
from ..display.errors import format_error
from ..display.view import BuildView
from ..errors import ArgumentError, GpulabError
from .session import compile_targets

__all__ = ["BuildWidget", "ViewModule", "assets_built"]

STATIC = Path(__file__).parent / "static"


def _module(name: str):
    """anywidget's ``_esm`` for the built module ``name``: its path (anywidget reads it), or, in a source checkout
    whose view was never built, a module that says so (anywidget refuses a missing path, which would stop the
    import of this module; :func:`assets_built` keeps such a checkout on the static view)."""
    path = STATIC / name
    if path.is_file():
        return path
    return ("export default {\n  render({ el }) {\n    el.textContent = 'gpulab: the live view is not built here: "
            "npm --prefix extension run build:widget, or pip install gpulab';\n  },\n};\n")


def assets_built() -> bool:
    """Whether the view's ES module and CSS are in :data:`STATIC` (an install builds them; a source checkout on
    ``PYTHONPATH`` alone has none)."""
    return all((STATIC / name).is_file() for name in ("widget.js", "loader.js", "widget.css"))


class ViewModule(anywidget.AnyWidget):
    """The view's ES module and stylesheet, shared by every view of a kernel (:func:`view_module`); never drawn.

    A notebook of many views sends, and saves with its widget state, the module once, not once per view.
    """

    _esm = "export default {};"
    source = traitlets.Unicode().tag(sync=True)
    style = traitlets.Unicode().tag(sync=True)
    digest = traitlets.Unicode().tag(sync=True)


def view_module() -> ViewModule:
    """The kernel's one open :class:`ViewModule` (made again when it was closed)."""
    shared = _shared()
    if shared.comm is None:
        _shared.cache_clear()
        shared = _shared()
    return shared


@functools.lru_cache(maxsize=1)
def _shared() -> ViewModule:
    built = assets_built()
    source, style = ((STATIC / name).read_text(encoding="utf-8") if built else ""
                     for name in ("widget.js", "widget.css"))
    digest = hashlib.sha256(source.encode() + b"\0" + style.encode()).hexdigest()[:16]
    return ViewModule(source=source, style=style, digest=digest)


# The options the header toggles: the build option, its label and what it does.
TOGGLES = (("lto", "LTO", "Link-time optimisation: the operator inlined into the kernel"),
           ("fma", "FMA", "Contract a * b + c into one fused multiply-add"),
           ("boundscheck", "bounds check", "Check every read of a captured array against its shape"))
# The diffs the header opens: flip one option.
DIFFS = (("lto", "diff: LTO flipped"), ("fma", "diff: FMA flipped"))


class BuildWidget(anywidget.AnyWidget):
    """A build's live view: the extension's view, with a build bar that rebuilds in place.

    Parameters
    ----------
    build : Build
        What :func:`gpulab.compile` returned.
    panes : sequence of str
        The panes shown, of ``python``, ``cuda``, ``ptx``, ``sass``.
    compare : Build, optional
        The same function linked the other way, behind the view's toggle (``--compare``).
    measured : dict, optional
        What a profiler measured on its lines (``Profile.measured``); a rebuild, not measured, drops it.
    """

    _esm = _module("loader.js")
    module = traitlets.Instance(ViewModule).tag(sync=True, **ipywidgets.widget_serialization)
    bundle = traitlets.Dict().tag(sync=True)
    controls = traitlets.Dict().tag(sync=True)
    busy = traitlets.Bool(False).tag(sync=True)
    error = traitlets.Unicode("").tag(sync=True)
    diff_title = traitlets.Unicode("").tag(sync=True)
    diff_text = traitlets.Unicode("").tag(sync=True)

    def __init__(self, build: Build, *, panes=PANES, compare: Build | None = None, measured: dict | None = None):
        self.build, self.panes, self.compare = build, tuple(panes), compare
        self._diff_id = ""  # the option the diff shown flips ("" for none)
        super().__init__(module=view_module(), controls=self._offer(),
                         bundle=bundle_of(build, panes=self.panes, compare=compare, measured=measured))
        self.on_msg(self._on_message)

    def _offer(self) -> dict:
        """What the build bar offers: nothing for a build that cannot be rebuilt (no spec, or a compare toggle)."""
        if self.build.spec is None or self.compare is not None:
            return {}
        return {"targets": [t.arch for t in compile_targets()],
                "toggles": [{"field": f, "label": label, "title": title} for f, label, title in TOGGLES],
                "diffs": [list(d) for d in DIFFS]}

    def _repr_mimebundle_(self, **kwargs):
        """The widget, and the static renderings of its build for frontends without its model."""
        data, metadata = super()._repr_mimebundle_(**kwargs)
        static = BuildView(self.bundle)._repr_mimebundle_()
        return {**static, **data, "text/plain": static["text/plain"]}, metadata

    def __repr__(self) -> str:
        return BuildView(self.bundle).__repr__()

    def rebuild(self, **change) -> Build:
        """Rebuild with `change` (``target="sm_80"``, ``lto=False``, ...) applied, show it, and return it."""
        self.build = build_for(self._spec(change))
        self.build.disassembled()
        self.bundle = bundle_of(self.build, panes=self.panes)
        if self.diff_text:
            self.show_diff(self._diff_id)
        return self.build

    def show_diff(self, option: str) -> None:
        """Show the SASS diff against this build with `option` (``lto``, ``fma``) flipped; ``""`` closes it."""
        if option and option not in dict(DIFFS):
            raise ArgumentError(f"the view diffs with one of {', '.join(dict(DIFFS))} flipped, not {option!r}")
        self._diff_id = option
        if not option:
            self.diff_title, self.diff_text = "", ""
            return
        other = build_for(self._spec({option: not getattr(self.build.spec.options, option)}))
        found = build_diff(self.build, other)
        self.diff_title, self.diff_text = " vs ".join(found.labels), diff_text(found.as_dict())

    def _spec(self, change: dict):
        """The spec of this build with `change` applied."""
        spec = self.build.spec
        if spec is None:
            raise ArgumentError("this build was not made by gpulab.compile here: there is nothing to rebuild it from")
        unknown = set(change) - {"target", *(f for f, _, _ in TOGGLES)}
        if unknown:
            raise ArgumentError(f"the view cannot change {', '.join(sorted(unknown))}; it changes the target, "
                                f"{', '.join(f for f, _, _ in TOGGLES)}")
        options = {k: bool(v) for k, v in change.items() if k != "target"}
        target = require_buildable(parse_target(change["target"])) if "target" in change else spec.target
        return dataclasses.replace(spec, target=target, options=dataclasses.replace(spec.options, **options))

    def _on_message(self, _widget, content, _buffers) -> None:
        """The build bar's requests: ``{"kind": "rebuild", "change": {...}}`` or ``{"kind": "diff", "id": ...}``."""
        if not isinstance(content, dict) or content.get("kind") not in ("rebuild", "diff"):
            return
        self.busy, self.error = True, ""
        try:
            if content["kind"] == "rebuild":
                change = content.get("change")
                self.rebuild(**(change if isinstance(change, dict) else {}))
            else:
                self.show_diff(str(content.get("id") or ""))
        except GpulabError as exc:
            self.error = format_error(exc)
        finally:
            self.busy = False

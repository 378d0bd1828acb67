"""What gpulab's objects show: a build its live view, its line costs, diagnostics and diffs tables.

A :class:`~gpulab.compiler.build.Build`, its line costs, diagnostics and diffs live in the
compiler, which knows nothing of views: they carry the display protocols (:mod:`gpulab.shown`)
and ask here, so IPython, every Jupyter frontend and marimo show them with no formatter of
IPython's registered. ``import gpulab`` registers this. Nothing is imported until one is shown.
"""

from __future__ import annotations

from .. import shown


def live_view(build, panes=None, compare=None, measured=None):
    """The live view of a :class:`~gpulab.compiler.build.Build` (an anywidget) showing `panes` (default:
    all), `compare` behind its toggle and what was `measured` on its lines (``Profile.measured``); its
    static view where anywidget or the built view (``pip install`` builds it) is missing."""
    from ..compiler.bundle import PANES, bundle_of

    panes = PANES if panes is None else panes
    try:
        from .live import BuildWidget, assets_built
    except ImportError:  # anywidget is not installed
        assets_built = None
    if assets_built is None or not assets_built():  # or a source checkout whose view was never built: no build bar
        from ..display.view import BuildView

        return BuildView(bundle_of(build, panes=panes, compare=compare, measured=measured))
    return BuildWidget(build, panes=panes, compare=compare, measured=measured)


def build_repr(build):
    """What a :class:`~gpulab.compiler.build.Build` displays as: its live view, and its static renderings
    for frontends without the live view's model; with the widget's metadata (Colab reads it)."""
    return live_view(build)._repr_mimebundle_()


def build_mimebundle(build) -> dict:
    """The MIME bundle of a :class:`~gpulab.compiler.build.Build` (:func:`build_repr` less its metadata)."""
    found = build_repr(build)
    return found[0] if isinstance(found, tuple) else found


def profile_view(profile):
    """A profile's live view: its first build's, with what was measured on its lines."""
    return live_view(profile.build, measured=profile.measured())


def profile_repr(profile):
    """What a :class:`~gpulab.profiler.result.Profile` displays as: the live view of :func:`profile_view`."""
    return profile_view(profile)._repr_mimebundle_()


def line_costs_mimebundle(costs) -> dict:
    """A build's per-line costs: the Python lines' table, then the CUDA lines'."""
    from ..display.analysis import cuda_costs_table, line_costs_table, tables_mimebundle

    data = costs.as_dict()
    return tables_mimebundle(line_costs_table(data), cuda_costs_table(data))


def diagnostics_mimebundle(found) -> dict:
    """A build's diagnostics as a table."""
    from ..display.analysis import diagnostics_table, tables_mimebundle

    return tables_mimebundle(diagnostics_table(found.as_dict()))


def diff_mimebundle(found) -> dict:
    """Two builds side by side."""
    from ..display.analysis import diff_html, diff_text

    data = found.as_dict()
    return {"text/html": diff_html(data), "text/plain": diff_text(data)}


def fold_orders_mimebundle(found) -> dict:
    """A reduce in several orders: their values and errors, and each tree drawn."""
    from ..display.order import fold_orders_mimebundle as mimebundle

    return mimebundle(found.as_dict())


_SHOWN = (("Build", build_repr, live_view),
          ("Profile", profile_repr, profile_view),
          ("LineCosts", line_costs_mimebundle, None),
          ("Diagnostics", diagnostics_mimebundle, None),
          ("BuildDiff", diff_mimebundle, None),
          ("FoldOrders", fold_orders_mimebundle, None))


def register() -> None:
    """Show builds and profiles (live), their costs, diagnostics and diffs (tables), and fold orders side by side,
    wherever they are displayed."""
    for kind, mimebundle, live in _SHOWN:
        shown.register(kind, mimebundle, live)

"""How gpulab's objects display in IPython when they cannot say so themselves.

A :class:`~gpulab.compiler.build.Build`, its line costs, diagnostics and
diffs live in the compiler, which knows nothing of views; IPython's
MIME-bundle formatter shows a build as its view and the others as tables.
``import gpulab`` registers this in a running IPython, ``%load_ext gpulab``
in the shell it loads into. Nothing is imported until a build is shown.
"""

from __future__ import annotations

import sys


def build_mimebundle(build) -> dict:
    """The MIME bundle of a :class:`~gpulab.compiler.build.Build`: its view."""
    from ..compiler.bundle import bundle_of
    from ..display.view import BuildView

    return BuildView(bundle_of(build))._repr_mimebundle_()


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


_SHOWN = (("gpulab.compiler.build", "Build", build_mimebundle),
          ("gpulab.compiler.analysis.costs", "LineCosts", line_costs_mimebundle),
          ("gpulab.compiler.analysis.diagnostics", "Diagnostics", diagnostics_mimebundle),
          ("gpulab.compiler.analysis.diff", "BuildDiff", diff_mimebundle))


def register(ipython=None) -> None:
    """Show builds, their costs, diagnostics and diffs in ``ipython`` (default: the running IPython, if any)."""
    if ipython is None:
        core = sys.modules.get("IPython")
        ipython = core.get_ipython() if core is not None else None
    if ipython is not None:
        formatter = ipython.display_formatter.mimebundle_formatter
        for module, name, show in _SHOWN:
            formatter.for_type_by_name(module, name, show)

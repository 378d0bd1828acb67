"""How gpulab's objects display in IPython when they cannot say so themselves.

A :class:`~gpulab.compiler.build.Build` lives in the compiler, which knows
nothing of views; IPython's MIME-bundle formatter shows it as its view.
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


def register(ipython=None) -> None:
    """Show builds as their views in ``ipython`` (default: the running IPython, if any)."""
    if ipython is None:
        core = sys.modules.get("IPython")
        ipython = core.get_ipython() if core is not None else None
    if ipython is not None:
        formatter = ipython.display_formatter.mimebundle_formatter
        formatter.for_type_by_name("gpulab.compiler.build", "Build", build_mimebundle)

"""Why is it slow: per-line costs, register pressure, diagnostics with a fix, an instruction guide, build diffs.

Everything here reads a :class:`~gpulab.compiler.build.Build` (its SASS, line
info, resources and types) and returns plain data with ``as_dict()`` for the
view's bundle (``docs/bundle.md``, section "Analysis").
"""

from .calls import CALL_KINDS, Call, calls
from .costs import LineCost, LineCosts, line_costs
from .diagnostics import Diagnostic, Diagnostics, diagnostics
from .guide import Explanation, classes, explain
from .pressure import Pressure, pressure

__all__ = ["CALL_KINDS", "Call", "Diagnostic", "Diagnostics", "Explanation", "LineCost", "LineCosts", "Pressure",
           "calls", "classes", "diagnostics", "explain", "line_costs", "pressure"]

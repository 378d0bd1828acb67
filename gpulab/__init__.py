"""gpulab: see and measure GPU kernels written in typed Python, from a notebook.

Compile a typed Python function for a primitive and look at every stage
(``gpulab.compile``), run the primitives on a GPU or the host reference
(``gpulab.map``, ``reduce``, ``scan``, ``filter``, ``segmented_reduce``,
``reduce_by_key``, ``histogram``, ``sort``), time them (``gpulab.bench``), measure them
on the lines of their build (``gpulab.profile``) and grade an exercise against the host reference
(``gpulab.check``); compare the trees a fold may take (``gpulab.fold_orders``, ``order=``). In a notebook,
``%load_ext gpulab`` adds ``%%gpukernel``.
"""

from . import errors
from .bench import BenchResult, bench
from .cache import cache_info, clear_cache
from .compiler.analysis import diagnostics, explain, line_costs
from .compiler.analysis.diff import diff
from .compiler.build import Build
from .compiler.pipeline import compile
from .compiler.target import Target
from .device import current, devices, use
from .host.orders import FoldOrders, fold_orders
from .iota import Iota, iota
from .mapped import Mapped, mapped
from .options import BuildOptions
from .kernel import Kernel, kernel
from .notebook import formatters as _formatters
from .notebook.grading import Checked, check
from .primitives import filter, make_filter, make_map, make_reduce, make_scan, map, reduce, scan
from .primitives import histogram, make_histogram
from .primitives import argsort, make_argsort, make_sort, make_sort_by_key, sort, sort_by_key
from .primitives import (make_reduce_by_key, make_segmented_reduce, make_unique_by_key, reduce_by_key,
                         segmented_reduce, unique_by_key)
from .profiler import profile
from .runtime.arrays import to_device, to_host
from .types import (
    bool_, c64, c128, complex64, complex128, element_type, f16, f32, f64, float16, float32, float64,
    i8, i16, i32, i64, int8, int16, int32, int64, u8, u16, u32, u64, uint8, uint16, uint32, uint64,
)

__version__ = "0.1.0"

_formatters.register()


_ELSEWHERE = {"LabPanel": "gpulab.notebook.widgets", "DevicePicker": "gpulab.notebook.widgets",
              "host_map": "gpulab.host", "host_reduce": "gpulab.host", "host_scan": "gpulab.host",
              "host_filter": "gpulab.host", "host_segmented_reduce": "gpulab.host",
              "host_reduce_by_key": "gpulab.host", "host_unique_by_key": "gpulab.host",
              "host_histogram": "gpulab.host", "host_sort": "gpulab.host", "host_sort_by_key": "gpulab.host",
              "host_argsort": "gpulab.host"}


def __getattr__(name: str):
    """``gpulab.f23``: an AttributeError that names the close names gpulab has (IPython shows no suggestion)."""
    import difflib

    if name in _ELSEWHERE:
        hint = f"; it is in {_ELSEWHERE[name]}: from {_ELSEWHERE[name]} import {name}"
    else:
        close = difflib.get_close_matches(name, [n for n in globals() if not n.startswith("_")], n=3)
        hint = f"; did you mean {' or '.join(f'gpulab.{n}' for n in close)}?" if close else ""
    raise errors.UnknownNameError(f"module 'gpulab' has no attribute {name!r}{hint}", name=name)


def load_ipython_extension(ipython):
    """``%load_ext gpulab``: register ``%%gpukernel`` and ``%gpulab``."""
    from .notebook.magics import load_ipython_extension as load

    load(ipython)

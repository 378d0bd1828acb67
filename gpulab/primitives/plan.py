"""DevicePlan: one primitive for one function, element types and device.

It owns everything that does not change between calls: the builds (one per
index width and uniform types), the modules loaded on the device and the
packed kernel parameters. A call only writes pointers and sizes and launches.
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass

import numpy as np

from ..compiler.build import build_for, make_spec
from ..compiler.bundle import bundle_of
from ..display.view import BuildView
from ..kernel import Kernel
from ..device import Device
from ..runtime.module import ArgumentPack, LoadedModule, load, plain_number, value_fields
from . import params

INT32_MAX = 2**31 - 1


@dataclass
class Prepared:
    """A build loaded on the plan's device, with one argument pack per kernel and thread."""

    build: object
    module: LoadedModule
    local: threading.local
    kernels: dict[str, int]  # kernel name -> CUfunction address, for launch()
    orders: dict[str, tuple[str, ...]]  # kernel name -> the parameter names its plan writes, in order

    def uniform_fields(self, values: tuple) -> tuple:
        """The uniforms' values as :meth:`ArgumentPack.write` takes them (numbers as they are)."""
        if self.uniform_writers is None:
            return values
        return tuple(field for write, value in zip(self.uniform_writers, values) for field in write(value))

    @functools.cached_property
    def uniform_writers(self) -> tuple | None:
        """Per uniform, how its value is written; ``None`` when every uniform is a plain number."""
        dtypes = [element.dtype for _, element in self.build.uniforms]
        if all(map(plain_number, dtypes)):
            return None
        return tuple(value_fields(dtype) for dtype in dtypes)

    def pack(self, kernel: str) -> ArgumentPack:
        """This thread's :class:`ArgumentPack` for ``kernel``."""
        pack = getattr(self.local, kernel, None)
        if pack is None:
            pack = ArgumentPack(self.build.parameters[kernel], self.orders.get(kernel))
            setattr(self.local, kernel, pack)
        return pack


class DevicePlan:
    """Build-once state of a device primitive (see the module docstring).

    Parameters
    ----------
    primitive : str
        ``map``, ``reduce``, ``scan`` or ``filter``.
    kernel : Kernel
        The checked function.
    types : tuple of ElementType
        Element types of its parameters.
    device : Device
        Where it runs.
    **options
        Build options (``iota``, ``exclusive``, ``lto``, ``fma``).
    """

    def __init__(self, primitive: str, kernel: Kernel, types, device: Device, **options):
        self.primitive = primitive
        self.kernel = kernel
        self.types = tuple(types)
        self.device = device
        self.options = options
        self._prepared: dict[object, Prepared] = {}
        self._lock = threading.Lock()
        self._has_uniforms = bool(kernel.uniforms)

    def uniform_values(self) -> tuple:
        """The uniforms' current values, as NumPy scalars of their types (checked: see ``Kernel.uniform_arguments``)."""
        return self.kernel.uniform_arguments()[1] if self._has_uniforms else ()

    def prepared(self, index_bits: int, uniform_values: tuple) -> Prepared:
        """The build for this index width and these uniforms' types, loaded (built on first use)."""
        key = (index_bits, tuple(type(v) if not isinstance(v, np.generic) else v.dtype for v in uniform_values)
               ) if uniform_values else index_bits
        prepared = self._prepared.get(key)
        if prepared is None:
            with self._lock:
                prepared = self._prepared.get(key) or self._prepare(index_bits)
                self._prepared[key] = prepared
        return prepared

    def build(self, index_bits: int = 32):
        """The build for this index width and the uniforms' current types (compiled on first use, not loaded)."""
        types = None if self.kernel.declared else self.types  # declared types keep a declared result
        return build_for(make_spec(self.primitive, self.kernel, types=types, target=self.device.compute_capability,
                                   index_bits=index_bits, **self.options))

    @property
    def builds(self) -> tuple:
        """The builds this plan has run, one per index width and uniform types (as numba's ``inspect_*``)."""
        return tuple(prepared.build for prepared in list(self._prepared.values()))

    def _repr_mimebundle_(self, include=None, exclude=None):
        """The view of the plan's last build (its 32-bit build, compiled, when it has run none)."""
        builds = self.builds
        bundle = BuildView(bundle_of(builds[-1] if builds else self.build()))._repr_mimebundle_(include, exclude)
        if "text/plain" in bundle:
            bundle["text/plain"] = f"{self!r}\n{bundle['text/plain']}"
        return bundle

    def __repr__(self) -> str:
        types = ", ".join(t.name for t in self.types)
        return (f"<gpulab {type(self).__name__}: {self.primitive}({self.kernel.name}) of ({types}) on "
                f"{self.device.name}, {len(self._prepared)} build(s) loaded>")

    def _prepare(self, index_bits: int) -> Prepared:
        build = self.build(index_bits)
        for parameters in build.parameters.values():
            params.check_fields(parameters, params.written_fields(parameters, build.options.iota))
        module = load(build, self.device)
        kernels = {name: module.address(name) for name in build.kernels}
        return Prepared(build, module, threading.local(), kernels, self.argument_order(build))

    def argument_order(self, build) -> dict[str, tuple[str, ...]]:
        """Per kernel, the parameter names this plan's calls write, in order (checked when a pack is made)."""
        return {}

    def temp_storage_bytes(self, n: int) -> int:
        """Bytes of temporary device storage a run over ``n`` items needs (0 for map)."""
        return 0

    def finish(self, output, *, stream=None):
        """The primitive's result from what a call returned (the same, but for filter)."""
        return output


def index_bits_of(extent: int) -> int:
    """32 when ``extent`` (the largest of the sizes and :attr:`ArrayFields.extent`) fits a signed 32-bit integer, else 64."""
    return 32 if extent <= INT32_MAX else 64

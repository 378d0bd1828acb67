"""DevicePlan: one primitive for one function, element types and device.

It owns everything that does not change between calls: the builds (one per
index width and uniform types), the modules loaded on the device and the
packed kernel parameters. A call only writes pointers and sizes and launches.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from ..compiler.build import build_for, make_spec
from ..compiler.bundle import bundle_of
from ..display.view import BuildView
from ..errors import KernelTypeError
from ..kernel import Kernel
from ..device import Device
from ..runtime.arrays import DeviceArray
from ..runtime.module import ArgumentPack, LoadedModule, load
from . import params

INT32_MAX = 2**31 - 1


@dataclass
class Prepared:
    """A build loaded on the plan's device, with one argument pack per kernel and thread."""

    build: object
    module: LoadedModule
    local: threading.local
    kernels: dict[str, int]  # kernel name -> CUfunction address, for launch()

    def write_uniforms(self, pack: ArgumentPack, values: tuple) -> None:
        """Write the uniforms' current values into ``pack`` (nothing to write when there are none)."""
        if values:
            pack["u"] = tuple(values)

    def pack(self, kernel: str) -> ArgumentPack:
        """This thread's :class:`ArgumentPack` for ``kernel``."""
        pack = getattr(self.local, kernel, None)
        if pack is None:
            pack = ArgumentPack(self.build.parameters[kernel])
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
        return Prepared(build, module, threading.local(), kernels)

    def temp_storage_bytes(self, n: int) -> int:
        """Bytes of temporary device storage a run over ``n`` items needs (0 for map)."""
        return 0

    def finish(self, output, *, stream=None):
        """The primitive's result from what a call returned (the same, but for filter)."""
        return output


def index_bits_for(n: int, arrays: list[DeviceArray]) -> int:
    """32 when every size and offset fits in a signed 32-bit integer, else 64."""
    largest = n
    for array in arrays:
        layout = array.layout
        if layout.inner_stride == 1 and layout.inner_size == layout.outer_stride:  # contiguous
            largest = max(largest, array.size)
        else:
            largest = max(largest, layout.max_offset(array.size) + 1, abs(layout.outer_stride))
    return 32 if largest <= INT32_MAX else 64


def require(array: DeviceArray, dtype: np.dtype, name: str, size: int | None = None) -> DeviceArray:
    """Check a device array's element type (and item count) against what the kernel reads or writes.

    Raises
    ------
    KernelTypeError
        The element type differs: the kernel would read or write the wrong bytes.
    ValueError
        The item count differs.
    """
    if array.dtype != dtype:
        raise KernelTypeError(
            f"the {name} holds {array.dtype}, but this kernel was built for {np.dtype(dtype)}: convert it "
            f"(x.astype(...)) or allocate it with that dtype; device primitives never convert silently")
    if size is not None and array.size != size:
        raise ValueError(f"the {name} has {array.size} items; this call needs {size}")
    return array

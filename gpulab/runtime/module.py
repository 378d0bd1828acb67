"""Loaded modules: a build's cubin loaded on one device, and fast launches of its kernels."""

from __future__ import annotations

import struct
import weakref
from dataclasses import dataclass, field

import numpy as np

from ..errors import DeviceError
from ..lru import LRU
from ..device import Device

MODULES: LRU = LRU(64)
"""Loaded modules by (build key, device ordinal); one that drops out is unloaded once no plan holds it."""


def _check(result):
    from cuda.bindings import driver

    status, *values = result
    if status != driver.CUresult.CUDA_SUCCESS:
        _, name = driver.cuGetErrorName(status)
        raise DeviceError(f"CUDA driver call failed: {name.decode() if name else status}")
    return values[0] if len(values) == 1 else values


def activate(device: Device) -> None:
    """Make ``device``'s primary context current on this thread (the one CuPy uses)."""
    import cupy

    cupy.cuda.Device(device.ordinal).use()
    cupy.cuda.runtime.free(0)  # makes the primary context current through the runtime


@dataclass
class LoadedModule:
    """A cubin loaded on one device, with a handle for each kernel."""

    handle: object
    functions: dict[str, object]
    device: Device
    _occupancy: dict = field(default_factory=dict, repr=False)
    unloader: weakref.finalize | None = field(default=None, repr=False)

    def address(self, kernel: str) -> int:
        """The ``CUfunction`` handle of ``kernel`` as an integer (what :func:`launch` takes)."""
        return int(self.functions[kernel])

    def occupancy(self, kernel: str, block_threads: int) -> int:
        """How many blocks of ``kernel`` fit on one SM at once (asked of the driver once)."""
        found = self._occupancy.get((kernel, block_threads))
        if found is None:
            from cuda.bindings import driver

            found = _check(driver.cuOccupancyMaxActiveBlocksPerMultiprocessor(self.functions[kernel], block_threads, 0))
            self._occupancy[(kernel, block_threads)] = found
        return found


def load(build, device: Device) -> LoadedModule:
    """Return ``build``'s module loaded on ``device`` (loaded once per device)."""
    return MODULES.get_or_make((build.key, device.ordinal), lambda: _load(build, device))


def _load(build, device: Device) -> LoadedModule:
    from cuda.bindings import driver

    if build.target.cc != device.compute_capability:
        raise DeviceError(
            f"this build is for {build.target}, but {device.name} is compute capability "
            f"{'.'.join(map(str, device.compute_capability))}; compile with target=None for it")
    activate(device)
    handle = _check(driver.cuModuleLoadData(build.cubin))
    functions = {name: _check(driver.cuModuleGetFunction(handle, name.encode())) for name in build.kernels}
    for name, function in functions.items():
        check_parameters(name, function, build.parameters[name])
    module = LoadedModule(handle, functions, device)
    module.unloader = weakref.finalize(module, _unload, handle, _check(driver.cuCtxGetCurrent()))
    module.unloader.atexit = False  # at exit the context goes, and its modules with it
    return module


def driver_parameters(function) -> list[tuple[int, int]]:
    """``(offset, size)`` of each parameter of a loaded kernel, as the driver reports them."""
    from cuda.bindings import driver

    found = []
    while True:
        status, offset, size = driver.cuFuncGetParamInfo(function, len(found))
        if status != driver.CUresult.CUDA_SUCCESS:
            return found
        found.append((offset, size))


def check_parameters(name: str, function, parameters) -> None:
    """Refuse a kernel whose parameters the driver lays out otherwise than the build says (once per load).

    Raises
    ------
    DeviceError
        Naming the kernel and both layouts: the arguments would be read from the wrong bytes.
    """
    ours = [(p.offset, p.dtype.itemsize) for p in parameters]
    theirs = driver_parameters(function)
    if ours != theirs:
        raise DeviceError(f"kernel {name}: gpulab lays out its parameters (offset, size) as {ours}, the driver as "
                          f"{theirs} ({', '.join(p.cxx + ' ' + p.name for p in parameters)}); this is a gpulab bug")


def _unload(handle, context) -> None:
    """Unload a module no one holds any more, in the context it was loaded into."""
    from cuda.bindings import driver

    _check(driver.cuCtxPushCurrent(context))
    try:
        _check(driver.cuModuleUnload(handle))
    finally:
        _check(driver.cuCtxPopCurrent())


_STRUCT_CODES = {"b": "b", "B": "B", "h": "h", "H": "H", "i": "i", "I": "I", "l": "q", "q": "q", "L": "Q",
                 "Q": "Q", "f": "f", "d": "d", "?": "?"}


def _struct_of(dtype: np.dtype) -> struct.Struct | None:
    """A ``struct`` layout of ``dtype`` when it is plain numbers (fast to write), else ``None``."""
    if dtype.names is None:
        code = _STRUCT_CODES.get(dtype.char)
        return struct.Struct("<" + code) if code and not dtype.shape else None
    layout, position = "<", 0
    for name in dtype.names:
        field, offset = dtype.fields[name][:2]
        code = _STRUCT_CODES.get(field.char) if field.names is None and not field.shape else None
        if code is None:
            return None
        layout += "x" * (offset - position) + code
        position = offset + field.itemsize
    return struct.Struct(layout + "x" * (dtype.itemsize - position))


class ArgumentPack:
    """Kernel parameters packed once into one buffer, with the pointer array the driver reads.

    A launch writes only what changed (pointers, sizes) into the buffer and
    passes the same pointer array: no per-call conversion of arguments. The
    buffer is laid out as the kernel's parameter space is.
    Write a parameter with ``pack[name] = value`` (a tuple for a struct, in
    its flattened fields' order).

    Parameters
    ----------
    parameters : sequence of Parameter
        The kernel's parameters (``Build.parameters[kernel]``): names, C layouts, offsets.
    """

    def __init__(self, parameters):
        size = max((p.offset + p.dtype.itemsize for p in parameters), default=1)
        self._buffer = np.zeros(size + 16, dtype=np.uint8)
        base = self._buffer.ctypes.data
        shift = (-base) % 16
        self._memory = memoryview(self._buffer)[shift:shift + size]
        self._pointers = np.array([base + shift + p.offset for p in parameters], dtype=np.uint64)
        self.address = self._pointers.ctypes.data
        self._writers = {p.name: self._writer(p.dtype, p.offset) for p in parameters}

    def _writer(self, dtype: np.dtype, offset: int):
        layout, memory = _struct_of(dtype), self._memory
        if layout is not None:
            pack_into = layout.pack_into
            if dtype.names is None:
                return lambda value: pack_into(memory, offset, value)
            return lambda value: pack_into(
                memory, offset, *(value if isinstance(value, tuple) else np.asarray(value, dtype).item()))
        end = offset + dtype.itemsize

        def write(value):
            memory[offset:end] = np.asarray(value, dtype=dtype).tobytes()

        return write

    def __setitem__(self, name: str, value) -> None:
        self._writers[name](value)


def launch(function: int, grid: int, block: int, stream: int, pack: ArgumentPack, shared_bytes: int = 0) -> None:
    """Launch the kernel ``function`` (a ``CUfunction`` address) on ``stream`` with the parameters in ``pack``."""
    from cuda.bindings import driver

    (status,) = driver.cuLaunchKernel(function, grid, 1, 1, block, 1, 1, shared_bytes, stream, pack.address, 0)
    if status != driver.CUresult.CUDA_SUCCESS:
        _check((status,))

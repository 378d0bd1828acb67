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
    build: object = field(default=None, repr=False)  # the Build it was loaded from
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
    module = LoadedModule(handle, functions, device, build)
    for function in functions.values():
        _BY_FUNCTION[int(function)] = module
    module.unloader = weakref.finalize(module, _unload, handle, _check(driver.cuCtxGetCurrent()))
    module.unloader.atexit = False  # at exit the context goes, and its modules with it
    return module


_BY_FUNCTION: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
"""Loaded modules by the ``CUfunction`` address of each of their kernels (a module that is unloaded drops out)."""


def loaded_kernel(function: int) -> tuple[object, str, Device] | None:
    """``(build, kernel name, device)`` of a loaded kernel by its ``CUfunction`` address (what :func:`launch`
    takes), or ``None`` for a function gpulab did not load."""
    module = _BY_FUNCTION.get(function)
    if module is None:
        return None
    name = next((name for name, handle in module.functions.items() if int(handle) == function), None)
    return (module.build, name, module.device) if name is not None else None


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
                 "Q": "Q", "e": "e", "f": "f", "d": "d", "?": "?"}


def _leaves(dtype: np.dtype, offset: int = 0) -> list[tuple[int, str]]:
    """``(offset, struct code)`` of each value a ``dtype`` is written as.

    A number is one value; a struct is its fields' values, in order; a
    struct with a field ``struct`` cannot write (a sub-array, a complex
    number) is one ``bytes`` value of its size, as is such a scalar.
    """
    if dtype.names is None:
        code = _STRUCT_CODES.get(dtype.char) if not dtype.shape else None
        return [(offset, code or f"{dtype.itemsize}s")]
    found = []
    for name in dtype.names:
        field, field_offset = dtype.fields[name][:2]
        found += _leaves(field, offset + field_offset)
    if any(code.endswith("s") for _, code in found):
        return [(offset, f"{dtype.itemsize}s")]
    return found


def plain_number(dtype: np.dtype) -> bool:
    """Whether a value of ``dtype`` is written as it is: one number ``struct`` packs."""
    return dtype.names is None and not dtype.shape and dtype.char in _STRUCT_CODES


def value_fields(dtype: np.dtype):
    """A function from a value of ``dtype`` (a number, a record) to the tuple :meth:`ArgumentPack.write` takes for it.

    A value already of ``dtype``'s scalar type passes as it is; any other is
    converted as ``numpy.asarray(value, dtype)`` converts it.
    """
    dtype = np.dtype(dtype)
    leaves = _leaves(dtype)
    if len(leaves) == 1 and leaves[0][1].endswith("s"):
        return lambda value: (np.asarray(value, dtype).tobytes(),)
    if dtype.names is None:
        scalar = dtype.type
        return lambda value: (value,) if type(value) is scalar else (np.asarray(value, dtype)[()],)

    def fields(value):
        return tuple(_flatten(np.asarray(value, dtype).item()))

    return fields


def _flatten(item):
    for part in item:
        if isinstance(part, tuple):
            yield from _flatten(part)
        else:
            yield part


class ArgumentPack:
    """Kernel parameters in one buffer laid out as the kernel's parameter space, written in one step.

    :meth:`write` takes every parameter's values in the kernel's order (a
    struct's fields flattened, see :func:`value_fields`) and packs them with
    one precompiled ``struct``; the launch passes the same pointer array
    every time. ``pack[name] = value`` writes one parameter (a tuple for a
    struct, in its flattened fields' order).

    Parameters
    ----------
    parameters : sequence of Parameter
        The kernel's parameters (``Build.parameters[kernel]``): names, C layouts, offsets.
    order : sequence of str, optional
        The parameter names the caller's :meth:`write` calls list, in order;
        checked against ``parameters`` (a template and its plan must agree).

    Raises
    ------
    GpulabError
        When ``order`` is not the kernel's parameter order.
    """

    def __init__(self, parameters, order=None):
        names = tuple(p.name for p in parameters)
        if order is not None and tuple(order) != names:
            from ..errors import GpulabError

            raise GpulabError(f"the kernel takes ({', '.join(names)}), but its plan writes ({', '.join(order)}): "
                              "the template and the plan disagree")
        size = max((p.offset + p.dtype.itemsize for p in parameters), default=1)
        self._buffer = np.zeros(size + 16, dtype=np.uint8)
        base = self._buffer.ctypes.data
        shift = (-base) % 16
        self._memory = memoryview(self._buffer)[shift:shift + size]
        self._pointers = np.array([base + shift + p.offset for p in parameters], dtype=np.uint64)
        self.address = self._pointers.ctypes.data
        self._layouts = {p.name: (_layout(_leaves(p.dtype, p.offset), p.offset), p.offset, value_fields(p.dtype))
                         for p in parameters}
        self._struct = _layout([leaf for p in parameters for leaf in _leaves(p.dtype, p.offset)], 0)

    @property
    def value_count(self) -> int:
        """How many values :meth:`write` takes (every struct's fields counted)."""
        return len(self._struct.unpack(bytes(self._struct.size)))

    def write(self, *values) -> None:
        """Write every parameter: their values in the kernel's order, structs flattened."""
        self._struct.pack_into(self._memory, 0, *values)

    def packed(self, *values) -> bytes:
        """The bytes :meth:`write` would write for ``values`` (what tells two launches apart), not written."""
        return self._struct.pack(*values)

    def load(self, parameters: bytes) -> None:
        """Write every parameter from :meth:`packed`'s bytes."""
        self._memory[:len(parameters)] = parameters  # what follows, if anything, is a last struct's padding

    @property
    def written(self) -> bytes:
        """The parameter space as the last write left it (what a launch now passes)."""
        return bytes(self._memory)

    def __setitem__(self, name: str, value) -> None:
        layout, offset, fields = self._layouts[name]
        layout.pack_into(self._memory, offset, *(value if isinstance(value, tuple) else fields(value)))


def _layout(leaves: list[tuple[int, str]], start: int) -> struct.Struct:
    """One ``struct`` writing ``leaves`` (``(offset, code)``, in increasing offsets) from ``start``."""
    layout, position = "<", start
    for offset, code in leaves:
        if offset < position:
            raise ValueError(f"parameter values overlap at offset {offset}")
        layout += "x" * (offset - position) + code
        position = offset + struct.calcsize("<" + code)
    return struct.Struct(layout)


def launch_through_cuda_bindings(function, grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_bytes, stream,
                                 parameters, extra) -> None:
    """``cuLaunchKernel`` through cuda.bindings (the launcher when CuPy's is missing)."""
    from cuda.bindings import driver

    (status,) = driver.cuLaunchKernel(function, grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_bytes,
                                      stream, parameters, extra)
    if status != driver.CUresult.CUDA_SUCCESS:
        _check((status,))


def _cupy_launcher():
    """CuPy's compiled ``cuLaunchKernel`` wrapper (integers in, one C call) and its error, or ``None``."""
    try:
        from cupy.cuda import driver
    except ImportError:  # pragma: no cover - CuPy is a dependency
        return None
    launcher, error = getattr(driver, "launchKernel", None), getattr(driver, "CUDADriverError", None)
    return (launcher, error) if launcher and error else None


LAUNCHERS = {"cupy": _cupy_launcher, "cuda.bindings": lambda: (launch_through_cuda_bindings, DeviceError)}
"""Ways to call ``cuLaunchKernel`` with integer arguments, fastest first (bench/results: run 12), each
giving the launch function and the exception it raises."""
_launcher = _launch_error = None


def use_launcher(name: str | None = None) -> None:
    """Launch through ``LAUNCHERS[name]`` from now on (the first one that is there, for ``None``)."""
    global _launcher, _launch_error
    names = [name] if name else list(LAUNCHERS)
    for candidate in names:
        found = LAUNCHERS[candidate]()
        if found is not None:
            _launcher, _launch_error = found
            return
    raise DeviceError(f"no CUDA launcher among {', '.join(names)} is installed")


OBSERVERS: list = []
"""Called as ``observer(function, grid, block, stream, pack, shared_bytes)`` before each launch is made (a profile
records launches so, :mod:`gpulab.profiler.record`); empty, the launch path pays one check."""


def launch(function: int, grid: int, block: int, stream: int, pack: ArgumentPack, shared_bytes: int = 0) -> None:
    """Launch the kernel ``function`` (a ``CUfunction`` address) on ``stream`` with the parameters in ``pack``.

    Raises
    ------
    DeviceError
        When the driver refuses the launch.
    """
    if OBSERVERS:
        for observe in OBSERVERS:
            observe(function, grid, block, stream, pack, shared_bytes)
    if _launcher is None:
        use_launcher()
    try:
        _launcher(function, grid, 1, 1, block, 1, 1, shared_bytes, stream, pack.address, 0)
    except _launch_error as exc:
        if isinstance(exc, DeviceError):
            raise
        raise DeviceError(f"CUDA driver call failed: {exc}") from exc

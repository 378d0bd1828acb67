"""DevicePlan: one primitive for one function, element types and device.

It owns everything that does not change between calls: the builds (one per
index width and uniform types), the modules loaded on the device and the
packed kernel parameters. A call only writes pointers and sizes and launches.
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass, field

from typing import NamedTuple

import numpy as np

from .. import captures
from ..captures import ArrayType
from ..compiler.pipeline import build_for, make_spec
from ..compiler.bundle import bundle_of
from ..conversion import check_iota
from ..device import Device, gpu_count
from ..display.view import BuildView
from ..errors import DeviceError, KernelTypeError, LengthMismatchError
from ..iota import Iota
from ..kernel import Kernel
from ..mapped import Mapped, input_kinds, walk
from ..options import BuildOptions
from ..registry import primitive as primitive_record
from ..runtime import bounds
from ..runtime.arrays import INT32_MAX, array_fields, device_ordinal, plain_cupy_array, strided_array
from ..runtime.module import ArgumentPack, LoadedModule, activate, load, plain_number, value_fields
from ..runtime.replay import KernelLauncher
from . import params

NO_BOUNDS = (0, 0)  # the BoundsCheck of a build whose reads are not checked (its reads never use it)


class CapturedValue(NamedTuple):
    """A captured array of one call: its type (what a build is chosen by), its ``struct CapturedK`` fields
    (pointer, shape, strides in bytes) and what an error says of it."""

    type: ArrayType
    fields: tuple
    captured: captures.Captured


def value_type(value):
    """What a build is chosen by, of one uniform's or captured array's value: its type, never its value."""
    if isinstance(value, CapturedValue):
        return value.type
    return value.dtype if isinstance(value, np.generic) else type(value)


@dataclass
class Prepared:
    """A build loaded on the plan's device, with one argument pack per kernel and thread."""

    build: object
    module: LoadedModule
    local: threading.local
    kernels: dict[str, int]  # kernel name -> CUfunction address, for launch()
    orders: dict[str, tuple[str, ...]]  # kernel name -> the parameter names its plan writes, in order
    replays: bool = True  # whether a launch may repeat another (see DevicePlan.replays)
    launchers: dict = field(default_factory=dict)  # kernel name -> its launcher()

    def uniform_fields(self, values: tuple) -> tuple:
        """The uniforms' values as :meth:`ArgumentPack.write` takes them (numbers as they are), then the
        captured arrays' fields and this thread's ``BoundsCheck`` (see :meth:`DevicePlan.uniform_values`)."""
        count = len(self.build.uniforms)
        scalars = values[:count]
        if self.uniform_writers is not None:
            scalars = tuple(field for write, value in zip(self.uniform_writers, scalars) for field in write(value))
        if not self.build.arrays:
            return scalars
        checked_on = self.module.device if self.build.options.boundscheck else None
        return scalars + captured_fields(values[count:count + len(self.build.arrays)], checked_on)

    def check_reads(self, values: tuple, stream: int) -> None:
        """After a launch with bounds-checked reads: wait for ``stream`` and raise if a read was out of bounds.

        Raises
        ------
        KernelIndexError
            Naming the kernel's line, the array, the index and the shape.
        """
        if not self.build.options.boundscheck:
            return
        captured = [value.captured for value in values if isinstance(value, CapturedValue)]
        if not captured:
            return
        failure = bounds.slot(self.module.device).failure(stream)
        if failure is not None:
            index = tuple(failure[f"index{k}"] for k in range(failure["ndim"]))
            raise captures.index_error(captured[failure["array"]], failure["line"], failure["column"], index)

    @functools.cached_property
    def uniform_writers(self) -> tuple | None:
        """Per uniform, how its value is written; ``None`` when every uniform is a plain number."""
        dtypes = [element.dtype for _, element in self.build.uniforms]
        if all(map(plain_number, dtypes)):
            return None
        return tuple(value_fields(dtype) for dtype in dtypes)

    def launcher(self, kernel: str):
        """``run(grid, stream, *values)``: launch ``grid`` blocks of ``kernel`` on ``stream`` with ``values`` (its
        parameters in order) through this thread's :class:`~gpulab.runtime.replay.KernelLauncher`; made once per
        kernel."""
        found = self.launchers.get(kernel)
        if found is None:
            local = self.local

            def found(grid: int, stream: int, *values) -> None:
                run = getattr(local, kernel, None) or self.kernel_launcher(kernel)
                run(grid, stream, *values)

            self.launchers[kernel] = found
        return found

    def kernel_launcher(self, kernel: str) -> KernelLauncher:
        """This thread's :class:`~gpulab.runtime.replay.KernelLauncher` of ``kernel`` (made on first use)."""
        found = getattr(self.local, kernel, None)
        if found is None:
            pack = ArgumentPack(self.build.parameters[kernel], self.orders.get(kernel))
            found = KernelLauncher(self.kernels[kernel], self.build.geometry.block_threads, pack, self.replays)
            setattr(self.local, kernel, found)
        return found

    def pack(self, kernel: str) -> ArgumentPack:
        """This thread's :class:`ArgumentPack` for ``kernel``."""
        return self.kernel_launcher(kernel).pack


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
    options : BuildOptions
        Its builds' options (``iota`` as its inputs are; ``index_bits`` 64 makes every build 64-bit).
    mapped : tuple
        Per input, the :class:`~gpulab.mapped.MappedShape` it is or ``None`` (``()`` when none is mapped).
    keys : dtype, optional
        A keyed primitive's key type.
    """

    associative = False
    """The caller's word that the operator is associative (``associative=True``): its builds are not probed.
    :func:`~gpulab.primitives.dispatch.make_plan` probes the others as it makes the plan
    (:mod:`gpulab.compiler.associativity`)."""

    def __init__(self, primitive: str, kernel: Kernel, types, device: Device,
                 options: BuildOptions = BuildOptions(), mapped=(), keys=None):
        self.primitive = primitive
        self.kernel = kernel
        self.types = tuple(types)
        self.device = device
        self.options = options
        self.mapped = tuple(mapped)
        self.keys = keys
        self._prepared: dict[object, Prepared] = {}
        self._lock = threading.Lock()
        count = primitive_record(primitive).input_count(len(self.types))
        self.kinds = input_kinds(count, options.iota, self.mapped)
        """Each input's kind: ``"array"``, ``"iota"`` or the :class:`~gpulab.mapped.MappedShape` it is."""
        self._input_dtypes = tuple(t.dtype for t in self.types)
        self._labels = tuple(f"input {position}" for position in range(count))  # what errors call each input
        operators, start = {}, len(kernel.uniforms) + len(kernel.arrays)
        for path, shape in walk(self.kinds):
            operators[path] = (start, len(shape.kernel.uniforms), len(shape.kernel.arrays))
            start += len(shape.kernel.uniforms) + len(shape.kernel.arrays)
        self._operators = operators  # mapped input's path -> where its values start, its uniforms, its arrays
        self._kernels = (kernel, *(shape.kernel for _, shape in walk(self.kinds)))
        self._has_uniforms = any(k.uniforms or k.arrays for k in self._kernels)
        # The plain call (see plain_call): None until a call has loaded the 32-bit build, False for a plan
        # whose calls always read uniforms, captured arrays, iotas or mapped inputs.
        self._plain = None if not self._has_uniforms and set(self.kinds) == {"array"} else False

    replays = True
    """Whether a call's launch may repeat an earlier one's bytes for bytes, so that it is replayed as a CUDA
    graph (:mod:`gpulab.runtime.replay`); ``False`` for plans whose every launch differs."""

    def uniform_values(self) -> tuple:
        """What a call passes as uniforms: per kernel (the primitive's, then its mapped inputs' in
        :func:`~gpulab.mapped.walk` order), the uniforms' current values as NumPy scalars of their types
        (checked: see ``Kernel.uniform_arguments``), then a :class:`CapturedValue` per captured array.

        Raises
        ------
        HostArrayError
            When a captured array lives in host memory.
        """
        if not self._has_uniforms:
            return ()
        values = ()
        for kernel in self._kernels:
            values += kernel.uniform_arguments()[1]
            if kernel.arrays:
                values += tuple(_captured_value(kernel, name, value, kind) for name, value, kind
                                in zip(kernel.arrays, kernel.array_values(), kernel.array_types()))
        return values

    def input_fields(self, x, position: int, values: tuple, path: str | None = None, kind=None, dtype=None):
        """``(fields, size, extent)`` of input ``x`` as its ``struct InputK`` is written.

        An array is a pointer and a layout; an iota its start; a mapped input its
        inputs' fields, then its function's uniforms (from ``values``, see
        :meth:`uniform_values`). ``extent`` decides the index width.

        Raises
        ------
        KernelTypeError
            When ``x`` is not of the kind the plan was made for.
        """
        label = self._labels[position] if path is None else f"input {path.replace('_', '.')}"
        path = str(position) if path is None else path
        kind = self.kinds[position] if kind is None else kind
        if kind == "array":
            self.check_device(x, label)
            return array_fields(x, self._input_dtypes[position] if dtype is None else dtype, label)
        if kind == "iota":
            if not isinstance(x, Iota):
                raise KernelTypeError(f"this {self.primitive} was made for gpulab.iota as {label}; pass an iota there")
            check_iota(x, self._input_dtypes[position] if dtype is None else dtype, label)
            return (x.start,), x.size, 0
        if not isinstance(x, Mapped) or x.shape != kind:
            raise KernelTypeError(f"this {self.primitive} was made for gpulab.mapped({kind.kernel.name}, ...) as "
                                  f"{label}, of the same kinds of inputs; pass one there, or make another plan")
        fields, sizes, extent = (), [], 0
        for k, (inner, inner_kind, arg) in enumerate(zip(x.inputs, kind.kinds, kind.args)):
            found, size, reach = self.input_fields(inner, position, values, f"{path}_{k}", inner_kind, arg.dtype)
            fields += found
            sizes.append(size)
            extent = max(extent, reach)
        if sizes.count(sizes[0]) != len(sizes):
            raise LengthMismatchError(f"the inputs of mapped `{kind.kernel.name}` must have equal lengths; got {sizes}")
        start, uniforms, arrays = self._operators[path]
        fields += tuple(f for value in values[start:start + uniforms] for f in scalar_fields(value))
        if arrays:
            checked_on = self.device if self.options.boundscheck else None
            fields += captured_fields(values[start + uniforms:start + uniforms + arrays], checked_on)
        return fields, sizes[0], extent

    def check_device(self, x, label: str) -> None:
        """Refuse a device array that lives on another device than the plan's (never copied, never launched on).

        Raises
        ------
        DeviceError
            Naming both devices and what to do.
        """
        found = device_ordinal(x)
        if found is not None and found != self.device.ordinal:
            raise DeviceError(f"the {label} lives on cuda:{found}, but this {self.primitive} was made for "
                              f"{self.device.name}: make a plan for cuda:{found} (device='cuda:{found}'), or copy "
                              f"the array there first (cupy.asarray(x) inside `with cupy.cuda.Device("
                              f"{self.device.ordinal}):`); gpulab never copies between devices silently")

    def prepared(self, index_bits: int, uniform_values: tuple) -> Prepared:
        """The build for this index width (see :meth:`index_bits`) and these uniforms' (and captured arrays')
        types, loaded (built on first use)."""
        index_bits = self.index_bits(index_bits)
        key = (index_bits, tuple(map(value_type, uniform_values))) if uniform_values else index_bits
        prepared = self._prepared.get(key)
        if prepared is None:
            with self._lock:
                prepared = self._prepared.get(key) or self._prepare(index_bits)
                self._prepared[key] = prepared
        return prepared

    def index_bits(self, needed: int) -> int:
        """The index width of the build a call that ``needed`` this width runs: 64 where the options ask for it."""
        return max(needed, self.options.index_bits)

    def build(self, index_bits: int = 32):
        """The build for this index width and the uniforms' current types (compiled on first use, not loaded)."""
        types = None if self.kernel.declared else self.types  # declared types keep a declared result
        return build_for(make_spec(self.primitive, self.kernel, types=types, target=self.device.compute_capability,
                                   mapped=self.mapped, keys=self.keys, options=self.options, index_bits=index_bits),
                         associative=self.associative)

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
            params.check_fields(parameters, params.written_fields(parameters, self.kinds))
        module = load(build, self.device)
        kernels = {name: module.address(name) for name in build.kernels}
        return Prepared(build, module, threading.local(), kernels, self.argument_order(build), self.replays)

    def argument_order(self, build) -> dict[str, tuple[str, ...]]:
        """Per kernel, the parameter names this plan's calls write, in order (checked when a pack is made)."""
        return {}

    def temp_storage_bytes(self, n: int) -> int:
        """Bytes of temporary device storage a run over ``n`` items needs (0 for map)."""
        return 0

    def plain_call(self, prepared: Prepared):
        """The call of plain inputs with ``prepared`` (the 32-bit build), or ``None`` where there is none.

        It takes ``__call__``'s arguments and reads them with no other check when
        every input is a :func:`plain_input`, every output a C-contiguous CuPy
        array of the plan's type and device or ``None`` (then it is allocated),
        and the stream is CuPy's current one; for any other call it returns
        ``None``, and the call takes the general path (with its checks and
        errors). Only plans with no uniforms, captured arrays, iotas or mapped
        inputs ask for one.
        """
        return None

    def finish(self, output, *, stream=None):
        """The primitive's result from what a call returned (the same, but for filter)."""
        return output


def on_plan_device(call):
    """Decorate a plan's ``__call__`` to run with the plan's device current: outputs and scratch are
    allocated there, and its kernels launch in the context their module was loaded into."""

    @functools.wraps(call)
    def run(self, *args, **kwargs):
        activated = getattr(_THREAD, "activated", None)
        if activated is None or self.device.ordinal not in activated:
            _activate(self.device)
        if gpu_count() > 1:
            import cupy

            with cupy.cuda.Device(self.device.ordinal):
                return plain_or_general(self, args, kwargs)
        return plain_or_general(self, args, kwargs)  # the one GPU is always current: no switch to pay for

    def plain_or_general(self, args, kwargs):
        plain = self._plain
        if plain:
            done = plain(*args, **kwargs)
            if done is not None:
                return done
        result = call(self, *args, **kwargs)
        if plain is None and 32 in self._prepared:
            self._plain = self.plain_call(self._prepared[32]) or False
        return result

    return run


def _activate(device: Device) -> None:
    """Once per thread and device: make ``device``'s primary context current for the driver (a new
    thread's device is 0 with no current context, and entering Device(0) there makes none current)."""
    import cupy

    activated = getattr(_THREAD, "activated", None)
    if activated is None:
        activated = _THREAD.activated = set()
    with cupy.cuda.Device(device.ordinal):
        activate(device)
    activated.add(device.ordinal)


_THREAD = threading.local()


def captured_fields(values, checked_on: Device | None) -> tuple:
    """The fields of captured arrays' values, then of the ``BoundsCheck`` their reads record failures in:
    this thread's slot on ``checked_on``, or none when the build's reads are unchecked (``None``)."""
    return (*(field for value in values for field in value.fields),
            *(bounds.slot(checked_on).fields if checked_on is not None else NO_BOUNDS))


@functools.lru_cache(maxsize=64)
def _writer(dtype: np.dtype):
    return value_fields(dtype)


def scalar_fields(value) -> tuple:
    """The fields a uniform's value (a NumPy scalar) is written as."""
    return (value,) if plain_number(value.dtype) else _writer(value.dtype)(value)


def _captured_value(kernel, name: str, value, kind: ArrayType) -> CapturedValue:
    array = strided_array(value, name=f"captured array `{name}` of `{kernel.name}`")
    return CapturedValue(kind, (array.pointer, *array.shape, *array.strides),
                         captures.Captured(kernel, name, array.shape))


def plain_input(x, dtype: np.dtype, ordinal: int) -> tuple[int, int] | None:
    """``(pointer, size)`` of an input a plain call takes (:func:`~gpulab.runtime.arrays.plain_cupy_array`,
    with 1 to 2^31 - 1 items: the 32-bit build's), else ``None``."""
    found = plain_cupy_array(x, dtype, ordinal)
    return found if found is not None and 0 < found[1] <= INT32_MAX else None


def index_bits_of(extent: int) -> int:
    """32 when ``extent`` (the largest of the sizes and the arrays' extents, see
    :func:`~gpulab.runtime.arrays.array_fields`) fits a signed 32-bit integer, else 64."""
    return 32 if extent <= INT32_MAX else 64

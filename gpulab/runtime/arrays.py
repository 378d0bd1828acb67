"""Arrays on a device: any ``__cuda_array_interface__`` or DLPack object, seen as pointer + layout.

N-d and strided inputs are never copied: their dimensions are coalesced
into at most two affine loops (``Layout``), which the kernels index.
"""

from __future__ import annotations

import functools
import math
import sys
from typing import NamedTuple

import numpy as np

from ..captures import is_device_array
from ..conversion import wrong_dtype
from ..device import devices
from ..errors import HostArrayError


INT32_MAX = 2**31 - 1


class Layout(NamedTuple):
    """Item i of a flattened (C-order) array lives at ``(i // inner_size) * outer_stride + (i % inner_size) * inner_stride`` elements.

    A kernel divides by ``inner_size`` with a multiply and a shift
    (:func:`row_divisor`); both are 0 where every index lies in row 0 (1-D).
    """

    inner_size: int
    inner_stride: int
    outer_stride: int
    row_multiplier: int = 0
    row_shift: int = 0

    @property
    def contiguous(self) -> bool:
        """Whether items are consecutive in memory."""
        return self.inner_stride == 1 and self.inner_size == self.outer_stride

    def max_offset(self, size: int) -> int:
        """The largest element offset the items reach (for choosing 32- or 64-bit indices)."""
        if size == 0:
            return 0
        rows = (size - 1) // max(self.inner_size, 1)
        return rows * abs(self.outer_stride) + (min(size, self.inner_size) - 1) * abs(self.inner_stride)


class DeviceArray(NamedTuple):
    """A device array as the kernels see it.

    Attributes
    ----------
    pointer : int
        Address of item 0.
    dtype : numpy.dtype
        Element type.
    shape : tuple of int
        Logical shape (items are taken in C order).
    size : int
        Number of items.
    layout : Layout
        Where each item lives.
    owner : object
        The array this view came from (kept alive while in use).
    """

    pointer: int
    dtype: np.dtype
    shape: tuple[int, ...]
    size: int
    layout: Layout
    owner: object


_cupy_array: type | None = None  # cupy.ndarray, once it is known to have the attributes array_fields reads


def contiguous_fields(pointer: int, size: int) -> tuple:
    """What a kernel is passed for ``size`` consecutive items from ``pointer``: the pointer, then its
    :class:`Layout`."""
    return (pointer, size, 1, size, 0, 0)


def array_fields(x, dtype: np.dtype, name: str) -> tuple[tuple, int, int]:
    """``(fields, size, extent)`` of device array ``x``, checked to hold ``dtype``.

    ``fields`` are what a kernel is passed for it (its pointer, then its
    :class:`Layout`); ``extent`` is one more than the largest element offset
    (or stride) an index reaches: what decides between 32- and 64-bit
    indices. A contiguous CuPy array is read from its attributes (no
    interface dict, no layout object); anything else through :func:`device_array`.

    Raises
    ------
    ConversionError
        When ``x`` holds another element type: the kernel would read the wrong bytes.
    HostArrayError
        When ``x`` lives in host memory.
    """
    if type(x) is _cupy_array and x._c_contiguous:
        if x.dtype is not dtype and x.dtype != dtype:
            raise wrong_dtype(name, x.dtype, dtype)
        size = x.size
        return contiguous_fields(x.data.ptr, size), size, size
    view = device_array(x, name=name)
    if view.dtype != dtype:
        raise wrong_dtype(name, view.dtype, dtype)
    layout = view.layout
    extent = view.size if layout.contiguous else max(layout.max_offset(view.size) + 1, abs(layout.outer_stride))
    return (view.pointer, *layout), view.size, extent


def plain_cupy_array(x, dtype: np.dtype, ordinal: int) -> tuple[int, int] | None:
    """``(pointer, size)`` of ``x`` when it is a C-contiguous CuPy array of ``dtype`` on device ``ordinal``, else
    ``None`` (then :func:`array_fields` and the plan's checks read it, and say what is wrong if anything is)."""
    if (type(x) is not _cupy_array or not x._c_contiguous or (x.dtype is not dtype and x.dtype != dtype)
            or x.data.device_id != ordinal):
        return None
    return x.data.ptr, x.size


def plain_output(out, size: int | None, dtype: np.dtype, ordinal: int):
    """``(out, pointer)`` for an output of ``size`` items (``None``: one, 0-d) when ``out`` is a plain CuPy array
    of that size (see :func:`plain_cupy_array`) or ``None`` (then a new array), else ``None``."""
    if out is None:
        out = empty(() if size is None else (size,), dtype)  # a tuple: CuPy takes it faster than an int
        return out, out.data.ptr
    found = plain_cupy_array(out, dtype, ordinal)
    return (out, found[0]) if found is not None and found[1] == (size or 1) else None


def device_ordinal(x) -> int | None:
    """The CUDA ordinal of the device whose memory holds ``x`` (``None`` for no device array, or when none can be told).

    A CuPy array says so itself; a DLPack object through ``__dlpack_device__``;
    any other ``__cuda_array_interface__`` object is asked of the driver by its pointer.
    """
    if type(x) is _cupy_array:  # read before asking for the interface, which CuPy builds as a dict per call
        return x.data.device_id
    if not is_device_array(x):
        return None
    device_id = getattr(getattr(x, "data", None), "device_id", None)  # a CuPy array's MemoryPointer
    if isinstance(device_id, int):
        return device_id
    if not hasattr(x, "__cuda_array_interface__") and hasattr(x, "__dlpack_device__"):
        return int(x.__dlpack_device__()[1])
    pointer = x.__cuda_array_interface__["data"][0]
    if not pointer or len(devices()) == 1:  # no GPU here: nothing to tell the pointer's device by
        return None
    from cuda.bindings import driver

    status, ordinal = driver.cuPointerGetAttribute(driver.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                                   pointer)
    # A pointer the driver does not know (host memory) belongs to no device; its launch says what is wrong.
    return int(ordinal) if status == driver.CUresult.CUDA_SUCCESS else None


def empty(shape, dtype: np.dtype):
    """A new, uninitialised CuPy array on the current device (as ``cupy.empty``, whose Python frame
    costs ~0.5 us of a ~4 us allocation: bench/results, run 12)."""
    import cupy

    return cupy.ndarray(shape, dtype)


def _know_cupy(cupy) -> None:
    """Read CuPy arrays from their attributes from now on, if this CuPy has them (else always the interface)."""
    global _cupy_array
    if all(hasattr(cupy.ndarray, attribute) for attribute in ("_c_contiguous", "data", "size", "dtype")):
        _cupy_array = cupy.ndarray


class StridedArray(NamedTuple):
    """A device array as a captured array is passed: NumPy's view of it (any strides, never coalesced)."""

    pointer: int
    dtype: np.dtype
    shape: tuple[int, ...]
    strides: tuple[int, ...]  # in bytes


def strided_array(x, *, name: str) -> StridedArray:
    """The :class:`StridedArray` of device array ``x``.

    Raises
    ------
    HostArrayError
        When ``x`` lives in host memory: the message says how to move it.
    """
    cupy = sys.modules.get("cupy")
    if cupy is not None and isinstance(x, cupy.ndarray):
        return StridedArray(x.data.ptr, x.dtype, x.shape, x.strides)
    if not is_device_array(x):
        raise HostArrayError(f"{name} is a host array ({type(x).__name__}); device primitives never copy silently. "
                             "Capture a device copy (gpulab.to_device(x)), or run on the host with device='host'")
    if not hasattr(x, "__cuda_array_interface__"):
        import cupy

        x = cupy.from_dlpack(x)
    interface = x.__cuda_array_interface__
    dtype, shape = _dtype_of(interface), tuple(interface["shape"])
    strides = interface.get("strides")
    if strides is None:
        strides = tuple(dtype.itemsize * math.prod(shape[k + 1:]) for k in range(len(shape)))
    return StridedArray(interface["data"][0], dtype, shape, tuple(strides))


def device_array(x, *, name: str = "input") -> DeviceArray:
    """Return the :class:`DeviceArray` view of ``x``.

    Raises
    ------
    HostArrayError
        When ``x`` lives in host memory: the message says how to move it.
    """
    cupy = sys.modules.get("cupy")  # a CuPy array exists only once CuPy is imported
    if cupy is not None and isinstance(x, cupy.ndarray):
        if _cupy_array is None:
            _know_cupy(cupy)
        # CuPy's attributes are cheaper than building its interface dict on every call.
        if x.flags.c_contiguous:
            size = x.size
            return DeviceArray(x.data.ptr, x.dtype, x.shape, size, Layout(size, 1, size), x)
        return _view(x, x.data.ptr, x.dtype, x.shape, x.strides, name)
    if not is_device_array(x):
        raise HostArrayError(
            f"the {name} is a host array ({type(x).__name__}); device primitives never copy silently. "
            f"Move it with gpulab.to_device(x), or run on the host with device='host'"
        )
    if not hasattr(x, "__cuda_array_interface__"):
        import cupy

        x = cupy.from_dlpack(x)
    interface = x.__cuda_array_interface__
    return _view(x, interface["data"][0], _dtype_of(interface), tuple(interface["shape"]),
                 interface.get("strides"), name)


def _view(owner, pointer: int, dtype: np.dtype, shape: tuple, strides, name: str) -> DeviceArray:
    size = math.prod(shape)
    itemsize = dtype.itemsize
    contiguous = strides is None or _is_c_contiguous(shape, strides, itemsize)
    if contiguous:
        return DeviceArray(pointer, dtype, shape, size, Layout(size, 1, size), owner)
    if any(s % itemsize for s in strides):
        raise HostArrayError(f"the {name} has strides {strides} that are not whole {dtype} items; copy it first")
    layout = coalesce(shape, tuple(s // itemsize for s in strides))
    return DeviceArray(pointer, dtype, shape, size, layout, owner)


def _is_c_contiguous(shape, strides, itemsize) -> bool:
    expected = itemsize
    for size, stride in zip(reversed(shape), reversed(strides)):
        if size != 1 and stride != expected:
            return False
        expected *= size
    return True


@functools.lru_cache(maxsize=256)
def _dtype_from(typestr: str, descr: tuple | None) -> np.dtype:
    if descr and (len(descr) > 1 or descr[0][0]):
        return np.dtype([tuple(field) for field in descr])
    return np.dtype(typestr)


def _dtype_of(interface) -> np.dtype:
    descr = interface.get("descr")
    return _dtype_from(interface["typestr"], tuple(tuple(f) for f in descr) if descr else None)


def coalesce(shape: tuple[int, ...], strides: tuple[int, ...]) -> Layout:
    """Merge dimensions into at most two affine loops (strides in elements).

    Raises
    ------
    HostArrayError
        When more than two loops remain (copy it with ``cupy.ascontiguousarray``).
    """
    dims = [(n, s) for n, s in zip(shape, strides) if n != 1]
    merged: list[list[int]] = []
    for size, stride in dims:
        if merged and merged[-1][1] == size * stride:
            merged[-1] = [merged[-1][0] * size, stride]
        else:
            merged.append([size, stride])
    if not merged:
        return Layout(1, 1, 1)
    if len(merged) == 1:
        size, stride = merged[0]
        return Layout(size, stride, size * stride)
    if len(merged) == 2:
        (_, outer_stride), (inner_size, inner_stride) = merged
        return Layout(inner_size, inner_stride, outer_stride, *row_divisor(inner_size, math.prod(shape)))
    raise HostArrayError(
        f"an array of shape {shape} and strides {strides} (in items) needs {len(merged)} loops; gpulab "
        "indexes at most two without a copy. Make it contiguous first: cupy.ascontiguousarray(x)"
    )


@functools.lru_cache(maxsize=256)
def row_divisor(inner_size: int, size: int) -> tuple[int, int]:
    """``(multiplier, shift)`` by which a kernel divides an index below ``size`` by ``inner_size`` (2 or more).

    Division by an invariant integer as a multiply (Granlund and Montgomery, 1994): with
    ``l = ceil(log2 d)``, ``i // d == (i * ceil(2**(N + l) / d)) >> (N + l)`` for every ``0 <= i < 2**N``.
    A kernel takes the high half of the product and shifts it by ``l - 1`` (common.cu: row_of). Up to
    2**31 items, N is 31 and the multiplier is in the high word, where 32-bit indices read it and 64-bit
    ones find it exact enough for indices of that size; past that, only 64-bit indices reach, and N is 63.
    """
    bits = (inner_size - 1).bit_length()
    if size > INT32_MAX:
        return -(-(1 << (63 + bits)) // inner_size), bits - 1
    return -(-(1 << (31 + bits)) // inner_size) << 32, bits - 1


def to_device(x, device=None):
    """Copy a host array to a device (a CuPy array).

    Parameters
    ----------
    x : array_like
        NumPy array or anything ``numpy.asarray`` accepts.
    device : str, optional
        ``"cuda:N"``; the current device by default. On a machine with no
        GPU the array stays on the host, where primitives then run (said
        once, as a :class:`~gpulab.errors.HostFallbackWarning`).

    Raises
    ------
    HostArrayError
        When ``device`` names the host: there is nothing to copy to.
    """
    from ..device import devices, say_no_gpu
    from ..device import device as find_device

    target = find_device(device)
    if not target.is_gpu:
        if device is None and not any(d.is_gpu for d in devices()):
            say_no_gpu(stacklevel=2)
            return np.asarray(x)
        raise HostArrayError(f"{target.name} is not a GPU; there is nothing to copy to")
    import cupy

    with cupy.cuda.Device(target.ordinal):
        return cupy.asarray(np.asarray(x))


def to_host(x) -> np.ndarray:
    """Copy a device array (or anything array-like) to a NumPy array."""
    if is_device_array(x):
        import cupy

        return cupy.asnumpy(x if hasattr(x, "__cuda_array_interface__") else cupy.from_dlpack(x))
    return np.asarray(x)

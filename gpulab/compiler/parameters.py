"""Kernel parameters, read from the generated C++: each kernel's parameter list with its C layout.

The templates say what each kernel takes (``gpulab_scan(Input0 in, index_t
n, ...)``) and the structs those parameters are (``struct Layout``,
``TileStatus``, ``Uniforms``...). This module reads both from the kernel
text codegen wrote and lays each parameter out as the C++ compiler does:
a NumPy dtype (structs flattened, ``layout.inner_size``) at its offset in the
kernel's parameter space. The build carries the list; a plan packs its
arguments from it; loading checks it once against the driver's
``cuFuncGetParamInfo``. No parameter list is written twice.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..errors import GpulabError
from ..types import ElementType, scalar_of_cxx

POINTER = np.dtype(np.uint64)
_KERNEL = re.compile(r'extern "C" __global__ void(?: __launch_bounds__\([^)]*\))?\s+(\w+)\(([^)]*)\)', re.S)
_STRUCT = re.compile(r"(?:template <typename (\w+)>\s*)?struct (\w+) \{(.*?)\};", re.S)
_FIELD = re.compile(r"^\s*([\w<>:* ]+?)\s*\b(\w+);", re.M)


class ParameterError(GpulabError):
    """The generated C++ names a parameter type gpulab cannot lay out (a template bug, not the user's)."""


@dataclass(frozen=True)
class Parameter:
    """One kernel parameter.

    Attributes
    ----------
    name : str
        Its name in the kernel's signature.
    cxx : str
        Its C++ type as written.
    dtype : numpy.dtype
        Its C layout (a struct's fields flattened: ``layout.inner_size``).
    offset : int
        Where it starts in the kernel's parameter space.
    pointers : tuple of int
        Where its device pointers are, in bytes from its start (a pointer's own parameter: ``(0,)``; a struct's:
        those of its pointer fields): what a replay of a launch elsewhere must move.
    """

    name: str
    cxx: str
    dtype: np.dtype
    offset: int
    pointers: tuple[int, ...] = ()

    @property
    def fields(self) -> tuple[str, ...]:
        """The (flattened) field names of a struct parameter; empty for a scalar."""
        return tuple(self.dtype.names or ())


@dataclass(frozen=True)
class _Layout:
    dtype: np.dtype
    alignment: int
    struct: bool = False  # a struct of the source: its fields are flattened into a parameter's
    pointers: tuple[int, ...] = ()  # byte offsets of the pointers it holds


def kernel_parameters(source: str, kernels, elements: dict[str, ElementType], index_bits: int,
                      ) -> dict[str, tuple[Parameter, ...]]:
    """Each kernel's parameters, laid out as the C++ compiler lays them out.

    Parameters
    ----------
    source : str
        The generated kernel file.
    kernels : iterable of str
        The ``__global__`` functions to read.
    elements : dict of str to ElementType
        The C++ names of element types: codegen's typedefs (``value_t``,
        ``in0_t``, ``out_t``) and each element type's own name.
    index_bits : {32, 64}
        The width of ``index_t``.

    Raises
    ------
    ParameterError
        For a kernel, or a type of one of its parameters, that is not in ``source``.
    """
    structs = {name: (argument, body) for argument, name, body in _STRUCT.findall(source)}
    resolver = _Resolver(structs, elements, np.dtype(np.int32 if index_bits == 32 else np.int64))
    signatures = dict(_KERNEL.findall(source))
    found = {}
    for kernel in kernels:
        if kernel not in signatures:
            raise ParameterError(f"the generated C++ has no kernel {kernel}")
        parameters, offset = [], 0
        for declaration in _split(signatures[kernel]):
            cxx, name = declaration.rsplit(None, 1)
            layout = resolver.layout(cxx)
            offset = _aligned(offset, layout.alignment)
            parameters.append(Parameter(name, cxx, layout.dtype, offset, layout.pointers))
            offset += layout.dtype.itemsize
        found[kernel] = tuple(parameters)
    return found


def _split(parameters: str) -> list[str]:
    """Split a parameter list at its top-level commas (``TileStatus<value_t>`` holds none, but be safe)."""
    parts, depth, current = [], 0, ""
    for char in parameters:
        depth += char == "<"
        depth -= char == ">"
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return [" ".join(part.split()) for part in parts if part.strip()]


def _aligned(offset: int, alignment: int) -> int:
    return -(-offset // alignment) * alignment


class _Resolver:
    def __init__(self, structs, elements, index):
        self.structs = structs
        self.elements = elements
        self.index = index

    def layout(self, cxx: str) -> _Layout:
        cxx = " ".join(word for word in cxx.replace("*", " * ").split() if word != "const")
        if cxx.endswith("*"):
            return _Layout(POINTER, POINTER.alignment, pointers=(0,))
        if cxx == "index_t":
            return _Layout(self.index, self.index.alignment)
        if cxx in self.elements:
            element = self.elements[cxx]
            return _Layout(element.dtype, element.alignment)
        scalar = scalar_of_cxx(cxx)
        if scalar is not None:
            return _Layout(scalar, scalar.alignment)
        name, _, argument = cxx.partition("<")
        if name in self.structs:
            return self._struct(name, argument.rstrip(">").strip())
        raise ParameterError(f"the generated C++ passes a {cxx!r}, which gpulab cannot lay out")

    def _struct(self, name: str, argument: str) -> _Layout:
        parameter, body = self.structs[name]
        names, formats, offsets, offset, alignment, pointers = [], [], [], 0, 1, []
        for cxx, field in _FIELD.findall(body):
            if parameter:
                cxx = re.sub(rf"\b{parameter}\b", argument, cxx)
            layout = self.layout(cxx)
            offset = _aligned(offset, layout.alignment)
            alignment = max(alignment, layout.alignment)
            pointers += [offset + at for at in layout.pointers]
            for inner, (inner_format, inner_offset) in _flat(layout, field):
                names.append(inner)
                formats.append(inner_format)
                offsets.append(offset + inner_offset)
            offset += layout.dtype.itemsize
        size = _aligned(max(offset, 1), alignment)  # an empty struct takes one byte, as in C++
        dtype = np.dtype({"names": names, "formats": formats, "offsets": offsets, "itemsize": size})
        return _Layout(dtype, alignment, struct=True, pointers=tuple(pointers))


def _flat(layout: _Layout, name: str):
    """``(name, (dtype, offset))`` of a field; a struct's own fields are named ``name.inner``."""
    if not layout.struct:
        yield name, (layout.dtype, 0)
        return
    for inner in layout.dtype.names:
        inner_dtype, inner_offset = layout.dtype.fields[inner][:2]
        yield f"{name}.{inner}", (inner_dtype, inner_offset)

"""Element types: annotation <-> NumPy dtype <-> numba type <-> C++ storage.

An element type is anything NumPy understands as a dtype (``np.float32``,
``"int64"``, a structured dtype) or one of gpulab's short aliases
(``f32``, ``i64``, ``bool_``...). The aliases are the NumPy scalar types
themselves, so they also work as casts inside a kernel (``f32(x)``).
"""

from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import dataclass

import numpy as np

from . import cxx
from .errors import KernelTypeError

bool_ = np.bool_
int8, int16, int32, int64 = np.int8, np.int16, np.int32, np.int64
uint8, uint16, uint32, uint64 = np.uint8, np.uint16, np.uint32, np.uint64
float16, float32, float64 = np.float16, np.float32, np.float64
complex64, complex128 = np.complex64, np.complex128

i8, i16, i32, i64 = int8, int16, int32, int64
u8, u16, u32, u64 = uint8, uint16, uint32, uint64
f16, f32, f64 = float16, float32, float64
c64, c128 = complex64, complex128

ALIASES = {
    "bool": "bool", "bool_": "bool",
    "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
    "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64",
    "f16": "float16", "f32": "float32", "f64": "float64",
    "c64": "complex64", "c128": "complex128",
}

_SCALAR_CXX = {
    "bool": "bool",
    "int8": "signed char", "int16": "short", "int32": "int", "int64": "long long",
    "uint8": "unsigned char", "uint16": "unsigned short",
    "uint32": "unsigned int", "uint64": "unsigned long long",
    "float32": "float", "float64": "double",
}

# Types whose arithmetic is not a plain C++ scalar: the kernel only moves
# them, so a storage struct of the right size and alignment is enough.
_OPAQUE = {"float16": (2, "unsigned short bits;"), "complex64": (8, "float re, im;"),
           "complex128": (16, "double re, im;")}
"""name -> (alignment, members) of the storage struct."""

_PYTHON_TYPES = {bool: "bool", int: "int64", float: "float64", complex: "complex128"}

SCALAR_TYPES = tuple(np.dtype(name).type for name in (*_SCALAR_CXX, *_OPAQUE))
"""The NumPy scalar types of the element types (``np.float32``, ...): casts a kernel may call."""


@dataclass(frozen=True)
class ElementType:
    """One element type as every stage needs it.

    Attributes
    ----------
    dtype : numpy.dtype
        The NumPy dtype (structured for records).
    cxx : str
        The C++ type name used in generated code.
    definition : str
        C++ that defines ``cxx`` (empty for built-in C++ types).
    """

    dtype: np.dtype
    cxx: str
    definition: str = ""

    @property
    def name(self) -> str:
        """Short name: the dtype name, or ``cxx`` for a record."""
        return self.cxx if self.is_record else self.dtype.name

    @property
    def is_record(self) -> bool:
        """Whether this is a structured (record) type."""
        return self.dtype.fields is not None

    @property
    def itemsize(self) -> int:
        """Size in bytes."""
        return self.dtype.itemsize

    @property
    def alignment(self) -> int:
        """Alignment in bytes of the C++ storage (a complex type's ``alignas`` is twice NumPy's)."""
        if self.is_record:
            return _record_alignment(self.dtype)
        return _OPAQUE[self.dtype.name][0] if self.dtype.name in _OPAQUE else self.dtype.alignment

    @property
    def is_integral(self) -> bool:
        """Whether values are integers or booleans (device results must equal the host's)."""
        return self.dtype.kind in "biu"

    @property
    def numba(self):
        """The numba type."""
        import numba

        return numba.from_dtype(self.dtype)

    def __repr__(self) -> str:
        return f"ElementType({self.name})"


def element_type(spec) -> ElementType:
    """Return the :class:`ElementType` that ``spec`` names.

    Parameters
    ----------
    spec : ElementType, numpy.dtype, type or str
        ``np.float32``, ``"float32"``, ``"f32"``, ``float``, a structured
        dtype, or an :class:`ElementType`.

    Raises
    ------
    KernelTypeError
        When ``spec`` names no supported element type.
    """
    if isinstance(spec, ElementType):
        return spec
    if isinstance(spec, type) and spec in _PYTHON_TYPES:
        spec = _PYTHON_TYPES[spec]
    if isinstance(spec, str):
        spec = ALIASES.get(spec, spec)
    try:
        dtype = np.dtype(spec)
    except (TypeError, ValueError, SyntaxError) as exc:  # NumPy reads "01" with ast.literal_eval
        raise KernelTypeError(
            f"{spec!r} is not an element type; use a NumPy dtype such as np.float32, "
            "a name such as 'float32' or a gpulab alias such as gpulab.f32"
        ) from exc
    return _from_dtype(dtype)


@functools.lru_cache(maxsize=None)
def _from_dtype(dtype: np.dtype) -> ElementType:
    if dtype.fields is not None:
        return _record_type(dtype)
    name = dtype.name
    if name in _SCALAR_CXX:
        return ElementType(dtype, _SCALAR_CXX[name])
    if name in _OPAQUE:
        alignment, members = _OPAQUE[name]
        return ElementType(dtype, name, f"struct alignas({alignment}) {name} {{ {members} }};")
    raise KernelTypeError(
        f"dtype {dtype} is not supported on the GPU; use a bool, integer, float "
        "(16/32/64), complex or structured dtype"
    )


def _record_alignment(dtype: np.dtype) -> int:
    if not dtype.isalignedstruct:
        return 1
    return max(_from_dtype(field[0]).alignment for field in dtype.fields.values())


_GENERATED_MEMBER = re.compile(r"(pad|field)\d+|pad_end")
"""Member names the generated structs use themselves: a field of that name is renamed."""


def _record_type(dtype: np.dtype) -> ElementType:
    """A struct with the dtype's size and alignment, fields at their offsets.

    Field names become C++ names only when :func:`gpulab.cxx.identifier` accepts
    them (else ``field<N>``); the struct's name carries a digest of the dtype, so
    two records with the same field names but other layouts never share a name.
    """
    fields = sorted(dtype.fields.items(), key=lambda item: item[1][1])
    names = [f"field{index}" if _GENERATED_MEMBER.fullmatch(field_name) else cxx.identifier(field_name, f"field{index}")
             for index, (field_name, _) in enumerate(fields)]
    readable = "_".join(member for member, (field_name, _) in zip(names, fields) if member == field_name)
    digest = hashlib.sha256(str(np.lib.format.dtype_to_descr(dtype)).encode()).hexdigest()[:8]
    name = f"record_{readable}_{digest}" if readable and len(readable) <= 40 else f"record_{digest}"
    lines = []
    position = 0
    for index, ((field_name, (field_dtype, offset, *_)), member) in enumerate(zip(fields, names)):
        field = _from_dtype(field_dtype)
        if offset > position:
            lines.append(f"    unsigned char pad{index}[{offset - position}];")
        note = f"  // {cxx.comment(field_name)}: {field.name}" if member != field_name else f"  // {field.name}"
        if field.is_record or not dtype.isalignedstruct:
            lines.append(f"    unsigned char {member}[{field.itemsize}];{note}")
        else:
            lines.append(f"    {field.cxx} {member};{note}")
        position = offset + field.itemsize
    if dtype.itemsize > position:
        lines.append(f"    unsigned char pad_end[{dtype.itemsize - position}];")
    alignment = _record_alignment(dtype)
    body = "\n".join(lines)
    definition = (
        f"struct alignas({alignment}) {name} {{  // {dtype.itemsize} bytes, like the NumPy dtype\n"
        f"{body}\n}};\n"
        f"static_assert(sizeof({name}) == {dtype.itemsize}, \"record size\");"
    )
    nested = [
        _from_dtype(f[0]).definition for f in dtype.fields.values() if _from_dtype(f[0]).definition
    ]
    full = "\n".join(dict.fromkeys(nested)) + ("\n" if nested else "") + definition
    return ElementType(dtype, name, full)


def scalar_of_cxx(cxx: str) -> np.dtype | None:
    """The dtype of a built-in C++ scalar type (``"unsigned int"`` -> uint32), or ``None``."""
    for name, scalar in _SCALAR_CXX.items():
        if scalar == cxx:
            return np.dtype(name)
    return None


def cxx_definitions(types) -> str:
    """Return the C++ definitions ``types`` need, each once, in order."""
    return "\n".join(dict.fromkeys(t.definition for t in types if t.definition))

"""BuildSpec: everything that changes the generated code, and its key.

The key holds the primitive (its registry record and template) and its options, the function's code and the
values of its constants, referenced modules and nested kernels, element
and uniform *types*, captured arrays' element types and dimensions, the
target, the template version and the toolchain versions. Never uniform
values, array pointers, sizes, strides or streams.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..captures import ArrayType
from ..kernel import Kernel
from ..mapped import input_kinds
from ..options import BuildOptions
from ..registry import Primitive, primitive
from ..types import ElementType
from .target import Target


ENTRY_LAYOUT = 6
"""The layout of a build's cache entry (:mod:`.serialize`) and of its disassembly's (:mod:`.disassembly`): part
of every key, so that entries of another layout are not read."""


@dataclass(frozen=True)
class MappedSpec:
    """A mapped input as a build compiles it: its function, types, uniforms and captured arrays, and its
    inputs' kinds (``"array"``, ``"iota"`` or a ``MappedSpec``)."""

    kernel: Kernel = field(compare=False)
    args: tuple[ElementType, ...]
    result: ElementType
    uniforms: tuple[tuple[str, ElementType], ...]
    arrays: tuple[tuple[str, ArrayType], ...]
    kinds: tuple

    def document(self) -> dict:
        """What of it changes generated code (part of the key)."""
        return {"kernel": self.kernel.identity, "args": [_dtype_text(t.dtype) for t in self.args],
                "result": _dtype_text(self.result.dtype),
                "uniforms": [[name, _dtype_text(t.dtype)] for name, t in self.uniforms],
                "arrays": [[name, _dtype_text(a.element.dtype), a.ndim] for name, a in self.arrays],
                "kinds": [k if isinstance(k, str) else k.document() for k in self.kinds]}


def mapped_spec(shape) -> MappedSpec:
    """The :class:`MappedSpec` of a :class:`~gpulab.mapped.MappedShape`, with its uniforms' and captured
    arrays' current types."""
    kernel = shape.kernel
    return MappedSpec(kernel, shape.args, shape.result, tuple(zip(kernel.uniforms, kernel.uniform_types())),
                      tuple(zip(kernel.arrays, kernel.array_types())),
                      tuple(k if isinstance(k, str) else mapped_spec(k) for k in shape.kinds))


@dataclass(frozen=True)
class BuildSpec:
    """One build: a primitive around a kernel, for element types and a target."""

    primitive: str
    kernel: Kernel = field(compare=False)
    inputs: tuple[ElementType, ...]
    result: ElementType | None
    uniforms: tuple[tuple[str, ElementType], ...]
    target: Target
    options: BuildOptions
    arrays: tuple[tuple[str, ArrayType], ...] = ()
    mapped: tuple[MappedSpec | None, ...] = ()
    keys: ElementType | None = None  # a keyed primitive's key type

    @property
    def kinds(self) -> tuple:
        """Each input's kind: ``"array"``, ``"iota"`` or its :class:`MappedSpec`."""
        return input_kinds(self.record.input_count(len(self.inputs)), self.options.iota, self.mapped)

    @property
    def record(self) -> Primitive:
        """The primitive's registry record."""
        return primitive(self.primitive)

    @functools.cached_property
    def key(self) -> str:
        """A hex digest of everything that changes the generated code, and of the layout of its cache entry."""
        document = {
            "primitive": [self.primitive, self.record.fingerprint],
            "kernel": self.kernel.identity,
            "inputs": [_dtype_text(t.dtype) for t in self.inputs],
            "result": _dtype_text(self.result.dtype) if self.result else None,
            "uniforms": [[name, _dtype_text(t.dtype)] for name, t in self.uniforms],
            "arrays": [[name, _dtype_text(a.element.dtype), a.ndim] for name, a in self.arrays],
            "mapped": [m.document() if m else None for m in self.mapped],
            **({"keys": _dtype_text(self.keys.dtype)} if self.keys is not None else {}),
            "target": self.target.arch,
            "options": self.options.as_dict(),
            "versions": toolchain_versions(self.options.frontend),
            "entry": ENTRY_LAYOUT,
        }
        text = json.dumps(document, sort_keys=True, default=repr)
        return hashlib.sha256(text.encode()).hexdigest()[:40]


def _dtype_text(dtype: np.dtype) -> str:
    return str(np.lib.format.dtype_to_descr(dtype))


@functools.lru_cache(maxsize=None)
def toolchain_versions(frontend: str = "numba-cuda") -> dict:
    """Versions of everything that generates code with ``frontend`` (part of every key).

    Read from the installed wheels' ``.dist-info`` folder names when NVIDIA's
    wheels provide the tools (fast: no library is loaded, no metadata file
    parsed), else asked from the libraries.
    """
    from . import codegen, frontends

    return {
        "gpulab": [_distribution_version("gpulab") or "source", _source_digest()],
        "templates": codegen.fingerprint(),
        "numba-cuda": _distribution_version("numba-cuda"),  # the host's typing rule, whatever the frontend
        frontend: _distribution_version(frontends.frontends()[frontend].distribution),
        "nvrtc": _distribution_version("nvidia-cuda-nvrtc") or _library_version("nvrtc"),
        "nvjitlink": _distribution_version("nvidia-nvjitlink") or _library_version("link"),
    }


@functools.lru_cache(maxsize=1)
def _source_digest() -> str:
    """A digest of gpulab's Python sources: a changed rule (a type refused, a tile halved) makes new keys where the
    version stays the same (a source checkout, an install from a branch), so no build made by older rules is served."""
    package = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        digest.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def _distribution_version(distribution: str) -> str | None:
    """The version of an installed distribution: from the name of its ``NAME-VERSION.dist-info`` folder
    (what installers write, and what ``importlib.metadata`` finds first on ``sys.path``), or, for any
    other kind of install, from ``importlib.metadata`` (whose import alone costs ~60 ms)."""
    found = _dist_info_versions().get(_normalized(distribution))
    if found is not None:
        return found
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(distribution)
    except PackageNotFoundError:
        return None


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


@functools.lru_cache(maxsize=1)
def _dist_info_versions() -> dict[str, str]:
    """Normalised project name -> version of every ``.dist-info`` folder on ``sys.path`` (the first one wins)."""
    versions: dict[str, str] = {}
    for folder in sys.path:
        try:
            names = os.listdir(folder or ".")
        except OSError:
            continue
        for name in names:
            if name.endswith(".dist-info"):
                project, _, version = name[: -len(".dist-info")].rpartition("-")
                versions.setdefault(_normalized(project), version)
    return versions


def _library_version(module: str) -> str:
    from importlib import import_module

    return ".".join(map(str, import_module(f"{__package__}.{module}").version()))

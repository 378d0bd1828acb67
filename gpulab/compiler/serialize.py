"""Build <-> cache entry (JSON metadata and named byte blobs; no pickle)."""

from __future__ import annotations

import numpy as np

from ..captures import ArrayType
from ..types import element_type
from .build import Build
from .codegen import Geometry
from .disasm import Resources
from .linemap import Disassembly
from .parameters import Parameter
from .spec import BuildOptions
from .target import Target

_TEXTS = ("python_source", "source", "op_ptx", "ptx")


def _descr(dtype: np.dtype) -> object:
    return np.lib.format.dtype_to_descr(dtype)


def _dtype(descr) -> np.dtype:
    descr = [tuple(field) for field in descr] if isinstance(descr, list) else descr
    return np.lib.format.descr_to_dtype(descr)


def _dtype_json(element) -> object:
    return _descr(element.dtype)


def _element(descr):
    return element_type(_dtype(descr))


def _keys_json(keys: dict) -> dict:
    return {str(line): list(found) for line, found in keys.items()}


def _keys(data: dict) -> dict:
    return {int(line): tuple(found) for line, found in data.items()}


def _seconds(value) -> float | None:
    """Seconds (a time stamp or a duration) read from an entry: a number, else unknown (older entries have none)."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def encode(build: Build) -> tuple[dict, dict[str, bytes]]:
    """Return ``(meta, blobs)`` for the cache (the disassembly is an entry of its own)."""
    meta = {
        "key": build.key, "primitive": build.primitive, "name": build.name,
        "target": list(build.target.cc), "options": build.options.as_dict(),
        "inputs": [_dtype_json(t) for t in build.inputs], "result": _dtype_json(build.result),
        "uniforms": [[name, _dtype_json(t)] for name, t in build.uniforms],
        "arrays": [[name, _dtype_json(a.element), a.ndim] for name, a in build.arrays],
        "python_first_line": build.python_first_line, "python_file": build.python_file,
        "resources": {name: r.as_dict() for name, r in build.resources.items()},
        "ptx_keys": _keys_json(build.ptx_keys), "kernels": list(build.kernels),
        "geometry": [build.geometry.block_threads, build.geometry.vec, build.geometry.unroll,
                     build.geometry.scan_items],
        "parameters": {kernel: [[p.name, p.cxx, p.offset, _descr(p.dtype)] for p in parameters]
                       for kernel, parameters in build.parameters.items()},
        "timings": {k: v for k, v in build.timings.items() if k != "disasm"}, "built_at": build.built_at,
    }
    blobs = {name: getattr(build, name).encode() for name in _TEXTS}
    blobs["cubin"] = build.cubin
    return meta, blobs


def decode(meta: dict, blobs: dict[str, bytes]) -> Build:
    """Inverse of :func:`encode`."""
    options = dict(meta["options"], iota=tuple(meta["options"]["iota"]))
    return Build(
        key=meta["key"], primitive=meta["primitive"], name=meta["name"], target=Target(*meta["target"]),
        options=BuildOptions(**options), inputs=tuple(_element(d) for d in meta["inputs"]),
        result=_element(meta["result"]), uniforms=tuple((n, _element(d)) for n, d in meta["uniforms"]),
        arrays=tuple((n, ArrayType(_element(d), ndim)) for n, d, ndim in meta.get("arrays", ())),
        python_first_line=meta["python_first_line"], python_file=meta["python_file"], cubin=blobs["cubin"],
        resources={name: Resources(**r) for name, r in meta["resources"].items()},
        ptx_keys=_keys(meta["ptx_keys"]), kernels=tuple(meta["kernels"]),
        geometry=Geometry(*meta["geometry"]), timings=dict(meta["timings"]),
        parameters={kernel: tuple(Parameter(name, cxx, _dtype(descr), offset) for name, cxx, offset, descr in found)
                    for kernel, found in meta["parameters"].items()},
        built_at=_seconds(meta.get("built_at")),
        **{name: blobs[name].decode() for name in _TEXTS},
    )


def encode_disassembly(found: Disassembly) -> tuple[dict, dict[str, bytes]]:
    """Return ``(meta, blobs)`` for a build's disassembly."""
    offsets = {str(line): offset for line, offset in found.offsets.items()}
    return {"keys": _keys_json(found.keys), "offsets": offsets, "seconds": found.seconds}, {"sass": found.text.encode()}


def decode_disassembly(meta: dict, blobs: dict[str, bytes]) -> Disassembly:
    """Inverse of :func:`encode_disassembly`."""
    offsets = {int(line): offset for line, offset in meta["offsets"].items()}
    return Disassembly(blobs["sass"].decode(), _keys(meta["keys"]), offsets, _seconds(meta.get("seconds")))

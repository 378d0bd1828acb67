"""Build <-> cache entry (JSON metadata and named byte blobs; no pickle).

The entry's layout is part of every build's key (:data:`~.spec.ENTRY_LAYOUT`): a
change here changes that number, so that entries of another layout are not read.
"""

from __future__ import annotations

import numpy as np

from ..captures import ArrayType
from ..options import BuildOptions
from ..types import element_type
from .artifacts import Artifact
from .build import ARTIFACTS, Build
from .codegen import Geometry
from .disasm import Resources
from .linemap import key_map, key_table
from .parameters import Parameter
from .target import Target


def _descr(dtype: np.dtype) -> object:
    return np.lib.format.dtype_to_descr(dtype)


def _dtype(descr) -> np.dtype:
    descr = [tuple(field) for field in descr] if isinstance(descr, list) else descr
    return np.lib.format.descr_to_dtype(descr)


def _dtype_json(element) -> object:
    return _descr(element.dtype)


def _element(descr):
    return element_type(_dtype(descr))


def _seconds(value) -> float | None:
    """Seconds (a time stamp or a duration) read from an entry: a number, else unknown (older entries have none)."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def encode(build: Build) -> tuple[dict, dict[str, bytes]]:
    """Return ``(meta, blobs)`` for the cache (the disassembly is an entry of its own: :mod:`.disassembly`)."""
    ptx_key_table, ptx_key_pairs = key_table(build.ptx_keys)
    meta = {
        "key": build.key, "primitive": build.primitive, "name": build.name,
        "target": list(build.target.cc), "options": build.options.as_dict(),
        "inputs": [_dtype_json(t) for t in build.inputs], "result": _dtype_json(build.result),
        "uniforms": [[name, _dtype_json(t)] for name, t in build.uniforms],
        "arrays": [[name, _dtype_json(a.element), a.ndim] for name, a in build.arrays],
        "python_first_line": build.python_first_line, "python_file": build.python_file,
        "artifacts": {stage: artifact.name for stage, artifact in build.artifacts.items()},
        "resources": {name: r.as_dict() for name, r in build.resources.items()},
        "ptx_key_table": ptx_key_table, "kernels": list(build.kernels),
        "geometry": [build.geometry.block_threads, build.geometry.vec, build.geometry.unroll,
                     build.geometry.scan_items],
        "parameters": {kernel: [[p.name, p.cxx, p.offset, _descr(p.dtype), list(p.pointers)] for p in parameters]
                       for kernel, parameters in build.parameters.items()},
        "register_cap": build.register_cap, "timings": build.timings, "built_at": build.built_at,
    }
    blobs = {f"artifact-{stage}": artifact.data for stage, artifact in build.artifacts.items()}
    blobs["python_source"] = build.python_source.encode()
    blobs["ptx_keys"] = ptx_key_pairs
    return meta, blobs


def decode(meta: dict, blobs: dict[str, bytes]) -> Build:
    """Inverse of :func:`encode`."""
    return Build(
        key=meta["key"], primitive=meta["primitive"], name=meta["name"], target=Target(*meta["target"]),
        options=BuildOptions(**meta["options"]), inputs=tuple(_element(d) for d in meta["inputs"]),
        result=_element(meta["result"]), uniforms=tuple((n, _element(d)) for n, d in meta["uniforms"]),
        arrays=tuple((n, ArrayType(_element(d), ndim)) for n, d, ndim in meta.get("arrays", ())),
        python_source=blobs["python_source"].decode(), python_first_line=meta["python_first_line"],
        python_file=meta["python_file"],
        artifacts={stage: Artifact(kind, blobs[f"artifact-{stage}"], meta["artifacts"][stage])
                   for stage, kind in ARTIFACTS.items()},
        resources={name: Resources(**r) for name, r in meta["resources"].items()},
        ptx_keys=key_map(meta["ptx_key_table"], blobs["ptx_keys"]), kernels=tuple(meta["kernels"]),
        geometry=Geometry(*meta["geometry"]), register_cap=meta["register_cap"], timings=dict(meta["timings"]),
        parameters={kernel: tuple(Parameter(name, cxx, _dtype(descr), offset, tuple(pointers))
                                  for name, cxx, offset, descr, pointers in found)
                    for kernel, found in meta["parameters"].items()},
        built_at=_seconds(meta.get("built_at")),
    )

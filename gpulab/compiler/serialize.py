"""Build <-> cache entry (JSON metadata and named byte blobs; no pickle)."""

from __future__ import annotations

import numpy as np

from ..captures import ArrayType
from ..options import BuildOptions
from ..types import element_type
from .build import Build
from .codegen import Geometry
from .disasm import Resources
from .linemap import Disassembly
from .parameters import Parameter
from .target import Target

_TEXTS = ("python_source", "source", "op_ptx", "ptx")
_PAIR = np.dtype("<i8")
ENTRY_LAYOUT = 5
"""The layout of a build's cache entry and what its disassembly holds (part of its key, so that entries of
another layout are not read)."""


def _descr(dtype: np.dtype) -> object:
    return np.lib.format.dtype_to_descr(dtype)


def _dtype(descr) -> np.dtype:
    descr = [tuple(field) for field in descr] if isinstance(descr, list) else descr
    return np.lib.format.descr_to_dtype(descr)


def _dtype_json(element) -> object:
    return _descr(element.dtype)


def _element(descr):
    return element_type(_dtype(descr))


def _key_table(keys: dict[int, tuple[str, ...]]) -> tuple[list[list[str]], bytes]:
    """A line map as its distinct key tuples (JSON) and its ``(line, row of the table)`` pairs (a blob).

    A map has one entry per PTX or SASS line but few distinct tuples, and a
    blob is not parsed, nested or walked when the entry is read: as JSON
    objects, the maps made three quarters of a disk hit's time.
    """
    rows: dict[tuple[str, ...], int] = {}
    pairs = [(line, rows.setdefault(found, len(rows))) for line, found in keys.items()]
    return [list(found) for found in rows], _pairs_blob(pairs)


def _key_map(table: list, blob: bytes) -> dict[int, tuple[str, ...]]:
    """Inverse of :func:`_key_table`."""
    if not all(isinstance(found, list) for found in table):
        raise ValueError("a key table row is not a list")
    rows = [tuple(found) for found in table]
    lines, at = _pairs(blob)
    if at.size and (at.min() < 0 or at.max() >= len(rows)):
        raise ValueError(f"a line map names a row outside its table of {len(rows)}")
    return dict(zip(lines.tolist(), map(rows.__getitem__, at.tolist())))


def _pairs_blob(pairs) -> bytes:
    return np.array(pairs, dtype=_PAIR).reshape(-1, 2).tobytes()


def _pairs(blob: bytes) -> tuple[np.ndarray, np.ndarray]:
    """The two columns of a blob of integer pairs."""
    if len(blob) % (2 * _PAIR.itemsize):
        raise ValueError(f"a blob of integer pairs has {len(blob)} bytes")
    pairs = np.frombuffer(blob, dtype=_PAIR).reshape(-1, 2)
    return pairs[:, 0], pairs[:, 1]


def _seconds(value) -> float | None:
    """Seconds (a time stamp or a duration) read from an entry: a number, else unknown (older entries have none)."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def encode(build: Build) -> tuple[dict, dict[str, bytes]]:
    """Return ``(meta, blobs)`` for the cache (the disassembly is an entry of its own)."""
    ptx_key_table, ptx_key_pairs = _key_table(build.ptx_keys)
    meta = {
        "key": build.key, "primitive": build.primitive, "name": build.name,
        "target": list(build.target.cc), "options": build.options.as_dict(),
        "inputs": [_dtype_json(t) for t in build.inputs], "result": _dtype_json(build.result),
        "uniforms": [[name, _dtype_json(t)] for name, t in build.uniforms],
        "arrays": [[name, _dtype_json(a.element), a.ndim] for name, a in build.arrays],
        "python_first_line": build.python_first_line, "python_file": build.python_file,
        "resources": {name: r.as_dict() for name, r in build.resources.items()},
        "ptx_key_table": ptx_key_table, "kernels": list(build.kernels),
        "geometry": [build.geometry.block_threads, build.geometry.vec, build.geometry.unroll,
                     build.geometry.scan_items],
        "parameters": {kernel: [[p.name, p.cxx, p.offset, _descr(p.dtype), list(p.pointers)] for p in parameters]
                       for kernel, parameters in build.parameters.items()},
        "timings": {k: v for k, v in build.timings.items() if k != "disasm"}, "built_at": build.built_at,
    }
    blobs = {name: getattr(build, name).encode() for name in _TEXTS}
    blobs["cubin"] = build.cubin
    blobs["ptx_keys"] = ptx_key_pairs
    return meta, blobs


def decode(meta: dict, blobs: dict[str, bytes]) -> Build:
    """Inverse of :func:`encode`."""
    return Build(
        key=meta["key"], primitive=meta["primitive"], name=meta["name"], target=Target(*meta["target"]),
        options=BuildOptions(**meta["options"]), inputs=tuple(_element(d) for d in meta["inputs"]),
        result=_element(meta["result"]), uniforms=tuple((n, _element(d)) for n, d in meta["uniforms"]),
        arrays=tuple((n, ArrayType(_element(d), ndim)) for n, d, ndim in meta.get("arrays", ())),
        python_first_line=meta["python_first_line"], python_file=meta["python_file"], cubin=blobs["cubin"],
        resources={name: Resources(**r) for name, r in meta["resources"].items()},
        ptx_keys=_key_map(meta["ptx_key_table"], blobs["ptx_keys"]), kernels=tuple(meta["kernels"]),
        geometry=Geometry(*meta["geometry"]), timings=dict(meta["timings"]),
        parameters={kernel: tuple(Parameter(name, cxx, _dtype(descr), offset, tuple(pointers))
                                  for name, cxx, offset, descr, pointers in found)
                    for kernel, found in meta["parameters"].items()},
        built_at=_seconds(meta.get("built_at")),
        **{name: blobs[name].decode() for name in _TEXTS},
    )


def encode_disassembly(found: Disassembly) -> tuple[dict, dict[str, bytes]]:
    """Return ``(meta, blobs)`` for a build's disassembly."""
    table, pairs = _key_table(found.keys)
    blobs = {"sass": found.text.encode(), "keys": pairs, "offsets": _pairs_blob(list(found.offsets.items()))}
    return {"key_table": table, "seconds": found.seconds}, blobs


def decode_disassembly(meta: dict, blobs: dict[str, bytes]) -> Disassembly:
    """Inverse of :func:`encode_disassembly`."""
    lines, offsets = _pairs(blobs["offsets"])
    return Disassembly(blobs["sass"].decode(), _key_map(meta["key_table"], blobs["keys"]),
                       dict(zip(lines.tolist(), offsets.tolist())), _seconds(meta.get("seconds")))

"""The entry file format: pack one entry into bytes, and verify and parse such bytes.

An entry is ``(meta, blobs)``: ``meta`` is a JSON-serialisable dict with
string keys, ``blobs`` maps names (``"cubin"``, ``"sass"``, ...) to bytes.
One file ``<key>.gpulab`` holds one entry; all integers are big-endian::

    offset  size  field
    0       8     magic   b"\\x89GPULAB\\n"
    8       2     format version (uint16, currently 1)
    10      4     header length H (uint32)
    14      32    sha256 of everything after this prelude (header + blobs)
    46      H     JSON header, UTF-8:
                  {"key": str, "meta": {...},
                   "blobs": [{"name": str, "size": int}, ...]}
    46+H    ...   the blobs, concatenated in header order

The sha256 detects corruption (a truncated write, a flipped bit); it proves
nothing about who wrote the file: :mod:`gpulab.cache.trust` decides that.
Reading is bounded, so that a file with a valid checksum but a hostile
shape (huge, deeply nested or wrongly typed) is refused with
:class:`BadEntry` before anything is built from it.
"""

from __future__ import annotations

import hashlib
import json
import re
import struct
from typing import Any

import numpy as np

Meta = dict[str, Any]
Blobs = dict[str, bytes]
Entry = tuple[Meta, Blobs]

SUFFIX = ".gpulab"
MAGIC = b"\x89GPULAB\n"
FORMAT_VERSION = 1
MAX_ENTRY_BYTES = 256 * 2**20
"""The largest entry file read (a build's cubin and texts are a few MiB at most)."""
MAX_HEADER_BYTES = 16 * 2**20
MAX_DEPTH = 32
"""The deepest nesting of JSON arrays and objects a header may have."""
MAX_BLOBS = 64

_PRELUDE = struct.Struct(">8sHI32s")
_KEY = re.compile(r"[0-9A-Za-z_-]{1,128}")
_JSON_STRING = re.compile(rb'"[^"]*"')
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_OPENERS = np.frombuffer(b"[{", np.uint8)


class BadEntry(Exception):
    """An entry file failed verification; the message says why."""


def check_key(key: str) -> None:
    """Reject keys that are not safe file-name stems.

    Raises
    ------
    ValueError
        If ``key`` is not 1-128 characters of ``[0-9A-Za-z_-]``.
    """
    if not isinstance(key, str) or not _KEY.fullmatch(key):
        raise ValueError(f"cache key must be 1-128 characters of [0-9A-Za-z_-], got {key!r}")


def pack(key: str, meta: Meta, blobs: Blobs) -> bytes:
    """Serialise one entry to the bytes of an entry file.

    Parameters
    ----------
    key : str
        The cache key, stored in the header and checked on read.
    meta : dict
        JSON-serialisable metadata with string keys.
    blobs : dict of str to bytes-like
        Named binary payloads.

    Returns
    -------
    bytes
        Prelude, JSON header and blobs (see the module docstring).

    Raises
    ------
    TypeError
        If ``meta`` is not a dict, a blob name is not a string, or a blob is not
        bytes-like; or if ``meta`` is not JSON-serialisable.
    """
    if not isinstance(meta, dict):
        raise TypeError(f"entry meta must be a dict, got {type(meta).__name__}")
    if not all(isinstance(name, str) for name in blobs):
        raise TypeError("entry blob names must be strings")
    datas = [memoryview(data).tobytes() for data in blobs.values()]
    listing = [{"name": name, "size": len(data)} for name, data in zip(blobs, datas)]
    header = json.dumps({"key": key, "meta": meta, "blobs": listing},
                        separators=(",", ":"), allow_nan=False).encode()
    digest = hashlib.sha256(header)
    for data in datas:
        digest.update(data)
    return b"".join([_PRELUDE.pack(MAGIC, FORMAT_VERSION, len(header), digest.digest()), header, *datas])


def unpack(data: bytes, key: str) -> Entry:
    """Verify and parse the bytes of an entry file.

    Parameters
    ----------
    data : bytes
        The whole file.
    key : str
        The key the file is expected to hold.

    Returns
    -------
    tuple of (dict, dict of str to bytes)
        The entry's ``meta`` and ``blobs``.

    Raises
    ------
    BadEntry
        If the magic, version, lengths, checksum, header shape or key do not
        check out.
    """
    if len(data) < _PRELUDE.size:
        raise BadEntry("truncated (shorter than the fixed prelude)")
    if len(data) > MAX_ENTRY_BYTES:
        raise BadEntry(f"{len(data)} bytes, more than any entry ({MAX_ENTRY_BYTES})")
    magic, version, header_len, digest = _PRELUDE.unpack_from(data)
    if magic != MAGIC:
        raise BadEntry("not a gpulab cache file (bad magic bytes)")
    if version != FORMAT_VERSION:
        raise BadEntry(f"format version {version}, this gpulab reads version {FORMAT_VERSION}")
    body = memoryview(data)[_PRELUDE.size:]
    if header_len > len(body):
        raise BadEntry("truncated (header cut short)")
    if header_len > MAX_HEADER_BYTES:
        raise BadEntry(f"a {header_len}-byte header, more than any entry's ({MAX_HEADER_BYTES})")
    if hashlib.sha256(body).digest() != digest:
        raise BadEntry("sha256 mismatch (corrupt or truncated)")
    meta, sizes = _parse_header(bytes(body[:header_len]), key)
    return meta, _split_blobs(body[header_len:], sizes)


def _parse_header(raw: bytes, key: str) -> tuple[Meta, list[tuple[str, int]]]:
    """Parse the JSON header and check that it has exactly the expected shape and ``key``.

    Returns
    -------
    tuple of (dict, list of (str, int))
        The entry's ``meta`` and its blob names and sizes, in payload order.

    Raises
    ------
    BadEntry
        If the header is too deep, not JSON, not the expected shape, or holds
        another key.
    """
    depth = json_depth(raw)
    if depth > MAX_DEPTH:
        raise BadEntry(f"header nested {depth} deep, more than {MAX_DEPTH}")
    try:
        header = json.loads(raw, parse_constant=_refuse_constant)
    except (ValueError, RecursionError) as exc:
        raise BadEntry(f"unreadable header ({exc})") from None
    if not isinstance(header, dict) or header.keys() != {"key", "meta", "blobs"}:
        raise BadEntry("malformed header (expected exactly the fields key, meta and blobs)")
    if header["key"] != key:
        raise BadEntry(f"holds key {header['key']!r}")
    meta, listing = header["meta"], header["blobs"]
    if not isinstance(meta, dict) or not isinstance(listing, list) or len(listing) > MAX_BLOBS:
        raise BadEntry("malformed header (meta must be an object, blobs a short list)")
    if not all(isinstance(blob, dict) and blob.keys() == {"name", "size"} and isinstance(blob["name"], str)
               and type(blob["size"]) is int and blob["size"] >= 0 for blob in listing):
        raise BadEntry("malformed header (each blob needs a string name and a size >= 0)")
    sizes = [(blob["name"], blob["size"]) for blob in listing]
    if len({name for name, _ in sizes}) != len(sizes):
        raise BadEntry("malformed header (two blobs of one name)")
    return meta, sizes


def json_depth(raw: bytes) -> int:
    """Return how deeply arrays and objects nest in the JSON text ``raw``, without parsing it.

    Escapes are dropped first (``\\\\`` then ``\\"``), so every string is a
    plain ``"..."`` run that one linear regex removes; the brackets left are
    counted with numpy. Unbalanced text gives some number: the parser
    refuses such text anyway.
    """
    unescaped = raw.replace(b"\\\\", b"").replace(b'\\"', b"")
    brackets = np.frombuffer(_JSON_STRING.sub(b"", unescaped).translate(None, _NOT_BRACKETS), np.uint8)
    if not brackets.size:
        return 0
    steps = np.where(np.isin(brackets, _OPENERS), 1, -1)
    return int(np.cumsum(steps).max())


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _split_blobs(payload: memoryview, sizes: list[tuple[str, int]]) -> Blobs:
    """Cut ``payload`` into the named blobs listed in ``sizes``.

    Raises
    ------
    BadEntry
        If the sizes do not add up to the payload length.
    """
    if sum(size for _, size in sizes) != len(payload):
        raise BadEntry("blob sizes do not add up to the payload length")
    blobs, offset = {}, 0
    for name, size in sizes:
        blobs[name] = payload[offset:offset + size].tobytes()
        offset += size
    return blobs

"""Build cache: an in-memory dict in front of a directory of entry files.

The cache stores *entries*, not build objects. An entry is ``(meta, blobs)``:
``meta`` is a JSON-serialisable dict with string keys, ``blobs`` maps names
(``"cubin"``, ``"sass"``, ...) to byte strings. Callers convert their objects
to and from entries with the ``encode``/``decode`` functions they pass to
:meth:`BuildCache.get_or_build`.

Entry file format (one file ``<key>.gpulab`` per entry, all integers big-endian)::

    offset  size  field
    0       8     magic   b"\\x89GPULAB\\n"
    8       2     format version (uint16, currently 1)
    10      4     header length H (uint32)
    14      32    sha256 of everything after this prelude (header + blobs)
    46      H     JSON header, UTF-8:
                  {"key": str, "meta": {...},
                   "blobs": [{"name": str, "size": int}, ...]}
    46+H    ...   the blobs, concatenated in header order

Files are written to a temporary file in the cache directory and renamed into
place, so readers (other threads or processes) see either the old or the new
entry, never a half-written one. Every read checks magic, version, lengths,
checksum and key; a file that fails is reported with one :class:`CacheWarning`
and rebuilt.
"""

from __future__ import annotations

import contextlib
import hashlib
import html
import json
import os
import re
import struct
import tempfile
import threading
import warnings
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, TypeVar

from .errors import CacheWarning

__all__ = [
    "BuildCache",
    "CacheInfo",
    "CacheWarning",
    "cache_info",
    "clear_cache",
    "default_cache",
]

T = TypeVar("T")
Meta = dict[str, Any]
Blobs = dict[str, bytes]
Entry = tuple[Meta, Blobs]

ENV_DIR = "GPULAB_CACHE_DIR"
ENV_MAX_BYTES = "GPULAB_CACHE_MAX_BYTES"
DEFAULT_MAX_BYTES = 512 * 2**20
SUFFIX = ".gpulab"
MAGIC = b"\x89GPULAB\n"
FORMAT_VERSION = 1

_PRELUDE = struct.Struct(">8sHI32s")
_KEY = re.compile(r"[0-9A-Za-z_-]{1,128}")
_TMP_PREFIX = ".tmp-"
_MISSING = object()


class _BadEntry(Exception):
    """An entry file failed verification; the message says why."""


def _warn(message: str) -> None:
    """Issue a :class:`CacheWarning` with ``message``."""
    warnings.warn(message, CacheWarning, stacklevel=2)


# ---------------------------------------------------------------- environment


def _directory_from_env() -> Path:
    """Return the cache directory named by the environment.

    Returns
    -------
    Path
        ``$GPULAB_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/gpulab``, else
        ``~/.cache/gpulab``.
    """
    explicit = os.environ.get(ENV_DIR)
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "gpulab"


def _max_bytes_from_env() -> int:
    """Return ``$GPULAB_CACHE_MAX_BYTES``, or the default when unset or invalid.

    Returns
    -------
    int
        The disk size bound in bytes. An invalid value is reported with a
        :class:`CacheWarning` and replaced by :data:`DEFAULT_MAX_BYTES`.
    """
    raw = os.environ.get(ENV_MAX_BYTES, "").strip()
    if not raw:
        return DEFAULT_MAX_BYTES
    try:
        return _check_max_bytes(int(raw))
    except ValueError:
        _warn(f"ignoring {ENV_MAX_BYTES}={raw!r}: expected a whole number of bytes >= 0; "
              f"using {_format_bytes(DEFAULT_MAX_BYTES)}")
        return DEFAULT_MAX_BYTES


def _check_max_bytes(max_bytes: int) -> int:
    """Return ``max_bytes`` if it is a valid size bound.

    Raises
    ------
    ValueError
        If ``max_bytes`` is negative.
    """
    if max_bytes < 0:
        raise ValueError(f"max_bytes must be >= 0, got {max_bytes}")
    return max_bytes


def _check_key(key: str) -> None:
    """Reject keys that are not safe file-name stems.

    Raises
    ------
    ValueError
        If ``key`` is not 1-128 characters of ``[0-9A-Za-z_-]``.
    """
    if not isinstance(key, str) or not _KEY.fullmatch(key):
        raise ValueError(f"cache key must be 1-128 characters of [0-9A-Za-z_-], got {key!r}")


# ---------------------------------------------------------------- file format


def _pack(key: str, meta: Meta, blobs: Blobs) -> bytes:
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


def _unpack(data: bytes, key: str) -> Entry:
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
    _BadEntry
        If the magic, version, lengths, checksum or key do not check out.
    """
    if len(data) < _PRELUDE.size:
        raise _BadEntry("truncated (shorter than the fixed prelude)")
    magic, version, header_len, digest = _PRELUDE.unpack_from(data)
    if magic != MAGIC:
        raise _BadEntry("not a gpulab cache file (bad magic bytes)")
    if version != FORMAT_VERSION:
        raise _BadEntry(f"format version {version}, this gpulab reads version {FORMAT_VERSION}")
    body = memoryview(data)[_PRELUDE.size:]
    if header_len > len(body):
        raise _BadEntry("truncated (header cut short)")
    if hashlib.sha256(body).digest() != digest:
        raise _BadEntry("sha256 mismatch (corrupt or truncated)")
    meta, sizes = _parse_header(body[:header_len], key)
    return meta, _split_blobs(body[header_len:], sizes)


def _parse_header(raw: memoryview, key: str) -> tuple[Meta, list[tuple[str, int]]]:
    """Parse the JSON header and check that it describes ``key``.

    Returns
    -------
    tuple of (dict, list of (str, int))
        The entry's ``meta`` and its blob names and sizes, in payload order.

    Raises
    ------
    _BadEntry
        If the header is not the expected JSON shape or holds another key.
    """
    try:
        header = json.loads(bytes(raw))
        stored_key, meta = header["key"], header["meta"]
        sizes = [(blob["name"], blob["size"]) for blob in header["blobs"]]
    except (ValueError, TypeError, KeyError) as exc:
        raise _BadEntry(f"unreadable header ({exc})") from None
    if stored_key != key:
        raise _BadEntry(f"holds key {stored_key!r}")
    if not isinstance(meta, dict) or not all(
            isinstance(name, str) and isinstance(size, int) and size >= 0 for name, size in sizes):
        raise _BadEntry("malformed header")
    return meta, sizes


def _split_blobs(payload: memoryview, sizes: list[tuple[str, int]]) -> Blobs:
    """Cut ``payload`` into the named blobs listed in ``sizes``.

    Raises
    ------
    _BadEntry
        If the sizes do not add up to the payload length.
    """
    if sum(size for _, size in sizes) != len(payload):
        raise _BadEntry("blob sizes do not add up to the payload length")
    blobs, offset = {}, 0
    for name, size in sizes:
        blobs[name] = payload[offset:offset + size].tobytes()
        offset += size
    return blobs


# ---------------------------------------------------------------- file system


def _write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` via a temporary file in the same directory and a rename.

    Raises
    ------
    OSError
        If the temporary file cannot be created, written or renamed.
    """
    fd, tmp = tempfile.mkstemp(prefix=_TMP_PREFIX, suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
        os.replace(tmp, path)
    except BaseException:
        _unlink(Path(tmp))
        raise


def _unlink(path: Path) -> None:
    """Remove ``path``, ignoring a file that is already gone or cannot be removed."""
    with contextlib.suppress(OSError):
        path.unlink()


def _touch(path: Path) -> None:
    """Mark ``path`` as just used (atime and mtime = now), if the file system allows it."""
    with contextlib.suppress(OSError):
        os.utime(path)


def _entry_files(directory: Path) -> list[tuple[int, int, Path]]:
    """List the entry files in ``directory``.

    Returns
    -------
    list of (int, int, Path)
        ``(mtime_ns, size, path)`` per file named ``*.gpulab``; other files
        (temporary or unrelated) and files that vanish meanwhile are skipped.
        Empty if the directory cannot be listed.
    """
    try:
        with os.scandir(directory) as listing:
            items = [item for item in listing if item.name.endswith(SUFFIX)]
    except OSError:
        return []
    files = []
    for item in items:
        try:
            if item.is_file():
                stat = item.stat()
                files.append((stat.st_mtime_ns, stat.st_size, Path(item.path)))
        except OSError:
            continue
    return files


def _format_bytes(count: int) -> str:
    """Return ``count`` bytes as a short human-readable string (``"1.5 MiB"``)."""
    if count < 1024:
        return f"{count} B"
    size = count / 1024
    for unit in ("KiB", "MiB"):
        if size < 1024:
            return f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"


# ---------------------------------------------------------------- info


@dataclass(frozen=True)
class CacheInfo:
    """A snapshot of a :class:`BuildCache`.

    Attributes
    ----------
    directory : Path
        The cache directory.
    disk_entries, disk_bytes : int
        Entry files in the directory and their total size.
    memory_entries : int
        Values held in memory by this process.
    hits : int
        Lookups answered from memory.
    misses : int
        Lookups not in memory (answered from disk, by a build, or by waiting
        for another thread's build of the same key).
    disk_hits : int
        Misses answered from disk.
    builds : int
        Calls of a builder (including ones that raised).
    max_bytes : int
        The disk size bound.
    writable : bool
        Whether new entries are written to disk; ``False`` means memory only.
    """

    directory: Path
    disk_entries: int
    disk_bytes: int
    memory_entries: int
    hits: int
    misses: int
    disk_hits: int
    builds: int
    max_bytes: int
    writable: bool

    def _rows(self) -> list[tuple[str, str]]:
        """Return ``(label, value)`` pairs shared by the text and HTML views."""
        state = "" if self.writable else " (not writable: memory only)"
        return [
            ("directory", f"{self.directory}{state}"),
            ("on disk", f"{self.disk_entries} entries, {_format_bytes(self.disk_bytes)} "
                        f"of {_format_bytes(self.max_bytes)}"),
            ("in memory", f"{self.memory_entries} entries"),
            ("lookups", f"{self.hits} hits, {self.misses} misses "
                        f"({self.disk_hits} from disk, {self.builds} builds)"),
        ]

    def __str__(self) -> str:
        """Return an aligned multi-line summary."""
        rows = self._rows()
        width = max(len(label) for label, _ in rows)
        return "\n".join(f"{label:<{width}}  {value}" for label, value in rows)

    def _repr_html_(self) -> str:
        """Return the summary as an HTML table for Jupyter."""
        cells = "".join(
            f"<tr><th style='text-align:left'>{html.escape(label)}</th>"
            f"<td style='text-align:left'>{html.escape(value)}</td></tr>"
            for label, value in self._rows())
        return f"<table class='gpulab-cache-info'><caption>gpulab build cache</caption>{cells}</table>"


# ---------------------------------------------------------------- cache


class BuildCache:
    """Two-level cache of built values: memory first, then entry files on disk.

    Parameters
    ----------
    directory : str or os.PathLike, optional
        Where entry files live. Default: ``$GPULAB_CACHE_DIR``, else
        ``$XDG_CACHE_HOME/gpulab``, else ``~/.cache/gpulab``. Created with mode
        0o700 if missing; if it cannot be created or written, the cache keeps
        values in memory only and says so with one :class:`CacheWarning`.
    max_bytes : int, optional
        Bound on the total size of entry files; after each write the least
        recently used files (oldest mtime; a disk hit refreshes it) are removed
        until the total is within the bound. Default:
        ``$GPULAB_CACHE_MAX_BYTES``, else 512 MiB.

    Notes
    -----
    Thread-safe. A memory hit is one dict lookup without a lock; concurrent
    cold lookups of one key run a single build whose result (or exception)
    every caller receives. Several processes may share a directory: writes are
    atomic renames, so the last writer of a key wins. The ``hits`` counter is
    updated without a lock and may undercount under heavy contention.
    """

    def __init__(self, directory: str | os.PathLike[str] | None = None, *, max_bytes: int | None = None):
        self._directory = _directory_from_env() if directory is None else Path(directory).expanduser()
        self._max_bytes = _max_bytes_from_env() if max_bytes is None else _check_max_bytes(max_bytes)
        self._memory: dict[str, Any] = {}
        self._inflight: dict[str, tuple[Future, int]] = {}
        self._lock = threading.Lock()
        self._disk_lock = threading.Lock()
        self._hits = self._misses = self._disk_hits = self._builds = 0
        self._has_directory = self._make_directory()
        self._writable = self._has_directory and self._check_writable()

    def _make_directory(self) -> bool:
        """Create the cache directory; warn and return ``False`` if that fails."""
        try:
            self._directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            _warn(f"cannot create cache directory {self._directory} ({exc}); caching in memory only")
            return False
        return True

    def _check_writable(self) -> bool:
        """Return whether the directory looks writable; warn if it does not."""
        if os.access(self._directory, os.W_OK | os.X_OK):
            return True
        _warn(f"cache directory {self._directory} is not writable; caching in memory only")
        return False

    def get_or_build(self, key: str, build: Callable[[], T], *,
                     encode: Callable[[T], Entry], decode: Callable[[Meta, Blobs], T]) -> T:
        """Return the value cached under ``key``, building and storing it if needed.

        Parameters
        ----------
        key : str
            The cache key: 1-128 characters of ``[0-9A-Za-z_-]`` (a hex digest).
        build : callable
            Called with no arguments on a miss in memory and on disk. If it
            raises, the exception reaches every caller waiting for this key
            and nothing is cached; the next call builds again.
        encode : callable
            Turns a built value into ``(meta, blobs)`` for the disk.
        decode : callable
            Turns ``(meta, blobs)`` read from disk back into a value. If it
            raises, the entry is treated as stale: one :class:`CacheWarning`,
            then a rebuild that overwrites it.

        Returns
        -------
        T
            The same object for every call with ``key`` in this process, until
            the memory is cleared.

        Raises
        ------
        ValueError
            If ``key`` is not a valid key.
        RuntimeError
            If ``build`` asks for its own key (a recursive build).
        """
        value = self._memory.get(key, _MISSING)
        if value is not _MISSING:
            self._hits += 1
            return value
        return self._get_cold(key, build, encode, decode)

    def _get_cold(self, key: str, build: Callable[[], T],
                  encode: Callable[[T], Entry], decode: Callable[[Meta, Blobs], T]) -> T:
        """Answer a memory miss: wait for a build in flight, or lead a new one."""
        _check_key(key)
        with self._lock:
            value = self._memory.get(key, _MISSING)
            if value is not _MISSING:
                self._hits += 1
                return value
            self._misses += 1
            flight = self._inflight.get(key)
            leader = flight is None
            if leader:
                flight = self._inflight[key] = (Future(), threading.get_ident())
        if not leader:
            return self._wait(key, *flight)
        return self._lead(key, flight[0], build, encode, decode)

    @staticmethod
    def _wait(key: str, future: Future, leader_thread: int) -> Any:
        """Return the result (or raise the exception) of another thread's build of ``key``."""
        if leader_thread == threading.get_ident():
            raise RuntimeError(f"the build for cache key {key} asked for its own result (recursive build)")
        return future.result()

    def _lead(self, key: str, future: Future, build: Callable[[], T],
              encode: Callable[[T], Entry], decode: Callable[[Meta, Blobs], T]) -> T:
        """Produce the value of ``key`` and hand it (or the exception) to the waiters."""
        try:
            value = self._produce(key, build, encode, decode)
        except BaseException as exc:
            self._land(key, _MISSING)
            future.set_exception(exc)
            raise
        self._land(key, value)
        future.set_result(value)
        return value

    def _land(self, key: str, value: Any) -> None:
        """End the flight of ``key``, keeping ``value`` in memory unless it is missing."""
        with self._lock:
            if value is not _MISSING:
                self._memory[key] = value
            del self._inflight[key]

    def _produce(self, key: str, build: Callable[[], T],
                 encode: Callable[[T], Entry], decode: Callable[[Meta, Blobs], T]) -> T:
        """Load ``key`` from disk, or build it and write it to disk."""
        value = self._load(key, decode)
        with self._lock:
            if value is not _MISSING:
                self._disk_hits += 1
                return value
            self._builds += 1
        value = build()
        if self._writable:
            self._store(key, *encode(value))
        return value

    def _path(self, key: str) -> Path:
        """Return the entry file of ``key``."""
        return self._directory / f"{key}{SUFFIX}"

    def _load(self, key: str, decode: Callable[[Meta, Blobs], T]) -> Any:
        """Return the decoded disk entry of ``key``, or ``_MISSING``; warn about bad files."""
        if not self._has_directory:
            return _MISSING
        path = self._path(key)
        try:
            meta, blobs = _unpack(path.read_bytes(), key)
        except (FileNotFoundError, NotADirectoryError):
            return _MISSING
        except (OSError, _BadEntry) as exc:
            _warn(f"ignoring cache entry {path}: {exc}; rebuilding it")
            return _MISSING
        try:
            value = decode(meta, blobs)
        except Exception as exc:  # a stale entry from another gpulab version: rebuild it
            _warn(f"ignoring cache entry {path}: decode failed ({type(exc).__name__}: {exc}); rebuilding it")
            return _MISSING
        _touch(path)
        return value

    def _store(self, key: str, meta: Meta, blobs: Blobs) -> None:
        """Write the entry of ``key`` to disk, then evict down to the size bound."""
        data = _pack(key, meta, blobs)
        try:
            _write_atomic(self._path(key), data)
        except OSError as exc:
            self._stop_writing(exc)
            return
        self._evict()

    def _stop_writing(self, exc: OSError) -> None:
        """Switch to memory-only after a failed write, warning once."""
        with self._disk_lock:
            was_writable, self._writable = self._writable, False
        if was_writable:
            _warn(f"cannot write to cache directory {self._directory} ({exc}); "
                  "caching in memory only from now on")

    def _evict(self) -> None:
        """Remove least recently used entry files until their total is within ``max_bytes``."""
        with self._disk_lock:
            files = sorted(_entry_files(self._directory))
            total = sum(size for _, size, _ in files)
            for _, size, path in files:
                if total <= self._max_bytes:
                    break
                _unlink(path)
                total -= size

    def info(self) -> CacheInfo:
        """Return a snapshot of the cache's contents and counters.

        Returns
        -------
        CacheInfo
        """
        sizes = [size for _, size, _ in _entry_files(self._directory)]
        with self._lock:
            return CacheInfo(
                directory=self._directory, disk_entries=len(sizes), disk_bytes=sum(sizes),
                memory_entries=len(self._memory), hits=self._hits, misses=self._misses,
                disk_hits=self._disk_hits, builds=self._builds, max_bytes=self._max_bytes,
                writable=self._writable)

    def clear(self, memory: bool = True, disk: bool = True) -> None:
        """Forget cached values; counters are kept.

        Parameters
        ----------
        memory : bool, default True
            Drop the values held in memory by this process.
        disk : bool, default True
            Remove the entry files (other files in the directory are left alone).
        """
        if memory:
            with self._lock:
                self._memory.clear()
        if disk:
            with self._disk_lock:
                for _, _, path in _entry_files(self._directory):
                    _unlink(path)


# ---------------------------------------------------------------- default instance

_default: BuildCache | None = None
_default_lock = threading.Lock()


def default_cache() -> BuildCache:
    """Return the process-wide cache, creating it from the environment on first use.

    Returns
    -------
    BuildCache
        Configured by ``GPULAB_CACHE_DIR`` and ``GPULAB_CACHE_MAX_BYTES`` as they
        were on the first call.
    """
    global _default
    if _default is None:
        with _default_lock:
            if _default is None:
                _default = BuildCache()
    return _default


def cache_info() -> CacheInfo:
    """Return a snapshot of the process-wide cache (see :meth:`BuildCache.info`)."""
    return default_cache().info()


def clear_cache(memory: bool = True, disk: bool = True) -> None:
    """Clear the process-wide cache (see :meth:`BuildCache.clear`)."""
    default_cache().clear(memory=memory, disk=disk)


def reset_default_cache() -> None:
    """Forget the process-wide cache, so the next use re-reads the environment."""
    global _default
    with _default_lock:
        _default = None

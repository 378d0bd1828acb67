"""BuildCache: built values in memory, in front of the user's private folder and shared read-only folders."""

from __future__ import annotations

import os
import threading
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, TypeVar

from ..errors import CacheWarning
from ..lru import LRU
from .entry import SUFFIX, BadEntry, Blobs, Entry, Meta, check_key, pack, unpack
from .fields import check_fields
from .folder import SUPPORTED, EntryFolder, Listing
from .info import CacheInfo, LayerInfo, format_bytes
from .trust import Untrusted

__all__ = ["BuildCache"]

T = TypeVar("T")

ENV_DIR = "GPULAB_CACHE_DIR"
ENV_SHARED = "GPULAB_SHARED_CACHE_DIR"
ENV_MAX_BYTES = "GPULAB_CACHE_MAX_BYTES"
DEFAULT_MAX_BYTES = 512 * 2**20
DEFAULT_MEMORY_ENTRIES = 256
"""Values kept in memory: a build holds its texts and cubin, a few hundred KiB to a few MiB."""

_MISSING = object()


def _warn(message: str) -> None:
    """Issue a :class:`CacheWarning` with ``message``."""
    warnings.warn(message, CacheWarning, stacklevel=3)


# ---------------------------------------------------------------- environment


def directory_from_env() -> Path:
    """Return the private cache folder the environment names.

    Returns
    -------
    Path
        ``$GPULAB_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/gpulab``, else
        ``~/.cache/gpulab``.
    """
    explicit = os.environ.get(ENV_DIR)
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return Path(xdg or "~/.cache") / "gpulab"


def shared_from_env() -> tuple[Path, ...]:
    """Return the shared folders ``$GPULAB_SHARED_CACHE_DIR`` names (``os.pathsep``-separated, like ``PATH``)."""
    return tuple(Path(part) for part in os.environ.get(ENV_SHARED, "").split(os.pathsep) if part)


def expanded(path: Path) -> Path:
    """``path`` with a leading ``~`` or ``~user`` expanded.

    Raises
    ------
    FileNotFoundError
        When the home folder it names cannot be found (an unknown user, no ``$HOME``).
    """
    try:
        return path.expanduser()
    except RuntimeError as exc:  # pathlib's word for an unknown ~user or a missing home
        raise FileNotFoundError(f"{path} names a home folder that cannot be found ({exc})") from None


def max_bytes_from_env() -> int:
    """Return ``$GPULAB_CACHE_MAX_BYTES``, or the default when unset or invalid (said with a warning)."""
    raw = os.environ.get(ENV_MAX_BYTES, "").strip()
    if not raw:
        return DEFAULT_MAX_BYTES
    try:
        return _check_bound(int(raw), "max_bytes", 0)
    except ValueError:
        _warn(f"ignoring {ENV_MAX_BYTES}={raw!r}: expected a whole number of bytes >= 0; "
              f"using {format_bytes(DEFAULT_MAX_BYTES)}")
        return DEFAULT_MAX_BYTES


def _check_bound(value: int, name: str, least: int) -> int:
    """Return ``value`` if it is at least ``least``; raise ``ValueError`` naming ``name`` if not."""
    if value < least:
        raise ValueError(f"{name} must be >= {least}, got {value}")
    return value


# ---------------------------------------------------------------- layers


@dataclass
class _Layer:
    """A folder layer: the opened folder (``None`` when refused or missing) and its counters."""

    name: str
    path: Path
    folder: EntryFolder | None
    state: str
    hits: int = 0
    misses: int = 0
    rejected: int = 0

    def info(self, bound: str) -> LayerInfo:
        listing = self.folder.listing() if self.folder else Listing({}, [], [])
        return LayerInfo(self.name, self.path, self.state, len(listing.entries), listing.total,
                         bound, self.hits, self.misses, self.rejected)


def _check_own_key(value: object, key: str) -> None:
    """Refuse a value that names another key than the one it was stored under (a Build names its own)."""
    own = getattr(value, "key", key)
    if own != key:
        raise ValueError(f"the value names key {own!r}")


def _open_private(path: Path) -> _Layer:
    """Open the user's folder, or say (once) why the cache keeps to memory."""
    if not SUPPORTED:
        _warn("this platform cannot open files relative to a checked folder; caching in memory only")
        return _Layer("private", path, None, "unsupported here: memory only")
    try:
        path = expanded(path)
        folder = EntryFolder(path, shared=False)
    except Untrusted as exc:
        _warn(f"not using the build cache folder: {exc}; caching in memory only. Make it a folder only you "
              f"can write (chown $USER {path}; chmod 700 {path}), or set {ENV_DIR} to one")
        return _Layer("private", path, None, f"refused: {exc}")
    except OSError as exc:
        _warn(f"cannot create cache directory {path} ({exc}); caching in memory only")
        return _Layer("private", path, None, "cannot be created: memory only")
    if not folder.writable():
        _warn(f"cache directory {path} is not writable; caching in memory only")
        return _Layer("private", path, folder, "not writable: memory only")
    folder.clean_temps()
    return _Layer("private", path, folder, "")


def _open_shared(path: Path) -> _Layer:
    """Open a shared read-only folder, or say (once) why it is not used."""
    try:
        path = expanded(path)
        return _Layer("shared", path, EntryFolder(path, shared=True), "read-only")
    except Untrusted as exc:
        _warn(f"not using the shared build cache {path}: {exc}. Whoever set {ENV_SHARED} should give it to "
              "root or one account (chmod 755, entries 644) on a path that only root or that account can change")
        return _Layer("shared", path, None, f"refused: {exc}")
    except OSError as exc:
        _warn(f"not using the shared build cache {path} ({exc}); check {ENV_SHARED}")
        return _Layer("shared", path, None, f"cannot be opened: {exc.strerror or exc}")


# ---------------------------------------------------------------- cache


class BuildCache:
    """A cache of built values: memory, then the private folder, then shared read-only folders.

    Parameters
    ----------
    directory : str or os.PathLike, optional
        The current user's folder of entry files, read and written. Default:
        ``$GPULAB_CACHE_DIR``, else ``$XDG_CACHE_HOME/gpulab``, else
        ``~/.cache/gpulab``. Created with mode 0o700 if missing. If it cannot
        be created or written, or is not to be trusted (not yours, or writable
        by group or others), the cache keeps to memory and says so with one
        :class:`CacheWarning`.
    shared : sequence of str or os.PathLike, optional
        Folders someone else filled (a teacher's pre-built cache), read after
        the private folder and never written or evicted. Default: the folders
        ``$GPULAB_SHARED_CACHE_DIR`` names, separated by ``os.pathsep``. Each
        is used only if it and its entries belong to root or to the folder's
        owner, no one else can write them, and no one else can change the
        path to it (docs/security.md).
    max_bytes : int, optional
        Bound on the private folder's entry files; after each write the least
        recently used files (oldest mtime; a hit refreshes it) are removed
        until the total is within it. Default: ``$GPULAB_CACHE_MAX_BYTES``,
        else 512 MiB.
    memory_entries : int, default 256
        How many values memory holds; the least recently used go first.

    Notes
    -----
    Thread-safe: concurrent cold lookups of one key run a single build whose
    result (or exception) every caller receives (:class:`gpulab.lru.LRU`).
    Several processes may share a private folder: writes are atomic renames,
    so the last writer of a key wins, and temporary files a crashed writer
    left are removed after an hour.
    """

    def __init__(self, directory: str | os.PathLike[str] | None = None, *,
                 shared: list[str | os.PathLike[str]] | tuple | None = None,
                 max_bytes: int | None = None, memory_entries: int = DEFAULT_MEMORY_ENTRIES):
        path = directory_from_env() if directory is None else Path(directory)
        self._max_bytes = max_bytes_from_env() if max_bytes is None else _check_bound(max_bytes, "max_bytes", 0)
        self._memory: LRU[Any] = LRU(_check_bound(memory_entries, "memory_entries", 1))
        self._lock = threading.Lock()
        self._disk_lock = threading.Lock()
        self._hits = self._misses = self._builds = 0
        self._private = _open_private(path)
        self._writable = self._private.folder is not None and not self._private.state
        shared_paths = shared_from_env() if shared is None else tuple(Path(p) for p in shared)
        self._shared = tuple(_open_shared(p) for p in shared_paths)

    def get_or_build(self, key: str, build: Callable[[], T], *,
                     encode: Callable[[T], Entry], decode: Callable[[Meta, Blobs], T]) -> T:
        """Return the value cached under ``key``, building and storing it if needed.

        Parameters
        ----------
        key : str
            The cache key: 1-128 characters of ``[0-9A-Za-z_-]`` (a hex digest).
        build : callable
            Called with no arguments when no layer has the key. If it raises,
            the exception reaches every caller waiting for this key and
            nothing is cached; the next call builds again.
        encode : callable
            Turns a built value into ``(meta, blobs)`` for the private folder.
        decode : callable
            Turns ``(meta, blobs)`` read from a folder back into a value. If
            it raises, returns a dataclass whose fields do not match their
            annotations, or a value whose ``key`` attribute is not ``key``,
            the entry is refused: one :class:`CacheWarning`, then the next
            layer or a build (which overwrites a private entry).

        Returns
        -------
        T
            The same object for every call with ``key`` in this process, while
            memory holds it.

        Raises
        ------
        ValueError
            If ``key`` is not a valid key.
        RuntimeError
            If ``build`` asks for its own key (a recursive build).
        """
        value = self._memory.get(key, _MISSING)
        if value is not _MISSING:
            with self._lock:
                self._hits += 1
            return value
        check_key(key)
        with self._lock:
            self._misses += 1
        return self._memory.get_or_make(key, lambda: self._produce(key, build, encode, decode))

    def put(self, key: str, value: T, *, encode: Callable[[T], Entry]) -> None:
        """Write ``value``, made along with another entry, to the private folder for a later
        :meth:`get_or_build` of ``key`` to load; memory does not keep it (it may never be asked for).

        Does nothing when the private folder cannot be written.
        """
        check_key(key)
        if self._writable:
            self._store(key, *encode(value))

    def load(self, key: str, *, decode: Callable[[Meta, Blobs], T]) -> T | None:
        """Return the value the first folder that has a good entry of ``key`` holds, or None.

        Memory is neither read nor filled: for a small value its owner keeps
        in memory itself, written with :meth:`put` when it is worth keeping.
        ``decode`` is as for :meth:`get_or_build`.
        """
        check_key(key)
        value = self._from_folders(key, decode)
        return None if value is _MISSING else value

    def _from_folders(self, key: str, decode: Callable[[Meta, Blobs], T]) -> Any:
        """The value of the first folder that has a good entry of ``key``, or ``_MISSING``."""
        for layer in (self._private, *self._shared):
            if layer.folder is None:
                continue
            value = self._load(layer, key, decode)
            with self._lock:
                if value is not _MISSING:
                    layer.hits += 1
                    return value
                layer.misses += 1
        return _MISSING

    def _produce(self, key: str, build: Callable[[], T],
                 encode: Callable[[T], Entry], decode: Callable[[Meta, Blobs], T]) -> T:
        """Load ``key`` from the first folder that has a good entry, or build it and write it."""
        value = self._from_folders(key, decode)
        if value is not _MISSING:
            return value
        with self._lock:
            self._builds += 1
        value = build()
        if self._writable:
            self._store(key, *encode(value))
        return value

    def _load(self, layer: _Layer, key: str, decode: Callable[[Meta, Blobs], T]) -> Any:
        """Return the decoded entry of ``key`` in ``layer``, or ``_MISSING``; warn about a refused one."""
        try:
            data = layer.folder.read(key)
            if data is None:
                return _MISSING
            meta, blobs = unpack(data, key)
        except (OSError, BadEntry, Untrusted) as exc:
            return self._refuse(layer, key, str(exc))
        try:
            value = decode(meta, blobs)
            check_fields(value)
            _check_own_key(value, key)
        except Exception as exc:  # a stale or forged entry: whatever the decoder tripped on, rebuild
            return self._refuse(layer, key, f"decode failed ({type(exc).__name__}: {exc})")
        if layer is self._private:
            layer.folder.touch(key)
        return value

    def _refuse(self, layer: _Layer, key: str, reason: str) -> Any:
        """Count and report an entry file that cannot be used; return ``_MISSING``."""
        with self._lock:
            layer.rejected += 1
        _warn(f"ignoring cache entry {layer.path / (key + SUFFIX)}: {reason}; rebuilding it")
        return _MISSING

    def _store(self, key: str, meta: Meta, blobs: Blobs) -> None:
        """Write the entry of ``key`` to the private folder, then evict down to the size bound."""
        data = pack(key, meta, blobs)
        try:
            self._private.folder.write(key, data)
        except OSError as exc:
            self._stop_writing(exc)
            return
        with self._disk_lock:
            self._private.folder.evict(self._max_bytes)

    def _stop_writing(self, exc: OSError) -> None:
        """Switch to memory only after a failed write, warning once."""
        with self._disk_lock:
            was_writable, self._writable = self._writable, False
        if was_writable:
            self._private.state = "not writable: memory only"
            _warn(f"cannot write to cache directory {self._private.path} ({exc}); "
                  "caching in memory only from now on")

    def info(self) -> CacheInfo:
        """Return a snapshot of every layer's contents and counters.

        Returns
        -------
        CacheInfo
        """
        private = self._private.info(format_bytes(self._max_bytes))
        shared = tuple(layer.info("") for layer in self._shared)
        with self._lock:
            memory = LayerInfo("memory", None, "", len(self._memory), 0, str(self._memory.maxsize),
                               self._hits, self._misses)
            return CacheInfo(memory=memory, private=private, shared=shared, builds=self._builds,
                             max_bytes=self._max_bytes, writable=self._writable)

    def clear(self, memory: bool = True, disk: bool = True) -> None:
        """Forget cached values; counters are kept, and shared folders are never touched.

        Parameters
        ----------
        memory : bool, default True
            Drop the values held in memory by this process.
        disk : bool, default True
            Remove the private folder's entry files (other files are left alone).
        """
        if memory:
            self._memory.clear()
        if disk and self._private.folder is not None:
            with self._disk_lock:
                self._private.folder.clear()

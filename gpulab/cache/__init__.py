"""Build cache: built values in memory, in front of folders of entry files.

The cache stores *entries*, not build objects. An entry is ``(meta, blobs)``:
``meta`` is a JSON-serialisable dict with string keys, ``blobs`` maps names
(``"cubin"``, ``"sass"``, ...) to byte strings. Callers convert their objects
to and from entries with the ``encode``/``decode`` functions they pass to
:meth:`BuildCache.get_or_build`. A lookup tries, in order:

1. memory (this process; bounded, least recently used first out);
2. the private folder (``$GPULAB_CACHE_DIR``, else ``$XDG_CACHE_HOME/gpulab``,
   else ``~/.cache/gpulab``): the current user's, read and written;
3. each shared folder (``$GPULAB_SHARED_CACHE_DIR``, separated by
   ``os.pathsep``): filled by someone else (a teacher), only read;

and builds what none of them has, writing it to the private folder.

Modules: :mod:`.entry` (the file format), :mod:`.trust` (which folders and
files are trusted), :mod:`.folder` (a checked folder), :mod:`.fields` (a
decoded value's types), :mod:`.info` (the per-layer report),
:mod:`.buildcache` (the layers together). docs/security.md says what the
cache trusts and why.
"""

from __future__ import annotations

import threading

from ..errors import CacheWarning
from ..options import check_flags
from .buildcache import DEFAULT_MAX_BYTES, ENV_DIR, ENV_MAX_BYTES, ENV_SHARED, BuildCache
from .info import CacheInfo, LayerInfo

__all__ = [
    "DEFAULT_MAX_BYTES",
    "ENV_DIR",
    "ENV_MAX_BYTES",
    "ENV_SHARED",
    "BuildCache",
    "CacheInfo",
    "CacheWarning",
    "LayerInfo",
    "cache_info",
    "clear_cache",
    "default_cache",
    "reset_default_cache",
]

_default: BuildCache | None = None
_default_lock = threading.Lock()


def default_cache() -> BuildCache:
    """Return the process-wide cache, creating it from the environment on first use.

    Returns
    -------
    BuildCache
        Configured by ``GPULAB_CACHE_DIR``, ``GPULAB_SHARED_CACHE_DIR`` and
        ``GPULAB_CACHE_MAX_BYTES`` as they were on the first call.
    """
    global _default
    if _default is None:
        with _default_lock:
            if _default is None:
                _default = BuildCache()
    return _default


def cache_info() -> CacheInfo:
    """Return a snapshot of the process-wide cache, per layer (see :meth:`BuildCache.info`)."""
    return default_cache().info()


def clear_cache(memory: bool = True, disk: bool = True) -> None:
    """Clear the process-wide cache's memory and private folder (see :meth:`BuildCache.clear`).

    Raises
    ------
    ArgumentError
        When ``memory`` or ``disk`` is not True or False.
    """
    check_flags(memory=memory, disk=disk)
    default_cache().clear(memory=memory, disk=disk)


def reset_default_cache(cache: BuildCache | None = None) -> None:
    """Replace the process-wide cache by ``cache``, or forget it so the next use re-reads the environment.

    Parameters
    ----------
    cache : BuildCache, optional
        The cache every build uses from now on (a tool that fills a folder
        for others passes ``BuildCache(folder, shared=())``).
    """
    global _default
    with _default_lock:
        _default = cache

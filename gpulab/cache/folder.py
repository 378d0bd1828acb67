"""One folder of entry files, checked once when opened and then used only through its descriptor.

Every later read, write, rename and removal names files relative to the
open folder (``dir_fd``), so renaming or replacing the folder or any of its
parents after the check changes nothing: the cache keeps working on the
folder it checked. Entry files are opened without following symbolic
links, and checked (:func:`~gpulab.cache.trust.check_entry`) on the open
file, before a byte is read.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
import time
import weakref
from dataclasses import dataclass
from pathlib import Path

from .entry import MAX_ENTRY_BYTES, SUFFIX, BadEntry
from .trust import Untrusted, check_entry, check_folder, check_path

TMP_PREFIX = ".tmp-"
TAG_NAME = "CACHEDIR.TAG"
TAG = (b"Signature: 8a477f597d28d172789f06886806bc55\n"
       b"# This file is a cache directory tag created by gpulab's build cache.\n"
       b"# For information about cache directory tags, see https://bford.info/cachedir/\n")
"""What marks a folder as gpulab's (the Cache Directory Tagging convention: backup tools skip it too)."""
TMP_MAX_AGE_S = 3600
"""A temporary file older than this is a crashed writer's leftover (a write takes seconds)."""

_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
# os.replace is os.rename on POSIX, but only os.rename is listed in os.supports_dir_fd.
SUPPORTED = {os.open, os.stat, os.unlink, os.rename, os.utime} <= os.supports_dir_fd


@dataclass(frozen=True)
class Listing:
    """What a folder holds: entry files by key (with their ``lstat``), temporary files, and the names of
    anything else (the tag aside)."""

    entries: dict[str, os.stat_result]
    temps: list[os.DirEntry]
    others: list[str]

    @property
    def total(self) -> int:
        """The entries' total size in bytes."""
        return sum(found.st_size for found in self.entries.values())


class EntryFolder:
    """A checked folder of ``<key>.gpulab`` files.

    Parameters
    ----------
    path : Path
        The folder.
    shared : bool
        ``False``: the current user's private folder, created (mode 0o700) if
        missing and trusted only if the current user owns it. ``True``: a
        read-only folder that someone else may have filled; it is never
        created or written, and it trusts root, its owner and the current
        user, if the path to it is safe (:func:`~gpulab.cache.trust.check_path`).

    adopt : bool, default True
        For a private folder: mark it as gpulab's (:data:`TAG_NAME`) when it
        holds nothing but entries, as one it creates; a folder that holds
        other files is never marked.

    Raises
    ------
    Untrusted
        If the folder must not be trusted (the message says why).
    OSError
        If it cannot be created or opened.
    """

    def __init__(self, path: Path, *, shared: bool, adopt: bool = True):
        self.path = path
        self.shared = shared
        if shared:
            owner = os.stat(path).st_uid
            self.owners = frozenset({0, owner, os.geteuid()})
            reached = check_path(path, self.owners)
        else:
            path.mkdir(mode=0o700, parents=True, exist_ok=True)
            self.owners = frozenset({os.geteuid()})
        self._fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        weakref.finalize(self, os.close, self._fd)
        opened = os.fstat(self._fd)
        check_folder(path, opened, self.owners)
        if shared and (opened.st_dev, opened.st_ino) != (reached.st_dev, reached.st_ino):
            raise Untrusted(f"{path} changed while it was being checked")
        if adopt and not shared and not self.tagged() and not self.listing().others:
            with contextlib.suppress(OSError):
                self._write_tag()

    def tagged(self) -> bool:
        """Whether gpulab's cache made (or took on, empty) this folder: it holds gpulab's :data:`TAG_NAME`."""
        try:
            fd = os.open(TAG_NAME, _READ_FLAGS, dir_fd=self._fd)
        except OSError:
            return False
        with os.fdopen(fd, "rb") as file:
            return stat.S_ISREG(os.fstat(fd).st_mode) and file.read(len(TAG)) == TAG

    def _write_tag(self) -> None:
        fd = os.open(TAG_NAME, _CREATE_FLAGS, 0o644, dir_fd=self._fd)
        with os.fdopen(fd, "wb") as file:
            file.write(TAG)

    def writable(self) -> bool:
        """Whether new entries may be written here (never for a shared folder)."""
        return not self.shared and os.access(self.path, os.W_OK | os.X_OK)

    def read(self, key: str) -> bytes | None:
        """Return the bytes of ``key``'s entry file, or ``None`` if there is none.

        Raises
        ------
        Untrusted
            If the file is a symbolic link or not one this folder trusts.
        BadEntry
            If it is larger than any entry.
        OSError
            If it cannot be read.
        """
        try:
            fd = os.open(key + SUFFIX, _READ_FLAGS, dir_fd=self._fd)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise Untrusted("a symbolic link") from None
            raise
        with os.fdopen(fd, "rb") as file:
            found = os.fstat(fd)
            check_entry(found, self.owners)
            if found.st_size > MAX_ENTRY_BYTES:
                raise BadEntry(f"{found.st_size} bytes, more than any entry ({MAX_ENTRY_BYTES})")
            return file.read(MAX_ENTRY_BYTES + 1)

    def touch(self, key: str) -> None:
        """Mark ``key``'s entry as just used (for eviction), if the file system allows it."""
        with contextlib.suppress(OSError, NotImplementedError):
            os.utime(key + SUFFIX, dir_fd=self._fd, follow_symlinks=False)

    def write(self, key: str, data: bytes) -> None:
        """Write ``key``'s entry (mode 0o600) through a temporary file and a rename.

        Readers (other threads or processes) see the old entry or the new one,
        never a part.

        Raises
        ------
        OSError
            If the folder is shared, or the temporary file cannot be created,
            written or renamed.
        """
        if self.shared:
            raise PermissionError(f"{self.path} is a shared cache folder: it is never written")
        tmp = f"{TMP_PREFIX}{secrets.token_hex(8)}.tmp"
        fd = os.open(tmp, _CREATE_FLAGS, 0o600, dir_fd=self._fd)
        try:
            with os.fdopen(fd, "wb") as file:
                file.write(data)
            os.replace(tmp, key + SUFFIX, src_dir_fd=self._fd, dst_dir_fd=self._fd)
        except BaseException:
            self._unlink(tmp)
            raise

    def listing(self) -> Listing:
        """List the entry files and temporary files; empty if the folder cannot be read."""
        entries, temps = {}, []
        try:
            with os.scandir(self._fd) as found:
                items = list(found)
        except OSError:
            return Listing({}, [], [])
        others = []
        for item in items:
            with contextlib.suppress(OSError):
                if item.name.endswith(SUFFIX) and item.is_file(follow_symlinks=False):
                    entries[item.name[:-len(SUFFIX)]] = item.stat(follow_symlinks=False)
                elif item.name.startswith(TMP_PREFIX):
                    temps.append(item)
                elif item.name != TAG_NAME:
                    others.append(item.name)
        return Listing(entries, temps, sorted(others))

    def evict(self, max_bytes: int) -> None:
        """Remove the least recently used entries until their total is within ``max_bytes``.

        Also removes temporary files that crashed writers left (see
        :meth:`clean_temps`).
        """
        found = self.listing()
        total = found.total
        for key, info in sorted(found.entries.items(), key=lambda item: item[1].st_mtime_ns):
            if total <= max_bytes:
                break
            self.remove(key)
            total -= info.st_size
        self.clean_temps(found)

    def clean_temps(self, found: Listing | None = None) -> None:
        """Remove temporary files of the current user older than :data:`TMP_MAX_AGE_S`.

        A younger one may belong to a writer still at work; one of another
        user is left alone.
        """
        oldest = time.time() - TMP_MAX_AGE_S
        for item in (found or self.listing()).temps:
            with contextlib.suppress(OSError):
                info = item.stat(follow_symlinks=False)
                if stat.S_ISREG(info.st_mode) and info.st_uid == os.geteuid() and info.st_mtime < oldest:
                    self._unlink(item.name)

    def clear(self) -> None:
        """Remove every entry file (other files are left alone)."""
        for key in self.listing().entries:
            self.remove(key)

    def remove(self, key: str) -> None:
        """Remove ``key``'s entry file, if it is there."""
        self._unlink(key + SUFFIX)

    def open_to_all(self) -> list[str]:
        """Let everyone read the folder and its entries (0o755, 0o644), as a shared folder needs.

        Only the owner may still write them. Entries that are not regular files
        are left as they are.

        Returns
        -------
        list of str
            What changed, in words (``"DIR: mode 0700 -> 0755"``); empty when nothing did.
        """
        changed = []
        before = stat.S_IMODE(os.fstat(self._fd).st_mode)
        if before != 0o755:
            os.chmod(self._fd, 0o755)
            changed.append(f"{self.path}: mode {before:04o} -> 0755")
        widened = 0
        for key in self.listing().entries:
            with contextlib.suppress(OSError):
                fd = os.open(key + SUFFIX, _READ_FLAGS, dir_fd=self._fd)
                try:
                    found = os.fstat(fd)
                    if stat.S_ISREG(found.st_mode) and stat.S_IMODE(found.st_mode) != 0o644:
                        os.chmod(fd, 0o644)
                        widened += 1
                finally:
                    os.close(fd)
        if widened:
            changed.append(f"{widened} entries: mode -> 0644")
        return changed

    def _unlink(self, name: str) -> None:
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=self._fd)

"""Which folders and entry files the build cache trusts (docs/security.md says why).

A sha256 inside an entry only detects corruption; who wrote a file is told
by the operating system, through its owner and permission bits, as git
(``safe.directory``) and ssh (``StrictModes``) decide whom to trust:

- a folder is used only if it is a directory owned by a trusted user and
  not writable by group or others;
- an entry is used only if it is a regular file (not a symbolic link)
  owned by a trusted user and not writable by group or others;
- the private folder trusts the current user alone; a shared, read-only
  folder trusts root, its own owner and the current user, and only if no
  one else can rename or replace a name on the path that leads to it.
"""

from __future__ import annotations

import os
import pwd
import stat
from collections import deque
from pathlib import Path

__all__ = ["Untrusted", "check_entry", "check_folder", "check_path", "describe_user"]

_GROUP_OR_OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH
_MAX_LINKS = 40


class Untrusted(Exception):
    """A folder or entry file is not one the cache may trust; the message says why."""


def describe_user(uid: int) -> str:
    """Return ``"user NAME (uid N)"``, or ``"uid N"`` when the account is unknown."""
    try:
        return f"user {pwd.getpwuid(uid).pw_name!r} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def _writable_by_others(mode: int) -> str | None:
    """Say who besides the owner may write a file of ``mode``, or ``None`` if no one."""
    who = [name for bit, name in ((stat.S_IWGRP, "its group"), (stat.S_IWOTH, "others")) if mode & bit]
    return f"writable by {' and '.join(who)} (mode {stat.S_IMODE(mode):04o})" if who else None


def check_folder(path: Path, found: os.stat_result, owners: frozenset[int]) -> None:
    """Refuse a cache folder that someone outside ``owners`` could write into.

    Parameters
    ----------
    path : Path
        The folder, for the message.
    found : os.stat_result
        ``os.fstat`` of the folder as opened.
    owners : frozenset of int
        The uids trusted to own it.

    Raises
    ------
    Untrusted
        If it is not a directory, belongs to someone else, or group or others
        may write it.
    """
    if not stat.S_ISDIR(found.st_mode):
        raise Untrusted(f"{path} is not a folder")
    if found.st_uid not in owners:
        raise Untrusted(f"{path} belongs to {describe_user(found.st_uid)}, not to you")
    others = _writable_by_others(found.st_mode)
    if others:
        raise Untrusted(f"{path} is {others}, so another user could plant builds in it")


def check_entry(found: os.stat_result, owners: frozenset[int]) -> None:
    """Refuse an entry file not written by someone in ``owners``.

    Parameters
    ----------
    found : os.stat_result
        ``os.fstat`` of the file as opened (without following a symbolic link).
    owners : frozenset of int
        The uids trusted to write entries in its folder.

    Raises
    ------
    Untrusted
        If it is not a regular file, belongs to someone else, or group or
        others may write it.
    """
    if not stat.S_ISREG(found.st_mode):
        raise Untrusted("not a regular file")
    if found.st_uid not in owners:
        raise Untrusted(f"written by {describe_user(found.st_uid)}, whom this folder does not trust")
    others = _writable_by_others(found.st_mode)
    if others:
        raise Untrusted(others)


def check_path(path: Path, owners: frozenset[int]) -> os.stat_result:
    """Refuse a path on which someone outside ``owners`` could rename or replace a name.

    The path is resolved one name at a time, as the kernel does, following
    symbolic links; every folder in which a name is looked up must be owned
    by someone in ``owners`` and not writable by group or others, except a
    sticky folder owned by root (``/tmp``), whose names only their owners may
    rename: there the name itself must belong to root or the current user.

    Parameters
    ----------
    path : Path
        The folder to reach.
    owners : frozenset of int
        The uids trusted to own the folders on the way (root and the current
        user are always among them).

    Returns
    -------
    os.stat_result
        ``os.stat`` of the folder reached, to compare with the one opened.

    Raises
    ------
    Untrusted
        Naming the folder on the path that someone else could change.
    OSError
        If a name on the path cannot be looked up.
    """
    trusted = owners | {0, os.geteuid()}
    pending = deque(Path(os.getcwd(), path).parts[1:])
    current, links = Path("/"), 0
    while pending:
        name = pending.popleft()
        if name == "..":
            current = current.parent
            continue
        item_path = current / name
        item = os.lstat(item_path)
        _check_container(current, os.stat(current), item_path, item, trusted)
        if stat.S_ISLNK(item.st_mode):
            links += 1
            if links > _MAX_LINKS:
                raise Untrusted(f"{path} goes through more than {_MAX_LINKS} symbolic links")
            target = Path(os.readlink(item_path))
            if target.is_absolute():
                current = Path("/")
            pending.extendleft(reversed(target.parts[1:] if target.is_absolute() else target.parts))
        else:
            current = item_path
    return os.stat(current)


def _check_container(folder_path: Path, folder: os.stat_result, item_path: Path, item: os.stat_result,
                     trusted: frozenset[int]) -> None:
    """Refuse ``folder`` if someone outside ``trusted`` could rename or replace ``item`` in it."""
    if folder.st_uid not in trusted:
        raise Untrusted(f"it is reached through {folder_path}, which belongs to {describe_user(folder.st_uid)}, "
                        "who could replace what it holds")
    others = _writable_by_others(folder.st_mode)
    if not others:
        return
    sticky_root = folder.st_mode & stat.S_ISVTX and folder.st_uid == 0
    if sticky_root and item.st_uid in (0, os.geteuid()):
        return
    if sticky_root:
        raise Untrusted(f"{item_path} belongs to {describe_user(item.st_uid)} and sits in {folder_path}, "
                        "where anyone may create names")
    raise Untrusted(f"it is reached through {folder_path}, which is {others}")

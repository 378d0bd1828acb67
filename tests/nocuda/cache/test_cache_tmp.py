"""Temporary files that crashed writers leave in the private folder are removed when safe (issue 14, item 12).

Safe means: named ``.tmp-*``, a regular file, the current user's, and older
than an hour (a live writer's file is seconds old). Nothing else is touched,
and a shared folder never is.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from cachekit import KEY, OTHER, STRANGER, Builder, entry, get, give, make_artifact, needs_root

from gpulab.cache import BuildCache
from gpulab.cache.folder import TMP_MAX_AGE_S
from gpulab.cache.share import publish

HOURS_AGO = time.time() - 2 * TMP_MAX_AGE_S


def age(path: Path, when: float = HOURS_AGO) -> Path:
    os.utime(path, (when, when), follow_symlinks=False)
    return path


def crash_while_writing(folder: Path) -> Path:
    """Fork a writer that dies (SIGKILL) after writing its temporary file and before the rename."""
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        try:
            os.replace = lambda *args, **kwargs: os.kill(os.getpid(), signal.SIGKILL)
            get(BuildCache(folder, shared=()), build=Builder(make_artifact(size=100_000)))
        finally:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    (leftover,) = folder.glob(".tmp-*")
    return leftover


# ---------------------------------------------------------------- the example


def test_a_crashed_writers_leftover_is_removed_once_it_is_old(tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    leftover = crash_while_writing(folder)
    assert leftover.stat().st_size > 100_000 and not entry(folder).exists()
    BuildCache(folder, shared=())
    assert leftover.exists()  # young: its writer might still be at work
    age(leftover)
    BuildCache(folder, shared=())  # opening the folder cleans
    assert not leftover.exists()


def test_a_write_also_removes_old_leftovers(tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    cache = BuildCache(folder, shared=())
    age(crash_while_writing(folder))
    half = folder / ".tmp-0123456789abcdef.tmp"
    half.write_bytes(b"half an entry")
    age(half)
    get(cache, build=Builder())  # this process has been running all along
    assert [p.name for p in folder.iterdir() if p.name != "CACHEDIR.TAG"] == [f"{KEY}.gpulab"]


# ---------------------------------------------------------------- what is left alone


def test_young_leftovers_and_other_files_are_kept(tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    cache = BuildCache(folder, shared=())
    young = folder / ".tmp-young.tmp"
    young.write_bytes(b"a writer at work")
    age(young, time.time() - (TMP_MAX_AGE_S - 60))
    others = [folder / ".notes", folder / "tmp-without-dot"]
    for path in others:
        path.write_text("not a leftover")
        age(path)
    directory = folder / ".tmp-dir"
    directory.mkdir()
    age(directory)
    get(cache, build=Builder())
    assert all(p.exists() for p in [young, *others, directory])


def test_an_old_leftover_symlink_is_kept_and_its_target_untouched(tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    cache = BuildCache(folder, shared=())
    target = tmp_path / "precious.txt"
    target.write_text("not the cache's")
    link = folder / ".tmp-link.tmp"
    link.symlink_to(target)
    age(link)
    get(cache, build=Builder())
    assert link.is_symlink() and target.read_text() == "not the cache's"


@needs_root
def test_an_old_leftover_of_another_user_is_kept(tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    cache = BuildCache(folder, shared=())
    theirs = folder / ".tmp-theirs.tmp"
    theirs.write_bytes(b"x")
    give(theirs, STRANGER)
    age(theirs)
    get(cache, build=Builder())
    assert theirs.exists()


def test_a_shared_folders_leftovers_are_never_removed(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    get(BuildCache(shared, shared=()), key=OTHER, build=Builder())
    publish(shared)
    leftover = shared / ".tmp-teacher.tmp"
    leftover.write_bytes(b"x")
    age(leftover)
    cache = BuildCache(tmp_path / "mine", shared=[shared])
    assert get(cache, key=OTHER).blobs["empty"] == b""
    get(cache, build=Builder())
    assert leftover.exists()

"""Which private cache folders and entries are trusted (issue 14, item 1).

A folder or entry that someone other than the current user could have
written is refused, with one warning that says what to do; the cache then
keeps to memory (a refused folder) or rebuilds (a refused entry). Tests that
need files of another user create them with os.chown, or act as that user
in a forked process, which only root can do: CI runs as root, and root
ignores permission bits, so every check here reads owners and mode bits, not
what root happens to be allowed.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest
from cachekit import KEY, OTHER, STRANGER, Builder, as_user, cache_warnings, entry, get, give, needs_root, write_entry

import gpulab
from gpulab.cache import BuildCache, CacheWarning
from gpulab.compiler.serialize import encode


def twice(x):
    return x + x


def refused(folder: Path, **kwargs) -> tuple[BuildCache, str]:
    """Open ``folder`` expecting it to be refused: return the cache and its single warning."""
    with pytest.warns(CacheWarning) as record:
        cache = BuildCache(folder, shared=(), **kwargs)
    messages = cache_warnings(record)
    assert len(messages) == 1, messages
    assert cache.info().private.state.startswith("refused") and not cache.info().writable
    return cache, messages[0]


def assert_memory_only(cache: BuildCache, folder: Path) -> None:
    """The cache builds, keeps the value in memory, and neither reads nor writes ``folder``."""
    before = sorted(p.name for p in folder.iterdir())
    builder = Builder()
    assert get(cache, build=builder) is builder.result and builder.calls == 1
    assert get(cache) is builder.result
    assert sorted(p.name for p in folder.iterdir()) == before
    info = cache.info()
    assert (info.private.hits, info.private.misses, info.builds) == (0, 0, 1)


# ---------------------------------------------------------------- the example


@needs_root
def test_entry_planted_by_another_user_in_a_world_writable_folder_is_never_used(open_base, use_cache):
    folder = open_base / "cache"
    folder.mkdir()
    folder.chmod(0o777)  # pre-existing and world-writable, without the sticky bit
    cache, message = refused(folder)
    assert "writable by its group and others (mode 0777)" in message and "chmod 700" in message
    use_cache(cache)
    honest = gpulab.compile("map", twice, types=("float32",), target="sm_90")
    assert list(folder.iterdir()) == []  # nothing written where others could read or replace it

    # Another local user, in a process of their own, plants an entry for the very key.
    meta, blobs = encode(honest)
    planted = {**blobs, "artifact-cuda": b"// planted by someone else\n" + blobs["artifact-cuda"]}

    def plant() -> int:
        write_entry(entry(folder, honest.key), honest.key, meta, planted)
        return os.stat(entry(folder, honest.key)).st_uid

    assert as_user(STRANGER, plant) == STRANGER

    cache, _ = refused(folder)
    use_cache(cache)
    again = gpulab.compile("map", twice, types=("float32",), target="sm_90")
    assert "planted" not in again.source and again.source == honest.source
    assert cache.info().builds == 2  # the build and its disassembly: nothing came from the folder


# ---------------------------------------------------------------- folders


@pytest.mark.parametrize("mode", [0o770, 0o707, 0o1777, 0o720])
def test_folder_writable_by_group_or_others_is_refused(tmp_path: Path, mode: int) -> None:
    folder = tmp_path / "cache"
    folder.mkdir()
    get(BuildCache(folder, shared=()), build=Builder())  # a good entry that must now go unread
    folder.chmod(mode)
    cache, message = refused(folder)
    assert f"mode {mode:04o}" in message and str(folder) in message and "GPULAB_CACHE_DIR" in message
    assert_memory_only(cache, folder)


@needs_root
def test_folder_owned_by_another_user_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    get(BuildCache(folder, shared=()), build=Builder())
    give(folder, STRANGER)
    cache, message = refused(folder)
    assert f"belongs to uid {STRANGER}, not to you" in message and "chown" in message
    assert_memory_only(cache, folder)


@pytest.mark.skipif(os.geteuid() == 0, reason="root owns /: the chown variant above covers root")
def test_folder_of_root_is_refused_for_a_user() -> None:
    cache, message = refused(Path("/"))
    assert "belongs to user 'root' (uid 0)" in message


@needs_root
def test_symlink_to_a_folder_of_another_user_is_refused(tmp_path: Path) -> None:
    theirs = tmp_path / "theirs"
    get(BuildCache(theirs, shared=()), build=Builder())
    give(theirs, STRANGER)
    link = tmp_path / "cache"
    link.symlink_to(theirs)
    cache, message = refused(link)
    assert f"uid {STRANGER}" in message
    assert_memory_only(cache, theirs)


def test_symlink_to_a_folder_of_ones_own_is_used(tmp_path: Path) -> None:
    mine = tmp_path / "scratch-disk" / "gpulab"
    get(BuildCache(mine, shared=()), build=Builder())
    link = tmp_path / "cache"
    link.symlink_to(mine)
    assert get(BuildCache(link, shared=())).blobs["sass"].startswith(b"IADD3")


def test_new_folders_and_entries_are_private_whatever_the_umask(tmp_path: Path) -> None:
    previous = os.umask(0)
    try:
        folder = tmp_path / "new" / "cache"
        get(BuildCache(folder, shared=()), build=Builder())
    finally:
        os.umask(previous)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE(entry(folder).stat().st_mode) == 0o600


@needs_root
def test_folder_swapped_after_opening_changes_nothing(tmp_path: Path) -> None:
    """A parent folder's owner may rename the cache folder and put another there: the cache keeps the one it checked."""
    folder = tmp_path / "cache"
    cache = BuildCache(folder, shared=())
    folder.rename(tmp_path / "moved")
    impostor = tmp_path / "cache"
    impostor.mkdir(mode=0o777)
    write_entry(entry(impostor), KEY, {"planted": True}, {"cubin": b"\x7fELF planted"})
    give(entry(impostor), STRANGER)
    give(impostor, STRANGER)

    builder = Builder()
    assert get(cache, build=builder) is builder.result and builder.calls == 1
    assert entry(tmp_path / "moved").exists()  # written into the folder that was checked
    assert sorted(p.name for p in impostor.iterdir()) == [f"{KEY}.gpulab"]


# ---------------------------------------------------------------- entries


def rebuilt_after_warning(folder: Path, reason: str) -> Builder:
    """A fresh cache on ``folder`` refuses the entry of KEY (one warning naming ``reason``) and rebuilds it."""
    cache, rebuild = BuildCache(folder, shared=()), Builder()
    with pytest.warns(CacheWarning) as record:
        assert get(cache, build=rebuild) is rebuild.result
        assert get(cache) is rebuild.result
    messages = cache_warnings(record)
    assert len(messages) == 1 and reason in messages[0] and str(entry(folder)) in messages[0], messages
    assert rebuild.calls == 1 and cache.info().private.rejected == 1
    return rebuild


@needs_root
def test_entry_of_another_user_is_refused_and_replaced_by_ones_own(tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    get(BuildCache(folder, shared=()), build=Builder())
    give(entry(folder), STRANGER)
    rebuild = rebuilt_after_warning(folder, f"written by uid {STRANGER}")
    assert entry(folder).stat().st_uid == os.geteuid()
    assert get(BuildCache(folder, shared=())).blobs == rebuild.result.blobs


@pytest.mark.parametrize("mode", [0o620, 0o602, 0o666])
def test_entry_writable_by_group_or_others_is_refused(tmp_path: Path, mode: int) -> None:
    folder = tmp_path / "cache"
    get(BuildCache(folder, shared=()), build=Builder())
    entry(folder).chmod(mode)
    rebuilt_after_warning(folder, f"mode {mode:04o}")
    assert stat.S_IMODE(entry(folder).stat().st_mode) == 0o600


def test_symlinked_entry_is_refused_and_its_target_left_alone(tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    get(BuildCache(folder, shared=()), key=OTHER, build=Builder())
    elsewhere = tmp_path / "elsewhere.gpulab"
    shutil.copyfile(entry(folder, OTHER), elsewhere)
    entry(folder).symlink_to(elsewhere)
    target_bytes = elsewhere.read_bytes()
    rebuilt_after_warning(folder, "a symbolic link")
    assert entry(folder).is_file() and not entry(folder).is_symlink()
    assert elsewhere.read_bytes() == target_bytes


def test_entry_that_is_not_a_regular_file_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    BuildCache(folder, shared=())
    os.mkfifo(entry(folder))  # a reader that opened it blocking would hang here
    with pytest.warns(CacheWarning, match="not a regular file"):
        builder = Builder()
        assert get(BuildCache(folder, shared=()), build=builder) is builder.result

"""The shared, read-only cache layer a teacher pre-warms (issue 18, item 2).

Lookups go memory, private folder, shared folders; a shared folder is
never written or evicted, and it and its entries are trusted only if they
belong to root or the folder's owner, on a path no one else can change.
The learner runs in a forked process of another uid, so that the kernel's
permission checks apply to it (root reads every file).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from cachekit import (KEY, LEARNER, OTHER, STRANGER, TEACHER, Builder, as_user, cache_warnings, entry, get, give,
                      make_artifact, needs_root)

import gpulab
from gpulab.cache import BuildCache, CacheWarning
from gpulab.cache.share import inspect_shared, publish


def twice(x):
    return x + x


def teach(folder: Path, keys=(KEY,), owner: int | None = TEACHER) -> dict[str, Builder]:
    """Fill ``folder`` as a teacher would (build, publish), owned by ``owner``; return the builders."""
    builders = {key: Builder(make_artifact(key)) for key in keys}
    cache = BuildCache(folder, shared=())
    for key, builder in builders.items():
        get(cache, key=key, build=builder)
    assert publish(folder).good == sorted(keys)
    if owner is not None:
        for item in [folder, *folder.iterdir()]:
            give(item, owner)
    return builders


def listing(folder: Path) -> dict[str, tuple]:
    """Every file in ``folder`` with its size, mode, owner and times: what "untouched" compares."""
    return {p.name: (p.stat().st_size, p.stat().st_mode, p.stat().st_uid, p.stat().st_mtime_ns)
            for p in folder.iterdir()}


def refused_shared(folder: Path, private: Path) -> tuple[BuildCache, str]:
    with pytest.warns(CacheWarning) as record:
        cache = BuildCache(private, shared=[folder])
    messages = cache_warnings(record)
    assert len(messages) == 1 and f"not using the shared build cache {folder}" in messages[0], messages
    assert cache.info().shared[0].state.startswith("refused")
    return cache, messages[0]


# ---------------------------------------------------------------- the example


@needs_root
def test_a_learners_first_run_compiles_nothing_from_a_prewarmed_folder(open_base: Path, use_cache) -> None:
    shared = open_base / "course" / "cache"
    shared.parent.mkdir()
    shared.parent.chmod(0o755)
    use_cache(BuildCache(shared, shared=()))
    taught = gpulab.compile("map", twice, types=("float32",), target="sm_90")
    publish(shared)
    for item in [shared, *shared.iterdir()]:
        give(item, TEACHER)
    before = listing(shared)
    learner_home = open_base / "learner"
    learner_home.mkdir()
    give(learner_home, LEARNER)

    def first_run() -> dict:
        cache = BuildCache(learner_home / "cache", shared=[shared])
        gpulab.cache.reset_default_cache(cache)
        build = gpulab.compile("map", twice, types=("float32",), target="sm_90")
        info = cache.info()
        return {"source": build.source, "sass": build.sass, "builds": info.builds,
                "shared": [info.shared[0].hits, info.shared[0].misses], "private": info.private.entries,
                "text": str(info), "html": info._repr_html_()}

    seen = as_user(LEARNER, first_run)
    assert seen["builds"] == 0 and seen["shared"] == [2, 0]  # the build and its disassembly
    assert seen["source"] == taught.source and seen["sass"] == taught.sass
    assert seen["private"] == 0  # a shared hit is not copied into the private folder
    shared_row = next(line for line in seen["text"].splitlines() if line.startswith("shared"))
    assert str(shared) in shared_row and "2 hits, 0 misses" in shared_row and "read-only" in shared_row
    assert "<td style='text-align:left'>2 hits, 0 misses</td>" in seen["html"]
    assert listing(shared) == before


@needs_root
def test_an_entry_learners_cannot_read_is_a_miss_with_a_warning(open_base: Path) -> None:
    shared = open_base / "cache"
    teach(shared, keys=(KEY, OTHER))
    entry(shared, OTHER).chmod(0o600)  # the teacher forgot to publish this one
    learner_home = open_base / "learner"
    learner_home.mkdir()
    give(learner_home, LEARNER)

    def run() -> dict:
        import warnings

        cache = BuildCache(learner_home / "cache", shared=[shared])
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            readable = get(cache).meta["tag"]
            rebuilt = get(cache, key=OTHER, build=Builder(make_artifact("mine"))).meta["tag"]
        return {"tags": [readable, rebuilt], "warnings": cache_warnings(record),
                "shared": [cache.info().shared[0].hits, cache.info().shared[0].rejected]}

    seen = as_user(LEARNER, run)
    assert seen["tags"] == [KEY, "mine"] and seen["shared"] == [1, 1]
    assert len(seen["warnings"]) == 1 and "Permission denied" in seen["warnings"][0]
    assert OTHER in inspect_shared(shared).private


# ---------------------------------------------------------------- read-only, order


@needs_root
def test_a_shared_folder_is_never_written_evicted_cleared_or_touched(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    teach(shared, keys=(KEY, OTHER))
    before = listing(shared)
    cache = BuildCache(tmp_path / "mine", shared=[shared], max_bytes=0)  # evicts every private entry
    assert get(cache).meta["tag"] == KEY
    builder = Builder()
    assert get(cache, key="ef" * 32, build=builder) is builder.result
    cache.clear()
    assert listing(shared) == before
    assert [layer.name for layer in cache.info().layers] == ["memory", "private", "shared"]
    assert (cache.info().shared[0].hits, cache.info().shared[0].misses) == (1, 1)


@needs_root
def test_lookups_go_memory_then_private_then_shared(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    teach(shared, keys=(KEY, OTHER))
    mine = tmp_path / "mine"
    get(BuildCache(mine, shared=()), build=Builder(make_artifact("private copy")))

    cache = BuildCache(mine, shared=[shared])
    assert get(cache).meta["tag"] == "private copy"
    assert get(cache, key=OTHER).meta["tag"] == OTHER
    assert get(cache).meta["tag"] == "private copy"
    info = cache.info()
    assert (info.memory.hits, info.memory.misses) == (1, 2)
    assert (info.private.hits, info.private.misses) == (1, 1)
    assert (info.shared[0].hits, info.shared[0].misses, info.builds) == (1, 0, 0)


@needs_root
def test_several_shared_folders_from_the_environment(tmp_path: Path, cache_dir: Path, monkeypatch) -> None:
    first, second = tmp_path / "course", tmp_path / "department"
    teach(first, keys=(KEY,))
    teach(second, keys=(OTHER,), owner=0)
    monkeypatch.setenv("GPULAB_SHARED_CACHE_DIR", os.pathsep.join([str(first), "", str(second)]))
    cache = BuildCache()
    assert get(cache, key=OTHER).meta["tag"] == OTHER and get(cache).meta["tag"] == KEY
    assert [(s.location, s.hits, s.misses) for s in cache.info().shared] == [(first, 1, 1), (second, 1, 0)]

    monkeypatch.setenv("GPULAB_SHARED_CACHE_DIR", str(tmp_path / "missing"))
    with pytest.warns(CacheWarning, match="check GPULAB_SHARED_CACHE_DIR"):
        assert "No such file" in BuildCache().info().shared[0].state


# ---------------------------------------------------------------- who is trusted


@needs_root
@pytest.mark.parametrize("owner", [STRANGER, LEARNER])
def test_a_shared_entry_of_a_third_user_is_refused(tmp_path: Path, owner: int) -> None:
    shared = tmp_path / "shared"
    teach(shared)
    give(entry(shared), owner)
    cache, builder = BuildCache(tmp_path / "mine", shared=[shared]), Builder()
    with pytest.warns(CacheWarning, match=f"written by uid {owner}, whom this folder does not trust"):
        assert get(cache, build=builder) is builder.result
    assert cache.info().shared[0].rejected == 1
    assert inspect_shared(shared).bad.keys() == {KEY}


@needs_root
def test_shared_entries_of_root_or_the_folders_owner_are_trusted(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    teach(shared, keys=(KEY, OTHER))
    give(entry(shared, OTHER), 0)
    cache = BuildCache(tmp_path / "mine", shared=[shared])
    assert get(cache).meta["tag"] == KEY and get(cache, key=OTHER).meta["tag"] == OTHER
    assert inspect_shared(shared).ok


@pytest.mark.parametrize("mode", [0o775, 0o757, 0o1777], ids=oct)
def test_a_shared_folder_others_can_write_is_refused(tmp_path: Path, mode: int) -> None:
    shared = tmp_path / "shared"
    teach(shared, owner=None)
    shared.chmod(mode)
    cache, message = refused_shared(shared, tmp_path / "mine")
    assert f"mode {mode:04o}" in message
    builder = Builder()
    assert get(cache, build=builder) is builder.result and builder.calls == 1


def test_a_shared_entry_others_can_write_is_refused(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    teach(shared, owner=None)
    entry(shared).chmod(0o666)
    cache, builder = BuildCache(tmp_path / "mine", shared=[shared]), Builder()
    with pytest.warns(CacheWarning, match="writable by its group and others"):
        assert get(cache, build=builder) is builder.result


@needs_root
@pytest.mark.parametrize("case", ["parent writable by all", "parent of a stranger", "symlink in a writable folder",
                                  "stranger's folder in a sticky folder"])
def test_a_shared_folder_on_a_path_others_can_change_is_refused(tmp_path: Path, case: str) -> None:
    parent = tmp_path / "srv"
    parent.mkdir(mode=0o755)
    shared = parent / "cache"
    teach(shared)
    if case == "parent writable by all":
        parent.chmod(0o777)
        named, reason = shared, f"reached through {parent}, which is writable by its group and others"
    elif case == "parent of a stranger":
        give(parent, STRANGER)
        named, reason = shared, f"reached through {parent}, which belongs to uid {STRANGER}"
    elif case == "symlink in a writable folder":
        links = tmp_path / "links"
        links.mkdir()
        links.chmod(0o777)
        named = links / "course-cache"
        named.symlink_to(shared)
        reason = f"reached through {links}"
    else:  # anyone may create a name in /tmp: the stranger created the folder the setting names
        parent.chmod(0o1777)
        give(shared, STRANGER)
        for item in shared.iterdir():
            give(item, STRANGER)
        named, reason = shared, f"belongs to uid {STRANGER} and sits in {parent}, where anyone may create names"
    _, message = refused_shared(named, tmp_path / "mine")
    assert reason in message
    assert reason in inspect_shared(named).refused


@needs_root
def test_a_root_folder_in_a_sticky_folder_is_trusted(tmp_path: Path) -> None:
    sticky = tmp_path / "tmp"
    sticky.mkdir()
    sticky.chmod(0o1777)
    shared = sticky / "cache"
    teach(shared, owner=0)
    assert get(BuildCache(tmp_path / "mine", shared=[shared])).meta["tag"] == KEY


# ---------------------------------------------------------------- publish and inspect


def test_publish_opens_the_folder_to_readers_and_drops_bad_entries(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    cache = BuildCache(shared, shared=())
    for key in (KEY, OTHER):
        get(cache, key=key, build=Builder())
    data = bytearray(entry(shared, OTHER).read_bytes())
    data[-1] ^= 1
    entry(shared, OTHER).write_bytes(bytes(data))

    report = publish(shared)
    assert report.ok and report.good == [KEY] and not report.private
    assert sorted(p.name for p in shared.iterdir()) == ["CACHEDIR.TAG", f"{KEY}.gpulab"]
    assert shared.stat().st_mode & 0o777 == 0o755 and entry(shared).stat().st_mode & 0o777 == 0o644
    assert str(report).splitlines()[:3] == [f"published: {shared}: mode 0700 -> 0755",
                                            "published: 1 entries: mode -> 0644",
                                            "published: removed 1 entries that failed checks"]
    assert "1 good entries, 0 refused" in str(report)
    assert json.loads(json.dumps(report.good)) == [KEY]
    assert publish(shared).changed == []  # nothing left to change


def test_publish_leaves_a_folder_the_cache_did_not_make_as_it_was(tmp_path: Path) -> None:
    """The issue: `mkdir -m 700 d; echo s > d/secret; python -m gpulab.cache publish d` left d at 0755."""
    mine = tmp_path / "d"
    mine.mkdir(mode=0o700)
    (mine / "secret").write_text("s")
    with pytest.raises(gpulab.cache.trust.Untrusted, match="not a folder gpulab's build cache made"):
        publish(mine)
    assert mine.stat().st_mode & 0o777 == 0o700
    BuildCache(mine, shared=())  # a cache over it: used, but never marked as gpulab's while it holds other files
    with pytest.raises(gpulab.cache.trust.Untrusted, match="not a folder gpulab's build cache made"):
        publish(mine)
    assert mine.stat().st_mode & 0o777 == 0o700


def test_publish_refuses_a_cache_folder_that_holds_other_files_and_changes_nothing(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    get(BuildCache(shared, shared=()), build=Builder())
    (shared / "notes.txt").write_text("private")
    (shared / "sub").mkdir()
    with pytest.raises(gpulab.cache.trust.Untrusted, match=r"holds 2 file\(s\) that are not build cache entries "
                                                           r"\(notes.txt, sub\).*nothing was changed"):
        publish(shared)
    assert shared.stat().st_mode & 0o777 == 0o700 and entry(shared).stat().st_mode & 0o777 == 0o600


def test_an_empty_folder_made_beforehand_becomes_a_cache_folder(tmp_path: Path) -> None:
    made = tmp_path / "course"
    made.mkdir(mode=0o700)
    get(BuildCache(made, shared=()), build=Builder())
    assert publish(made).good == [KEY]


def test_publish_refuses_a_folder_that_is_not_ones_own(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        publish(tmp_path / "missing")
    (tmp_path / "open").mkdir(mode=0o777)
    (tmp_path / "open").chmod(0o777)
    with pytest.raises(gpulab.cache.trust.Untrusted, match="writable by its group and others"):
        publish(tmp_path / "open")

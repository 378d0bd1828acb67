"""The memory layer is bounded: the least recently used values go first (issue 12, item 6)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from cachekit import Builder, get, make_artifact
from threads import run_threads

from gpulab.cache import BuildCache
from gpulab.cache.buildcache import DEFAULT_MEMORY_ENTRIES

KEYS = [f"{i:02x}" * 32 for i in range(10)]


def fill(cache: BuildCache, keys) -> dict[str, Builder]:
    builders = {key: Builder(make_artifact(key)) for key in keys}
    for key, builder in builders.items():
        get(cache, key=key, build=builder)
    return builders


def test_memory_holds_at_most_its_bound(tmp_path: Path) -> None:
    cache = BuildCache(tmp_path / "cache", shared=(), memory_entries=3)
    builders = fill(cache, KEYS)
    info = cache.info()
    assert info.memory_entries == 3 and info.disk_entries == len(KEYS)
    assert all(get(cache, key=key) is builders[key].result for key in KEYS[-3:])  # memory hits: same objects
    assert cache.info().memory.hits == 3
    assert BuildCache(tmp_path / "other", shared=()).info().memory.bound == str(DEFAULT_MEMORY_ENTRIES)


def test_an_evicted_value_comes_back_from_disk_as_a_new_object(tmp_path: Path) -> None:
    cache = BuildCache(tmp_path / "cache", shared=(), memory_entries=2)
    builders = fill(cache, KEYS[:3])
    again = get(cache, key=KEYS[0])
    assert again is not builders[KEYS[0]].result and again.blobs == builders[KEYS[0]].result.blobs
    info = cache.info()
    assert (info.private.hits, info.builds, info.memory_entries) == (1, 3, 2)


def test_a_hit_makes_a_value_the_most_recently_used(tmp_path: Path) -> None:
    cache = BuildCache(tmp_path / "cache", shared=(), memory_entries=2)
    first, second, third = KEYS[:3]
    builders = fill(cache, [first, second])
    assert get(cache, key=first) is builders[first].result  # now `second` is the least recently used
    fill(cache, [third])
    assert get(cache, key=first) is builders[first].result
    assert get(cache, key=second) is not builders[second].result  # dropped: read back from disk
    assert cache.info().private.hits == 1


def test_without_a_folder_an_evicted_value_is_rebuilt(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("no folder can be made under a file")
    with pytest.warns(Warning, match="memory only"):
        cache = BuildCache(tmp_path / "afile" / "cache", shared=(), memory_entries=1)
    fill(cache, KEYS[:2])
    rebuild = Builder()
    assert get(cache, key=KEYS[0], build=rebuild) is rebuild.result
    assert rebuild.calls == 1 and cache.info().builds == 3 and cache.info().memory_entries == 1
    assert get(cache, key=KEYS[0]) is rebuild.result


def test_single_flight_holds_while_other_keys_churn_the_memory(tmp_path: Path) -> None:
    cache = BuildCache(tmp_path / "cache", shared=(), memory_entries=1)
    slow = Builder(delay=0.2)
    lock, started = threading.Lock(), []

    def work():
        with lock:
            started.append(None)
            i = len(started)
        if i % 2:
            return get(cache, key=KEYS[0], build=slow)
        return get(cache, key=KEYS[i // 2 % 9 + 1], build=Builder())

    results = run_threads(16, work)
    assert slow.calls == 1 and all(not isinstance(r, BaseException) for r in results)
    assert cache.info().memory_entries == 1


def test_a_bound_below_one_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="memory_entries must be >= 1, got 0"):
        BuildCache(tmp_path / "cache", shared=(), memory_entries=0)

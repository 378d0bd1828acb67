"""Tests of gpulab.cache: single-flight, disk format and recovery, eviction, fallbacks."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from cachekit import KEY, OTHER, REPO, Artifact, Builder, cache_warnings, decode, encode, get, make_artifact
from threads import run_threads

import gpulab.cache as cache_mod
from gpulab.cache import BuildCache, CacheInfo, CacheWarning

# ---------------------------------------------------------------- single flight


def test_concurrent_cold_calls_build_once(cache_dir: Path) -> None:
    cache = BuildCache()
    builder = Builder(delay=0.2)
    results = run_threads(8, lambda: get(cache, build=builder))
    assert builder.calls == 1
    assert all(result is results[0] for result in results)
    assert isinstance(results[0], Artifact)
    info = cache.info()
    assert (info.memory.misses, info.builds, info.disk_hits, info.memory_entries) == (8, 1, 0, 1)
    assert get(cache) is results[0]


def test_failed_build_reaches_every_waiter_and_is_not_cached(cache_dir: Path) -> None:
    cache = BuildCache()
    error = ValueError("nvrtc said no")
    builder = Builder(error, delay=0.2)
    results = run_threads(8, lambda: get(cache, build=builder))
    assert builder.calls == 1
    assert all(result is error for result in results)
    assert cache.info().disk_entries == 0 and cache.info().memory_entries == 0

    retry = Builder()
    assert get(cache, build=retry) is retry.result
    assert retry.calls == 1


def test_recursive_build_is_an_error(cache_dir: Path) -> None:
    cache = BuildCache()
    with pytest.raises(RuntimeError, match="asked for that value again"):
        get(cache, build=lambda: get(cache))


def test_invalid_key_is_rejected(cache_dir: Path) -> None:
    with pytest.raises(ValueError, match="cache key"):
        get(BuildCache(), key="../escape")


# ---------------------------------------------------------------- disk


def test_disk_round_trip_in_fresh_instance(cache_dir: Path) -> None:
    built = Builder()
    assert get(BuildCache(), build=built) is built.result

    fresh = BuildCache()
    loaded = get(fresh)
    assert loaded.meta == built.result.meta
    assert loaded.blobs == built.result.blobs
    assert get(fresh) is loaded
    info = fresh.info()
    assert (info.memory.hits, info.memory.misses, info.disk_hits, info.builds) == (1, 1, 1, 0)
    assert (info.disk_entries, info.memory_entries) == (1, 1)


def test_a_put_value_is_loaded_from_disk_and_not_kept_in_memory(cache_dir: Path) -> None:
    cache, artifact = BuildCache(), make_artifact("put")
    cache.put(KEY, artifact, encode=encode)
    assert cache.info().memory_entries == 0 and cache.info().disk_entries == 1
    loaded = get(cache)  # fail_build: no build
    assert (loaded.meta, loaded.blobs) == (artifact.meta, artifact.blobs) and cache.info().disk_hits == 1
    with pytest.raises(ValueError):
        cache.put("../escape", artifact, encode=encode)


def test_fresh_process_gets_disk_hit(cache_dir: Path) -> None:
    built = Builder()
    get(BuildCache(), build=built)
    child = f"""
import json
from gpulab.cache import cache_info, default_cache
def fail():
    raise SystemExit("builder called in the child")
entry = default_cache().get_or_build({KEY!r}, fail, encode=None,
                                     decode=lambda meta, blobs: (meta, {{k: v.hex() for k, v in blobs.items()}}))
info = cache_info()
print(json.dumps({{"entry": entry, "disk_hits": info.disk_hits, "builds": info.builds}}))
"""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    done = subprocess.run([sys.executable, "-c", child], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120, check=True)
    report = json.loads(done.stdout)
    assert (report["disk_hits"], report["builds"]) == (1, 0)
    meta, blobs = report["entry"]
    assert meta == built.result.meta
    assert {name: bytes.fromhex(data) for name, data in blobs.items()} == built.result.blobs


def test_file_format_is_self_describing(cache_dir: Path) -> None:
    artifact = make_artifact()
    get(BuildCache(), build=Builder(artifact))
    data = (cache_dir / f"{KEY}.gpulab").read_bytes()
    magic, version, header_len, _digest = struct.unpack_from(">8sHI32s", data)
    assert (magic, version) == (b"\x89GPULAB\n", 1)
    header = json.loads(data[46:46 + header_len])
    assert header["key"] == KEY and header["meta"] == artifact.meta
    assert [(b["name"], b["size"]) for b in header["blobs"]] == [
        (name, len(blob)) for name, blob in artifact.blobs.items()]
    assert data[46 + header_len:] == b"".join(artifact.blobs.values())


def test_directory_created_private_and_no_temp_files_left(cache_dir: Path) -> None:
    cache = BuildCache()
    for key in (KEY, OTHER):
        get(cache, key=key, build=Builder())
    assert cache_dir.stat().st_mode & 0o777 == 0o700
    assert sorted(p.name for p in cache_dir.iterdir()) == sorted([f"{KEY}.gpulab", f"{OTHER}.gpulab", "CACHEDIR.TAG"])
    assert (cache_dir / "CACHEDIR.TAG").read_bytes().startswith(b"Signature: 8a477f597d28d172789f06886806bc55\n")


def test_concurrent_writers_of_one_key_leave_a_valid_entry(cache_dir: Path) -> None:
    """Separate instances stand in for separate processes: each builds and writes the key."""
    caches = [BuildCache() for _ in range(8)]
    builders = [Builder(make_artifact(str(i)), delay=0.01) for i in range(8)]
    pairs = iter(zip(caches, builders))
    lock = threading.Lock()

    def write_own() -> Artifact:
        with lock:
            cache, builder = next(pairs)
        return get(cache, build=builder)

    results = run_threads(8, write_own)
    assert all(isinstance(result, Artifact) for result in results)
    assert [builder.calls for builder in builders] == [1] * 8
    loaded = get(BuildCache())
    assert loaded.blobs == builders[int(loaded.meta["tag"])].result.blobs
    assert [p.name for p in cache_dir.iterdir() if p.name != "CACHEDIR.TAG"] == [f"{KEY}.gpulab"]


# ---------------------------------------------------------------- recovery


def flip_byte(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))


def damage_blob(path: Path) -> None:
    flip_byte(path, path.stat().st_size - 10)


def damage_header(path: Path) -> None:
    flip_byte(path, 46 + path.read_bytes()[46:].index(b'"registers":32') + len('"registers":3'))


def truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:-100])


def truncate_to_prelude(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:20])


def random_bytes(path: Path) -> None:
    path.write_bytes(os.urandom(5000))


def empty(path: Path) -> None:
    path.write_bytes(b"")


def other_key(path: Path) -> None:
    get(BuildCache(), key=OTHER, build=Builder())
    shutil.copyfile(path.with_name(f"{OTHER}.gpulab"), path)


def future_version(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[8:10] = (99).to_bytes(2, "big")
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("damage, reason", [
    (damage_blob, "sha256 mismatch"),
    (damage_header, "sha256 mismatch"),
    (truncate, "sha256 mismatch"),
    (truncate_to_prelude, "truncated"),
    (empty, "truncated"),
    (random_bytes, "bad magic"),
    (other_key, "holds key"),
    (future_version, "format version 99"),
])
def test_bad_entry_warns_once_and_is_rebuilt(cache_dir: Path, damage, reason: str) -> None:
    get(BuildCache(), build=Builder())
    path = cache_dir / f"{KEY}.gpulab"
    damage(path)

    cache, rebuild = BuildCache(), Builder()
    with pytest.warns(CacheWarning) as record:
        assert get(cache, build=rebuild) is rebuild.result
        assert get(cache) is rebuild.result
    messages = cache_warnings(record)
    assert len(messages) == 1 and reason in messages[0] and str(path) in messages[0]
    assert rebuild.calls == 1

    assert get(BuildCache()).blobs == rebuild.result.blobs  # overwritten with a good entry: no warning


def test_failed_decode_warns_once_and_is_rebuilt(cache_dir: Path) -> None:
    get(BuildCache(), build=Builder())

    def strict_decode(meta: dict, blobs: dict) -> Artifact:
        raise KeyError("schema_version")

    cache, rebuild = BuildCache(), Builder()
    with pytest.warns(CacheWarning, match="decode failed") as record:
        assert cache.get_or_build(KEY, rebuild, encode=encode, decode=strict_decode) is rebuild.result
    assert len(cache_warnings(record)) == 1 and rebuild.calls == 1


def test_unrelated_files_are_ignored(cache_dir: Path) -> None:
    cache = BuildCache()
    (cache_dir / "notes.txt").write_bytes(os.urandom(100))
    (cache_dir / "sub.gpulab").mkdir()
    get(cache, build=Builder())
    assert cache.info().disk_entries == 1
    cache.clear()
    assert (cache_dir / "notes.txt").exists() and (cache_dir / "sub.gpulab").is_dir()
    assert cache.info().disk_entries == 0


# ---------------------------------------------------------------- fallbacks


def test_uncreatable_directory_falls_back_to_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "afile").write_text("a regular file, so no directory can be made under it")
    monkeypatch.setenv("GPULAB_CACHE_DIR", str(tmp_path / "afile" / "cache"))
    with pytest.warns(CacheWarning, match="memory only") as record:
        cache = BuildCache()
    assert len(cache_warnings(record)) == 1

    builder = Builder()
    assert get(cache, build=builder) is builder.result  # no further warning (they are errors here)
    assert get(cache, key=OTHER, build=builder) is builder.result
    assert get(cache) is builder.result
    info = cache.info()
    assert not info.writable and info.disk_entries == 0 and info.memory_entries == 2
    assert builder.calls == 2
    cache.put("cd" * 32, make_artifact("put"), encode=encode)  # nowhere to write it: nothing happens
    assert cache.info().disk_entries == 0 and cache.info().memory_entries == 2


def test_directory_lost_after_start_falls_back_to_memory(cache_dir: Path) -> None:
    cache = BuildCache()
    shutil.rmtree(cache_dir)
    cache_dir.write_text("replaced by a file")
    builder = Builder()
    with pytest.warns(CacheWarning, match="cannot write") as record:
        get(cache, build=builder)
        get(cache, key=OTHER, build=builder)
    assert len(cache_warnings(record)) == 1
    assert builder.calls == 2 and not cache.info().writable


# ---------------------------------------------------------------- eviction


def test_lru_eviction_keeps_the_bound(cache_dir: Path) -> None:
    get(BuildCache(), key="a1", build=Builder(make_artifact("a", 10_000)))
    entry_size = (cache_dir / "a1.gpulab").stat().st_size
    cache = BuildCache(max_bytes=int(2.5 * entry_size))
    get(cache, key="b2", build=Builder(make_artifact("b", 10_000)))
    os.utime(cache_dir / "a1.gpulab", (1_000, 1_000))  # a1 older than b2 ...
    os.utime(cache_dir / "b2.gpulab", (2_000, 2_000))
    assert get(BuildCache(), key="a1").meta["tag"] == "a"  # ... until this disk hit refreshes it

    get(cache, key="c3", build=Builder(make_artifact("c", 10_000)))
    assert sorted(p.name for p in cache_dir.iterdir() if p.name != "CACHEDIR.TAG") == ["a1.gpulab", "c3.gpulab"]
    info = cache.info()
    assert info.private.bytes <= info.max_bytes and info.disk_entries == 2


def test_max_bytes_from_environment(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPULAB_CACHE_MAX_BYTES", "12345")
    assert BuildCache().info().max_bytes == 12345
    monkeypatch.setenv("GPULAB_CACHE_MAX_BYTES", "lots")
    with pytest.warns(CacheWarning, match="GPULAB_CACHE_MAX_BYTES"):
        assert BuildCache().info().max_bytes == cache_mod.DEFAULT_MAX_BYTES
    with pytest.raises(ValueError):
        BuildCache(max_bytes=-1)


# ---------------------------------------------------------------- clear, info, default instance


def test_clear_empties_memory_and_disk(cache_dir: Path) -> None:
    cache = BuildCache()
    first = get(cache, build=Builder())
    get(cache, key=OTHER, build=Builder())

    cache.clear(disk=False)
    assert (cache.info().memory_entries, cache.info().disk_entries) == (0, 2)
    assert get(cache).blobs == first.blobs  # from disk

    cache.clear()
    assert (cache.info().memory_entries, cache.info().disk_entries) == (0, 0)
    rebuild = Builder()
    assert get(cache, build=rebuild) is rebuild.result and rebuild.calls == 1


def test_directory_resolution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GPULAB_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert BuildCache().info().directory == tmp_path / "xdg" / "gpulab"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert BuildCache().info().directory == tmp_path / "home" / ".cache" / "gpulab"
    assert BuildCache(tmp_path / "explicit").info().directory == tmp_path / "explicit"


def test_default_cache_reads_environment_on_first_use(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache_mod.reset_default_cache()
    cache = cache_mod.default_cache()
    assert cache is cache_mod.default_cache()
    assert cache.info().directory == cache_dir
    get(cache, build=Builder())
    assert cache_mod.cache_info().disk_entries == 1
    cache_mod.clear_cache()
    assert cache_mod.cache_info().disk_entries == 0 and cache_mod.cache_info().memory_entries == 0


def test_info_renders_as_text_and_html(tmp_path: Path) -> None:
    folder = tmp_path / "<b>cache</b>"
    cache = BuildCache(folder, shared=())
    get(cache, build=Builder())
    get(cache)
    info = cache.info()
    assert isinstance(info, CacheInfo)
    assert (info.memory.hits, info.memory.misses, info.disk_hits, info.builds) == (1, 1, 0, 1)
    lines = str(info).splitlines()
    assert lines[0].split() == ["layer", "where", "holds", "lookups", "state"]
    assert lines[1].startswith("memory") and "1 entries of 256" in lines[1] and "1 hits, 1 misses" in lines[1]
    assert lines[2].startswith("private") and str(folder) in lines[2] and "of 512.0 MiB" in lines[2]
    assert "0 hits, 1 misses" in lines[2] and lines[3].split() == ["builds", "1"]
    html = info._repr_html_()
    assert html.startswith("<table") and "&lt;b&gt;cache&lt;/b&gt;" in html and "<b>" not in html
    assert html.count("<tr>") == 1 + 3

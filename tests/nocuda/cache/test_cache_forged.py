"""Forged entries: a valid checksum around a hostile shape never crashes the load or the view (issue 14, item 9).

Every such entry is refused with one warning and rebuilt; the build that
comes back is the honest one, and it renders.
"""

from __future__ import annotations

import copy
import json
import os
import warnings
from pathlib import Path

import numpy as np
import pytest
from cachekit import KEY, Builder, cache_warnings, entry, get, read_entry, write_entry, write_raw_entry

import gpulab
from gpulab.cache import BuildCache, CacheWarning
from gpulab.cache.entry import MAX_DEPTH, MAX_ENTRY_BYTES, MAX_HEADER_BYTES
from gpulab.notebook.formatters import build_mimebundle


def twice(x):
    return x + x


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def header_with(meta_json: str = "{}", blobs_json: str = "[]", key: str = KEY) -> bytes:
    return f'{{"key": "{key}", "meta": {meta_json}, "blobs": {blobs_json}}}'.encode()


def assert_refused_and_rebuilt(folder: Path, reason: str) -> None:
    cache, rebuild = BuildCache(folder, shared=()), Builder()
    with pytest.warns(CacheWarning) as record:
        assert get(cache, build=rebuild) is rebuild.result
    messages = cache_warnings(record)
    assert len(messages) == 1 and reason in messages[0], messages
    assert get(BuildCache(folder, shared=())).blobs == rebuild.result.blobs  # replaced by a good entry


# ---------------------------------------------------------------- the example: deep JSON


def test_deeply_nested_json_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700)
    write_raw_entry(entry(folder), header_with(nested(200_000)))  # json.loads would hit the recursion limit
    assert_refused_and_rebuilt(folder, "header nested 200001 deep, more than 32")


def test_nesting_just_over_the_bound_is_refused_and_at_it_is_read(tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700)
    inside = MAX_DEPTH - 2  # the header object and its meta are two levels
    write_raw_entry(entry(folder), header_with(f'{{"x": {nested(inside)}}}'))
    assert get(BuildCache(folder, shared=())).meta == {"x": json.loads(nested(inside))}
    write_raw_entry(entry(folder), header_with(f'{{"x": {nested(inside + 1)}}}'))
    assert_refused_and_rebuilt(folder, f"nested {MAX_DEPTH + 1} deep")


def test_brackets_and_escaped_quotes_inside_strings_do_not_count_as_nesting(tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700)
    text = '[{\\"[[' * 10_000 + "\\\\"
    write_raw_entry(entry(folder), header_with(json.dumps({"note": json.loads(f'"{text}"')})))
    assert get(BuildCache(folder, shared=())).meta["note"].startswith('[{"[[')


# ---------------------------------------------------------------- hostile headers


HOSTILE_HEADERS = {
    "a list, not an object": (b"[1, 2]", "malformed header (expected exactly"),
    "an extra field": (header_with()[:-1] + b', "run": "rm -rf ~"}', "malformed header (expected exactly"),
    "no blobs field": (f'{{"key": "{KEY}", "meta": {{}}}}'.encode(), "malformed header (expected exactly"),
    "meta a list": (header_with("[]"), "meta must be an object"),
    "blobs an object": (header_with(blobs_json='{"cubin": 0}'), "blobs a short list"),
    "65 blobs": (header_with(blobs_json=json.dumps([{"name": str(i), "size": 0} for i in range(65)])),
                 "blobs a short list"),
    "size true": (header_with(blobs_json='[{"name": "cubin", "size": true}]'), "a size >= 0"),
    "size negative": (header_with(blobs_json='[{"name": "cubin", "size": -5}]'), "a size >= 0"),
    "size a float": (header_with(blobs_json='[{"name": "cubin", "size": 0.0}]'), "a size >= 0"),
    "size a string": (header_with(blobs_json='[{"name": "cubin", "size": "0"}]'), "a size >= 0"),
    "size 10**30": (header_with(blobs_json='[{"name": "cubin", "size": 1000000000000000000000000000000}]'),
                    "blob sizes do not add up"),
    "name a number": (header_with(blobs_json='[{"name": 7, "size": 0}]'), "a string name"),
    "two blobs of one name": (header_with(blobs_json='[{"name": "a", "size": 0}, {"name": "a", "size": 0}]'),
                              "two blobs of one name"),
    "a 5000-digit number": (header_with('{"n": ' + "9" * 5000 + "}"), "unreadable header"),
    "NaN": (header_with('{"n": NaN}'), "NaN is not JSON"),
    "-Infinity": (header_with('{"n": -Infinity}'), "-Infinity is not JSON"),
    "not UTF-8": (header_with('{"n": "\xff"}'.encode("latin-1").decode("latin-1")).replace(b"\xc3\xbf", b"\xff"),
                  "unreadable header"),
    "another key": (header_with(key="ef" * 32), "holds key"),
}


@pytest.mark.parametrize("header, reason", HOSTILE_HEADERS.values(), ids=HOSTILE_HEADERS.keys())
def test_hostile_header_with_a_valid_checksum_is_refused(tmp_path: Path, header: bytes, reason: str) -> None:
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700)
    write_raw_entry(entry(folder), header)
    assert_refused_and_rebuilt(folder, reason)


def test_header_length_beyond_the_file_or_the_bound_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700)
    write_raw_entry(entry(folder), header_with(), header_len=2**32 - 1)
    assert_refused_and_rebuilt(folder, "truncated (header cut short)")
    write_raw_entry(entry(folder), header_with()[:-1] + b" " * MAX_HEADER_BYTES + b"}")  # valid JSON, too big
    assert_refused_and_rebuilt(folder, f"more than any entry's ({MAX_HEADER_BYTES})")


def test_file_larger_than_any_entry_is_refused_without_reading_it(tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700)
    write_raw_entry(entry(folder), header_with())
    os.truncate(entry(folder), MAX_ENTRY_BYTES + 1)  # sparse: no disk used, and nothing must read it
    assert_refused_and_rebuilt(folder, f"more than any entry ({MAX_ENTRY_BYTES})")


# ---------------------------------------------------------------- decoders that trip


@pytest.mark.parametrize("error", [RecursionError("deep"), MemoryError(), TypeError("bad"), UnicodeDecodeError(
    "utf-8", b"\xff", 0, 1, "invalid start byte")], ids=lambda e: type(e).__name__)
def test_any_exception_of_a_decoder_warns_and_rebuilds(tmp_path: Path, error: Exception) -> None:
    folder = tmp_path / "cache"
    get(BuildCache(folder, shared=()), build=Builder())

    def decode(meta, blobs):
        raise error

    cache, rebuild = BuildCache(folder, shared=()), Builder()
    with pytest.warns(CacheWarning, match=f"decode failed \\({type(error).__name__}"):
        assert cache.get_or_build(KEY, rebuild, encode=lambda a: (a.meta, a.blobs), decode=decode) is rebuild.result


def test_an_interrupt_in_a_decoder_reaches_the_caller(tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    get(BuildCache(folder, shared=()), build=Builder())

    def decode(meta, blobs):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        BuildCache(folder, shared=()).get_or_build(KEY, Builder(), encode=None, decode=decode)


# ---------------------------------------------------------------- forged builds: the load and the view


@pytest.fixture(scope="module")
def honest(tmp_path_factory):
    """A real build and the entry files a cache writes for it and its disassembly (the view's)."""
    folder = tmp_path_factory.mktemp("honest")
    gpulab.cache.reset_default_cache(BuildCache(folder, shared=()))
    build = gpulab.compile("map", twice, types=("float32",), target="sm_90")
    build_mimebundle(build)
    gpulab.cache.reset_default_cache()
    return build, folder


def test_an_honest_entry_gives_back_the_line_maps_it_was_built_with(honest, tmp_path: Path, use_cache) -> None:
    build, honest_folder = honest
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700)
    for name in (build.key, build.key + "-sass"):
        (folder / f"{name}.gpulab").write_bytes(entry(honest_folder, name).read_bytes())
    cache = use_cache(BuildCache(folder, shared=()))
    loaded = gpulab.compile("map", twice, types=("float32",), target="sm_90")
    assert loaded.origin == "disk" and cache.info().builds == 0
    made, found = build.disassembled(), loaded.disassembled()
    assert loaded.ptx_keys == build.ptx_keys and found.keys == made.keys and found.offsets == made.offsets
    assert len(made.keys) > 50 and len(set(made.keys.values())) < len(made.keys)  # the table has fewer rows


def drop(meta, path):
    *parents, last = path
    for name in parents:
        meta = meta[name]
    del meta[last]


def put(value):
    def forge(meta, path):
        *parents, last = path
        for name in parents:
            meta = meta[name]
        meta[last] = value
    return forge


FORGED_BUILDS = {
    "registers a string": ("", put("many"), ("resources", "gpulab_map", "registers"),
                           "resources['gpulab_map'].registers: expected int, got str"),
    "spills a float": ("", put(1.5), ("resources", "gpulab_map", "spill_loads"), "spill_loads: expected int | None"),
    "target of floats": ("", put([9.0, 0]), ("target",), "a compute capability as two whole numbers"),
    "target of strings": ("", put(["9", "0"]), ("target",), "decode failed"),
    "geometry of strings": ("", put([256, "4", 2, 8]), ("geometry",), "geometry.vec: expected int, got str"),
    "first line true": ("", put(True), ("python_first_line",), "python_first_line: expected int, got bool"),
    "timings in words": ("", put({"nvrtc": "fast"}), ("timings",), "timings['nvrtc']: expected float, got str"),
    "kernels a number": ("", put(7), ("kernels",), "TypeError"),
    "an unknown option": ("", put(True), ("options", "run_as_root"), "'run_as_root' is not a build option"),
    "an extra resource": ("", put(1), ("resources", "gpulab_map", "evil"), "unexpected keyword argument 'evil'"),
    "no kernels": ("", drop, ("kernels",), "KeyError: 'kernels'"),
    "no options": ("", drop, ("options",), "KeyError: 'options'"),
    "no cubin": ("", drop, ("artifacts", "cubin"), "KeyError: 'cubin'"),
    "a register cap in words": ("", put("many"), ("register_cap",), "register_cap: expected int | None, got str"),
    "a dtype that is not one": ("", put(["zz9"]), ("inputs",), "decode failed"),
    "a deep dtype": ("", put([nested(25)]), ("inputs",), "decode failed"),
    "another build's key": ("", put("f" * 40), ("key",), "the value names key 'ffff"),
    "a key row that is a string": ("", put("cu:1"), ("ptx_key_table", 0), "a key table row is not a list"),
    "a key that is a number": ("", put([7]), ("ptx_key_table", 0), "expected str, got int"),
    "a key table cut short": ("", put([]), ("ptx_key_table",), "outside its table of 0"),
    "sass key table a number": ("-sass", put(5), ("key_table",), "TypeError"),
    "sass key table cut short": ("-sass", put([]), ("key_table",), "outside its table of 0"),
}


def _huge_row(pairs: bytes) -> bytes:
    return pairs[:8] + np.int64(2**40).tobytes() + pairs[16:]


FORGED_BLOBS = {  # the line maps' (line, row) pairs
    "ptx pairs cut short": ("", "ptx_keys", lambda pairs: pairs[:-3], "a blob of integer pairs has"),
    "a ptx row past the table": ("", "ptx_keys", _huge_row, "names a row outside its table"),
    "a negative sass row": ("-sass", "keys", lambda pairs: pairs[:8] + np.int64(-1).tobytes() + pairs[16:],
                            "names a row outside its table"),
    "sass offsets cut short": ("-sass", "offsets", lambda pairs: pairs[:-8], "a blob of integer pairs has"),
}


@pytest.mark.parametrize("suffix, forge, path, reason", FORGED_BUILDS.values(), ids=FORGED_BUILDS.keys())
def test_a_forged_build_is_refused_rebuilt_and_the_view_renders(honest, tmp_path: Path, use_cache, suffix, forge,
                                                                  path, reason) -> None:
    build, honest_folder = honest
    header, blobs = read_entry(entry(honest_folder, build.key + suffix))
    meta = copy.deepcopy(header["meta"])
    forge(meta, path)
    assert_forgery_refused(honest, tmp_path, use_cache, suffix, meta, blobs, reason)


@pytest.mark.parametrize("suffix, name, forge, reason", FORGED_BLOBS.values(), ids=FORGED_BLOBS.keys())
def test_a_forged_line_map_blob_is_refused_rebuilt_and_the_view_renders(honest, tmp_path: Path, use_cache, suffix,
                                                                          name, forge, reason) -> None:
    build, honest_folder = honest
    header, blobs = read_entry(entry(honest_folder, build.key + suffix))
    assert_forgery_refused(honest, tmp_path, use_cache, suffix, header["meta"],
                           {**blobs, name: forge(blobs[name])}, reason)


def assert_forgery_refused(honest, tmp_path: Path, use_cache, suffix: str, meta, blobs, reason: str) -> None:
    """The honest build's entries with the one of ``suffix`` replaced: one warning naming ``reason``, one
    rebuild, and the same build and view as the honest one."""
    build, honest_folder = honest
    key = build.key + suffix
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700)
    for name in (build.key, build.key + "-sass"):
        (folder / f"{name}.gpulab").write_bytes(entry(honest_folder, name).read_bytes())
    write_entry(entry(folder, key), key, meta, blobs)

    cache = use_cache(BuildCache(folder, shared=()))
    with pytest.warns(CacheWarning) as record:
        again = gpulab.compile("map", twice, types=("float32",), target="sm_90")
        bundle = build_mimebundle(again)
    messages = cache_warnings(record)
    assert len(messages) == 1 and "decode failed" in messages[0] and reason in messages[0], messages
    assert cache.info().builds == 1 and cache.info().private.rejected == 1
    assert again.source == build.source and again.sass == build.sass
    assert "__global__" in bundle["text/plain"] or "gpulab_map" in bundle["text/plain"]


def test_a_forged_build_of_the_right_types_renders_escaped(honest, tmp_path: Path, use_cache) -> None:
    """Fields a trusted writer could set to anything of the right type: the view escapes them."""
    build, honest_folder = honest
    header, blobs = read_entry(entry(honest_folder, build.key))
    meta = {**header["meta"], "name": "<img src=x onerror=alert(1)>", "comment": "an unknown field is ignored"}
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700)
    (folder / f"{build.key}-sass.gpulab").write_bytes(entry(honest_folder, build.key + "-sass").read_bytes())
    write_entry(entry(folder, build.key), build.key, meta, blobs)

    use_cache(BuildCache(folder, shared=()))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = gpulab.compile("map", twice, types=("float32",), target="sm_90")
        html = build_mimebundle(again)["text/html"]
    assert again.name == meta["name"]
    assert "<img" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html

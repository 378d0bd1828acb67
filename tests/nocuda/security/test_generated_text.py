"""Security 2: user text reaches generated C++ only as checked identifiers or escaped comments."""

import io
import re

import numpy as np
import pytest

import gpulab
from gpulab import cxx

INCLUDE = 'a\n#include "/etc/hostname"\n'


def _loaded(dtype: np.dtype) -> np.dtype:
    """``dtype`` as it comes back from a data file (np.save / np.load, no pickle)."""
    buffer = io.BytesIO()
    np.save(buffer, np.zeros(2, dtype), allow_pickle=False)
    buffer.seek(0)
    return np.load(buffer, allow_pickle=False).dtype


def _no_user_directive(source: str):
    """No line of the generated file is a preprocessor line that the templates did not write."""
    directives = [line for line in source.splitlines() if line.lstrip().startswith("#")]
    assert all(re.fullmatch(r"\s*#(define [A-Z_]+ .*|pragma unroll)", line) for line in directives), directives


def test_a_field_name_with_an_include_is_harmless():
    dtype = _loaded(np.dtype([(INCLUDE, np.float32), ("n", np.int32)], align=True))

    def positive(r: dtype) -> gpulab.bool_:
        return r["n"] > 0

    build = gpulab.compile("filter", positive, target="sm_90")  # NVRTC reads no file: the build succeeds
    _no_user_directive(build.source)
    assert "/etc/hostname" not in build.ptx
    assert '// a\\n#include "/etc/hostname"\\n: float32' in build.source  # kept, escaped, in a comment


AWKWARD_NAMES = ["class", "int", "pad0", "pad_end", "field1", "x__y", "_x", "é", "a b", "1x", "a\\",
                 "*/ int evil; /*", "x" * 40]


@pytest.mark.parametrize("name", AWKWARD_NAMES)
def test_field_names_that_are_not_plain_identifiers_are_renamed(name):
    dtype = np.dtype([(name, np.float32), ("field0", np.float32), ("ok", np.int32), ("w", np.int32)], align=True)
    element = gpulab.element_type(dtype)
    members = re.findall(r"^\s+\S[^;]*?\s(\w+)(?:\[\d+\])?;", element.definition, re.M)
    assert len(members) == len(set(members)), members  # no member named twice
    assert "ok" in members and "w" in members
    renamed = [line for line in element.definition.splitlines() if line.endswith(f"// {cxx.comment(name)}: float32")]
    assert len(renamed) == 1 and re.search(r" field\d+(\[\d+\])?;", renamed[0]), element.definition


def test_a_record_of_awkward_field_names_compiles():
    dtype = np.dtype([(name, np.int8) for name in AWKWARD_NAMES] + [("ok", np.int8), ("w", np.int16)])

    def positive(r: dtype) -> gpulab.bool_:
        return r["ok"] > 0

    build = gpulab.compile("filter", positive, target="sm_90")  # NVRTC accepts every member name
    _no_user_directive(build.source)


def test_records_with_the_same_field_names_and_other_layouts_get_their_own_struct():
    narrow = np.dtype([("x", np.float32)])
    wide = np.dtype([("x", np.float64)])

    def total(a: narrow, b: wide) -> np.float64:
        return a["x"] + b["x"]

    source = gpulab.compile("map", total, target="sm_90").source  # one file, both structs: no redefinition
    assert len(set(re.findall(r"struct alignas\(\d+\) (record_\w+)", source))) == 2


def test_uniform_and_function_names_outside_ascii_are_escaped():
    import linecache

    text = "α = 2.0\ndef dobbel_ø(x: gpulab.f32) -> gpulab.f32:\n    return x * α\n"
    linecache.cache["<unicode-names>"] = (len(text), None, text.splitlines(True), "<unicode-names>")
    namespace = {"gpulab": gpulab}
    exec(compile(text, "<unicode-names>", "exec"), namespace)
    build = gpulab.compile("map", namespace["dobbel_ø"], target="sm_90")
    assert build.source.isascii()
    assert "u0;  // \\u03b1" in build.source and "dobbel_\\xf8" in build.source


def test_a_captured_array_named_outside_ascii_is_renamed_and_escaped():
    import linecache

    text = "def läs(i: gpulab.i64) -> gpulab.f32:\n    return värden[i]\n"
    linecache.cache["<unicode-array>"] = (len(text), None, text.splitlines(True), "<unicode-array>")
    namespace = {"gpulab": gpulab, "värden": np.zeros(4, np.float32)}
    exec(compile(text, "<unicode-array>", "exec"), namespace)
    source = gpulab.compile("map", namespace["läs"], target="sm_90", iota=(True,)).source
    assert source.isascii()
    assert "Captured0 c0;  // v\\xe4rden" in source and "struct Captured0 {  // v\\xe4rden: float32[:]" in source


@pytest.mark.parametrize("text, expected", [
    ("plain", "plain"), ("new\nline", "new\\nline"), ("ends\\", "ends\\."), ("tab\t", "tab\\t"),
    ("é", "\\xe9"), ("*/", "*/"),
])
def test_comment_text_never_ends_a_comment_line(text, expected):
    assert cxx.comment(text) == expected
    assert "\n" not in cxx.comment(text) and not cxx.comment(text).endswith("\\")


@pytest.mark.parametrize("name, usable", [("x", True), ("value_1", True), ("class", False), ("a__b", False),
                                          ("_x", False), ("X" * 33, False), ("1a", False), ("a-b", False)])
def test_identifier_keeps_only_plain_c_names(name, usable):
    assert (cxx.identifier(name, "field0") == name) is usable

"""Kernels: element types from annotations, the purity check, uniforms and build keys."""

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import gpulab
from gpulab.compiler.pipeline import make_spec
from gpulab.errors import ImpureKernelError, KernelTypeError

STATE = []
scale = 2.0
offset = 1


def test_types_from_annotations_and_aliases():
    def f(a: gpulab.f32, b: np.int64, c: "float64") -> gpulab.bool_:
        return a < b

    k = gpulab.Kernel(f)
    assert [t.name for t in k.signature().args] == ["float32", "int64", "float64"]
    assert k.signature().result.name == "bool"


@pytest.mark.parametrize("spec, name", [
    ("f16", "float16"), ("c64", "complex64"), ("c128", "complex128"), ("u8", "uint8"),
    (np.uint64, "uint64"), ("bool", "bool"), (float, "float64"), (int, "int64"),
])
def test_every_numpy_type_has_a_cxx_storage(spec, name):
    element = gpulab.element_type(spec)
    assert element.name == name and element.cxx


def test_unknown_type_says_what_to_use():
    with pytest.raises(KernelTypeError, match="NumPy dtype"):
        gpulab.element_type("floaty")
    with pytest.raises(KernelTypeError, match="not supported on the GPU"):
        gpulab.element_type("U10")


def _impure_print(a):
    print(a)
    return a


def _impure_global_mutation(a):
    STATE[0] = a
    return a


def _impure_argument_mutation(a):
    a.value = 1
    return a


def _impure_global_statement(a):
    global offset
    offset = a
    return a


def _impure_unknown_call(a):
    return len(str(a))


def _impure_open(a):
    with open("x") as handle:
        return handle


def _impure_list_capture(a):
    return a + STATE[0]


def _plain_helper(a):
    return a


def _impure_plain_call(a):
    return _plain_helper(a)


@pytest.mark.parametrize("fn, needle, line", [
    (_impure_print, "`print`", 1),
    (_impure_global_mutation, r"mutate `STATE\[0\]`", 1),
    (_impure_argument_mutation, "mutate `a.value`", 1),
    (_impure_global_statement, "global", 1),
    (_impure_unknown_call, "`str`", 1),
    (_impure_open, "try/except|with", 1),
    (_impure_list_capture, "`STATE` is a list", 1),
    (_impure_plain_call, "decorate it with @gpulab.kernel", 1),
])
def test_impure_kernels_are_refused_with_their_line(fn, needle, line):
    with pytest.raises(ImpureKernelError, match=needle) as info:
        gpulab.Kernel(fn)
    assert info.value.location.line == fn.__code__.co_firstlineno + line
    assert __file__ in str(info.value)


def test_pure_calls_are_allowed():
    def f(a, b):
        return math.sqrt(abs(a)) + np.float32(b) + max(a, b) + math.pi

    assert gpulab.Kernel(f).uniforms == ()


def test_nested_kernels_are_called():
    @gpulab.kernel
    def square(x):
        return x * x

    def sum_of_squares(a, b):
        return square(a) + square(b)

    build = gpulab.compile("reduce", sum_of_squares, types="f64,f64", target="sm_90")
    assert build.operator_calls == 0 and "DMUL" in build.sass


def test_free_scalars_are_uniforms():
    def scaled(a, b):
        return a * scale + b * offset

    k = gpulab.Kernel(scaled)
    assert k.uniforms == ("scale", "offset")
    assert k.uniform_values() == (2.0, 1)


def test_constants_are_frozen():
    def scaled(a, b):
        return a * scale + b

    k = gpulab.Kernel(scaled, constants=("scale",))
    assert k.uniforms == ()


def test_uniform_value_does_not_change_the_key(monkeypatch):
    def scaled(a, b):
        return a * scale + b

    before = make_spec("map", scaled, types="f32,f32", target="sm_90").key
    monkeypatch.setitem(globals(), "scale", 3.5)
    after = make_spec("map", scaled, types="f32,f32", target="sm_90").key
    assert before == after
    monkeypatch.setitem(globals(), "scale", 3)  # an int: another uniform type, another key
    assert make_spec("map", scaled, types="f32,f32", target="sm_90").key != before


def test_uniform_is_a_kernel_parameter_not_a_constant():
    def scaled(a, b):
        return a * scale + b

    build = gpulab.compile("map", scaled, types="f32,f32", target="sm_90")
    assert "struct Uniforms {\n    double u_scale;\n};" in build.source  # a plain name needs no comment
    assert "2.0" not in build.sass and "0x40000000" not in build.ptx


def test_key_changes_with_what_changes_code():
    def f(a, b):
        return a + b

    def g(a, b):
        return a - b

    base = make_spec("reduce", f, types="f32,f32", target="sm_90")
    assert make_spec("reduce", g, types="f32,f32", target="sm_90").key != base.key
    assert make_spec("reduce", f, types="f64,f64", target="sm_90").key != base.key
    assert make_spec("reduce", f, types="f32,f32", target="sm_80").key != base.key
    assert make_spec("reduce", f, types="f32,f32", target="sm_90", lto=False).key != base.key
    assert make_spec("scan", f, types="f32,f32", target="sm_90").key != base.key



_KEY_SCRIPT = """
from gpulab.compiler.pipeline import make_spec
def add(a, b):
    return a + b
print(make_spec("reduce", add, types="f32,f32", target="sm_90").key)
"""


def test_a_changed_gpulab_rule_changes_every_key(tmp_path, source_checkout):
    """A cache made by older rules (a frontend's refusals, the tiles' halving) is not served by a source checkout
    whose version did not change: the key holds a digest of gpulab's Python sources."""
    script = tmp_path / "key.py"
    script.write_text(_KEY_SCRIPT)

    def key_of(package: Path) -> str:
        env = {**os.environ, "PYTHONPATH": str(package.parent)}
        return subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True,
                              text=True, check=True).stdout.strip()

    original = key_of(source_checkout)
    rule = source_checkout / "compiler" / "frontends" / "numba_cuda" / "signedness.py"
    rule.write_text(rule.read_text() + "\n# a changed rule\n")
    assert key_of(source_checkout) != original
    assert len(original) == 40


def test_functions_without_source_are_explained():
    namespace = {}
    exec("def f(a):\n    return a\n", namespace)
    with pytest.raises(KernelTypeError, match="needs the source"):
        gpulab.Kernel(namespace["f"])


def test_a_function_typed_at_the_python_prompt_says_what_to_do_instead():
    """Python's prompt (before 3.13) keeps no source; what is piped into ``python`` is read as the prompt reads it."""
    typed = "import gpulab\nfrom gpulab import f32\ndef double(x: f32) -> f32:\n    return x * f32(2)\n\n" \
            "gpulab.compile('map', double, target='sm_90')\n"
    shown = subprocess.run([sys.executable, "-i"], input=typed, capture_output=True, text=True, timeout=120,
                           env={**os.environ, "PYTHONPATH": str(Path(gpulab.__file__).parents[1])})
    if sys.version_info >= (3, 13) and "KernelTypeError" not in shown.stderr:
        pytest.skip("this Python's prompt keeps what is typed into it")
    assert "KernelTypeError: gpulab needs the source of `double`, and Python's prompt keeps none" in shown.stderr
    assert "put the function in a file and import or run it, or use IPython, a notebook" in shown.stderr


def test_varargs_are_refused():
    def f(*xs):
        return xs[0]

    with pytest.raises(KernelTypeError, match="plain positional parameters"):
        gpulab.Kernel(f)


LIMIT = 4.0


def test_key_follows_constants_and_nested_kernels(monkeypatch):
    def clipped(a, b):
        return min(a + b, LIMIT)

    frozen = make_spec("reduce", gpulab.Kernel(clipped, constants=("LIMIT",)), types="f32,f32", target="sm_90")
    monkeypatch.setitem(globals(), "LIMIT", 5.0)
    changed = make_spec("reduce", gpulab.Kernel(clipped, constants=("LIMIT",)), types="f32,f32", target="sm_90")
    assert frozen.key != changed.key  # a constant is part of the code

    @gpulab.kernel
    def inner(x):
        return x * 2

    def outer(a, b):
        return inner(a) + b

    before = make_spec("reduce", outer, types="f32,f32", target="sm_90").key

    @gpulab.kernel
    def inner(x):  # noqa: F811 - a new definition of the nested kernel
        return x * 3

    assert make_spec("reduce", outer, types="f32,f32", target="sm_90").key != before


def test_the_fingerprint_is_the_code_not_the_object(monkeypatch):
    def clipped(a, b):
        return min(a + b, LIMIT)

    assert gpulab.Kernel(clipped).fingerprint == gpulab.Kernel(clipped).fingerprint
    frozen = gpulab.Kernel(clipped, constants=("LIMIT",)).fingerprint
    assert frozen != gpulab.Kernel(clipped).fingerprint  # a frozen constant is code, a uniform is not
    monkeypatch.setitem(globals(), "LIMIT", 5.0)
    assert gpulab.Kernel(clipped).fingerprint == gpulab.Kernel(clipped).fingerprint
    assert gpulab.Kernel(clipped, constants=("LIMIT",)).fingerprint != frozen


def test_concurrent_compiles_of_one_new_spec_build_once():
    import threading

    def fresh(a, b):
        return a * 7 + b

    builds_before = gpulab.cache_info().builds
    results, barrier = [], threading.Barrier(8)

    def compile_it():
        barrier.wait()
        results.append(gpulab.compile("reduce", fresh, types="i32,i32", target="sm_80"))

    threads = [threading.Thread(target=compile_it) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert gpulab.cache_info().builds - builds_before == 2  # the build and its disassembly, once each
    # Builds are records: each call gets its own, holding the one build's artifacts.
    assert all(result.key == results[0].key and result.artifacts is results[0].artifacts for result in results)

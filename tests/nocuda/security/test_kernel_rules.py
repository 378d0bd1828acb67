"""Silent wrong results 5-7: no return, source edited after import, ``types=`` dropping the return type."""

import importlib
import sys
import textwrap

import numpy as np
import pytest

import gpulab
from gpulab.errors import KernelTypeError, SourceMismatchError
from gpulab.kernel import as_kernel


# --- 5: a kernel must return a value on every path ------------------------------------
def no_return(x: gpulab.f32) -> gpulab.f32:
    y = x + 1  # noqa: F841


def return_in_one_branch(x: gpulab.f32) -> gpulab.f32:
    if x > 0:
        return x


def bare_return(x: gpulab.f32) -> gpulab.f32:
    if x > 0:
        return
    return x


def loop_without_return(x: gpulab.f32) -> gpulab.f32:
    for _ in range(3):
        return x


@pytest.mark.parametrize("fn, needle", [
    (no_return, "can reach its end without returning"),  # the example: NaN on the host
    (return_in_one_branch, "can reach its end without returning"),
    (bare_return, "returns nothing here"),
    (loop_without_return, "can reach its end without returning"),
])
def test_a_path_without_a_value_is_refused_everywhere(fn, needle):
    with pytest.raises(KernelTypeError, match=needle):
        gpulab.map(fn, np.ones(3, np.float32), device="host")
    with pytest.raises(KernelTypeError, match=needle):
        gpulab.compile("map", fn, target="sm_90")


def every_path_returns(x: gpulab.f32) -> gpulab.f32:
    if x > 0:
        return x
    elif x < -1:
        return -x
    else:
        return x * 0


def returns_from_a_loop_forever(x: gpulab.i32) -> gpulab.i32:
    while True:
        if x > 10:
            return x
        x = x + 3


@pytest.mark.parametrize("fn", [every_path_returns, returns_from_a_loop_forever])
def test_kernels_that_always_return_are_accepted(fn):
    assert gpulab.map(fn, np.arange(4, dtype=fn.__annotations__["x"]), device="host").size == 4


# --- 6: what gpulab compiles is what Python runs ------------------------------------------
@pytest.fixture
def module_file(tmp_path, monkeypatch):
    """Write a module, import it, and let the test edit the file afterwards."""
    monkeypatch.syspath_prepend(str(tmp_path))
    names = []

    def write(name: str, text: str, *, load: bool = True):
        path = tmp_path / f"{name}.py"
        path.write_text(textwrap.dedent(text))
        if load:
            names.append(name)
            sys.modules.pop(name, None)
            importlib.invalidate_caches()
            return importlib.import_module(name), path
        return None, path

    yield write
    for name in names:
        sys.modules.pop(name, None)


ORIGINAL = """
import gpulab

def scale(x: gpulab.f32) -> gpulab.f32:
    return x * 2
"""


def test_an_edited_function_is_refused(module_file):
    module, path = module_file("edited_body", ORIGINAL)
    path.write_text(ORIGINAL.replace("x * 2", "x * 3"))  # the example: the file changed after import
    with pytest.raises(SourceMismatchError, match="no longer matches the function Python runs"):
        gpulab.Kernel(module.scale)
    with pytest.raises(SourceMismatchError):
        gpulab.map(module.scale, np.ones(2, np.float32), device="host")


def test_lines_inserted_above_are_refused(module_file):
    module, path = module_file("shifted", ORIGINAL)
    path.write_text(ORIGINAL.replace("import gpulab\n", "import gpulab\n\ndef other(x: gpulab.f32) -> gpulab.f32:"
                                                         "\n    return x - 1\n"))
    with pytest.raises(SourceMismatchError):
        gpulab.Kernel(module.scale)


def test_a_blank_line_inserted_inside_is_refused(module_file):
    module, path = module_file("spread", ORIGINAL)
    path.write_text(ORIGINAL.replace("f32:\n", "f32:\n\n"))  # same code, other lines: the line map would lie
    with pytest.raises(SourceMismatchError):
        gpulab.Kernel(module.scale)


def test_edits_elsewhere_in_the_file_and_reloads_are_fine(module_file):
    module, path = module_file("appended", ORIGINAL)
    path.write_text(ORIGINAL + "\n\nLATER = 1\n")
    assert gpulab.Kernel(module.scale).name == "scale"
    path.write_text(ORIGINAL.replace("x * 2", "x * 3"))
    module = importlib.reload(module)
    assert gpulab.map(module.scale, np.ones(2, np.float32), device="host").tolist() == [3.0, 3.0]


CLOSURES = """
from __future__ import annotations
import numpy as np
import gpulab

def make(k):
    @gpulab.kernel
    def inner(x: gpulab.f32) -> gpulab.f32:
        return np.sqrt(x) * k
    return inner

lam = lambda a, b: a + b  # noqa: E731

class Holder:
    @staticmethod
    def method(x: "f32") -> "f32":
        return x + 1
"""


def test_closures_decorators_lambdas_and_methods_match_their_source(module_file):
    module, _ = module_file("shapes", CLOSURES)
    assert module.make(2.0).uniforms == ("k",)
    assert gpulab.Kernel(module.lam).name == "_lambda"
    assert gpulab.Kernel(module.Holder.method).signature().result.name == "float32"


# --- 7: types= keeps the declared return type ------------------------------------------------
def to_int(x) -> gpulab.i32:
    return x * 2


def test_types_keep_the_annotated_return_type():
    assert gpulab.Kernel(to_int, types="f32").signature().result.name == "int32"  # the example
    assert gpulab.Kernel(to_int).signature(types=("f32",)).result.name == "int32"
    assert gpulab.compile("map", to_int, types=["f64"], target="sm_90").result.name == "int32"
    assert gpulab.Kernel(to_int, types="f32 -> f64").signature().result.name == "float64"  # an explicit one wins
    assert as_kernel(to_int).declared is None  # the parameters have no types of their own


def test_the_magic_types_option_keeps_the_return_type():
    from gpulab.notebook import magics

    assert magics._kernel(to_int, "f32").signature().result.name == "int32"

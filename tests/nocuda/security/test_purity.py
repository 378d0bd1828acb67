"""Security 3: the purity check fails closed, before anything runs, on the host as on the device."""

import cmath
import math
import numbers
import os
import sys
import types

import numpy as np
import pytest

import gpulab
from gpulab.compiler import frontends
from gpulab.errors import FrontendUnsupportedError, GpulabError, ImpureKernelError, KernelNameError
from gpulab.options import FRONTENDS
from gpulab.purity import CMATH_FUNCTIONS, MATH_FUNCTIONS, NUMPY_UFUNCS

CALLS = []
m = os  # a module under another name


def _record(x):
    CALLS.append(x)
    return x


recording_ufunc = np.frompyfunc(_record, 1, 1)
system_ufunc = np.frompyfunc(os.system, 1, 1)


class EvilFloat(np.float64):
    def __new__(cls, value):
        CALLS.append(value)
        return super().__new__(cls, value)


class EvilNumber(numbers.Number):
    def __add__(self, other):
        CALLS.append(other)
        return other

    __radd__ = __add__


evil_number = EvilNumber()
evil_float = type("EvilPythonFloat", (float,), {"__add__": lambda self, other: CALLS.append(other) or other})(1.0)
lazy = types.ModuleType("lazy")
lazy.__getattr__ = lambda name: CALLS.append(name) or math.sqrt


def frompyfunc_system(x):
    return system_ufunc(x)


def frompyfunc_recording(x):
    return recording_ufunc(x)


def module_alias_method(x):
    return m.system(x)


def module_attribute_read(x):
    return x + len(m.environ)


def module_alias_local(x):
    n = np
    return n.sqrt(x)


def dunder_attribute(x):
    return x.__class__(x)


def dunder_read(x):
    return x + len(x.__class__.__mro__)


def scalar_subclass_call(x):
    return EvilFloat(x)


def number_subclass_uniform(x):
    return x + evil_number


def float_subclass_uniform(x):
    return x + evil_float


def module_getattr(x):
    return lazy.sqrt(x)


def private_attribute(x):
    return x + np._NoValue


def random_function(x):
    return x + np.random.random()


def not_a_ufunc(x):
    return np.clip(x, 0, 1)


def vectorized(x):
    return np.vectorize(_record)(x)


def format_string(x):
    return len(f"{x}")


def list_display(x):
    return [x][0]


def io_builtin_value(x):
    p = print
    return x


def getattr_builtin(x):
    return getattr(x, "real")


def sys_read(x):
    return x + sys.maxsize


@pytest.mark.parametrize("fn, needle", [
    (frompyfunc_system, "may not call `system_ufunc`"),  # the example
    (frompyfunc_recording, "may not call `recording_ufunc`"),
    (module_alias_method, "may not call `m.system`"),
    (module_attribute_read, "may not read `m.environ`"),  # the example
    (module_alias_local, "`np` is a module"),
    (dunder_attribute, "method `.__class__"),
    (dunder_read, "may not read `.__class__`"),
    (scalar_subclass_call, "free variable `EvilFloat` is a type|may not call `EvilFloat`"),
    (number_subclass_uniform, "`evil_number` is a EvilNumber"),
    (float_subclass_uniform, "`evil_float` is a EvilPythonFloat"),
    (module_getattr, "`lazy.sqrt` is no function gpulab knows"),
    (private_attribute, "private"),
    (random_function, "may not (read|call) `np.random.random`"),
    (not_a_ufunc, "may not call `np.clip`"),
    (vectorized, "may not call `np.vectorize"),
    (format_string, "format strings"),
    (list_display, "build a list"),
    (io_builtin_value, "`print`"),
    (getattr_builtin, "`getattr` is a built-in a kernel may not use"),
    (sys_read, "may not read `sys.maxsize`"),
])
def test_what_is_not_known_pure_is_refused_before_anything_runs(fn, needle):
    CALLS.clear()
    with pytest.raises(ImpureKernelError, match=needle) as info:
        gpulab.Kernel(fn)
    assert info.value.location.line > fn.__code__.co_firstlineno  # the body's line, not the def
    assert CALLS == []  # the check ran nothing: no __getattr__, no __new__, no ufunc


@pytest.mark.parametrize("primitive, args", [("map", ()), ("filter", ()), ("reduce", (0.0,)), ("scan", ())])
def test_the_host_never_runs_a_refused_kernel(primitive, args):
    """Where numba cannot compile, the host used to interpret the function, side effects included."""
    CALLS.clear()

    def op(a, b):
        return recording_ufunc(a + b)

    fn = op if primitive in ("reduce", "scan") else frompyfunc_recording
    with pytest.raises(ImpureKernelError):
        getattr(gpulab, primitive)(fn, np.arange(4.0), *args, device="host")
    assert CALLS == []


def pure_everything(x):
    return (math.sqrt(abs(x)) + cmath.sqrt(x).real + np.sqrt(x) + np.float32(x) + gpulab.f32(x) + math.pi
            + np.inf * 0 + max(x, 1.0) + x.real + x.conjugate())


def test_known_pure_functions_constants_and_value_attributes_are_allowed():
    kernel = gpulab.Kernel(pure_everything)
    assert kernel.uniforms == ()
    assert set(kernel.analysis.attributes) == {"math.sqrt", "cmath.sqrt", "np.sqrt", "np.float32", "gpulab.f32",
                                               "math.pi", "np.inf"}


def test_an_undefined_name_is_a_name_error():
    def f(x):
        return x + undefined_thing  # noqa: F821

    with pytest.raises(KernelNameError, match="name `undefined_thing` is not defined") as info:
        gpulab.Kernel(f)
    assert isinstance(info.value, NameError) and not isinstance(info.value, ImpureKernelError)


def test_a_module_attribute_is_resolved_once_and_bound_by_value():
    """The compiled function reads no module at run time: rebinding np.sqrt later changes nothing."""
    def root(x):
        return np.sqrt(x)

    compiled = gpulab.Kernel(root).parametrized(lambda k: k)
    assert "np" not in compiled.__globals__ and set(compiled.__globals__["__builtins__"]) <= {
        "abs", "min", "max", "int", "float", "bool", "complex", "round", "pow", "divmod", "range", "len"}
    assert compiled(4.0) == 2.0


def test_a_rebound_module_function_makes_a_new_check():
    namespace = {"np": np}
    exec_source = "def root(x):\n    return np.sqrt(x)\n"
    import linecache

    linecache.cache["<rebound>"] = (len(exec_source), None, exec_source.splitlines(True), "<rebound>")
    exec(compile(exec_source, "<rebound>", "exec"), namespace)
    from gpulab.kernel import as_kernel

    checked = as_kernel(namespace["root"])
    assert as_kernel(namespace["root"]) is checked
    fake_numpy = types.ModuleType("numpy")
    fake_numpy.sqrt = recording_ufunc
    namespace["np"] = fake_numpy
    with pytest.raises(ImpureKernelError):
        as_kernel(namespace["root"])


def _compiles_for_the_device(source: str, namespace: dict, types_: str, frontend: str = "numba-cuda"):
    import linecache

    name = f"<device-{abs(hash(source))}>"
    linecache.cache[name] = (len(source), None, source.splitlines(True), name)
    exec(compile(source, name, "exec"), namespace)
    kernel = gpulab.Kernel(namespace["f"], types=types_)
    signature = kernel.signature()
    return frontends.lower(kernel, signature.args, (), result=None, target=gpulab.Target(9, 0),
                           options=gpulab.BuildOptions(lineinfo=False, frontend=frontend))


@pytest.mark.parametrize("frontend", [pytest.param(name, marks=pytest.mark.skipif(
    name not in frontends.installed(), reason=f"{name} is not installed")) for name in FRONTENDS])
@pytest.mark.parametrize("module, names", [("math", MATH_FUNCTIONS), ("cmath", CMATH_FUNCTIONS),
                                           ("np", NUMPY_UFUNCS)])
def test_every_allowed_function_compiles_for_the_device(module, names, frontend):
    """What the check allows, each frontend lowers (or the frontend maps), or numba-cuda-mlir refuses by name
    (gpulab.compiler.frontends.numba_cuda_mlir.UNSUPPORTED_UFUNCS): host and device accept the same calls."""
    failures = []
    for name in sorted(names):
        function = getattr({"math": math, "cmath": cmath, "np": np}[module], name)
        arity = 2 if name in ("atan2", "copysign", "fmod", "hypot", "ldexp", "pow", "remainder", "rect") or (
            isinstance(function, np.ufunc) and function.nin == 2) else 1
        value = "c128" if module == "cmath" and name != "rect" else (
            "i64" if name in ("bitwise_and", "bitwise_or", "bitwise_xor", "invert", "left_shift", "right_shift")
            else "f64")
        second = "i64" if name == "ldexp" else value
        params = "x, y" if arity == 2 else "x"
        source = f"def f({params}):\n    return {module}.{name}({params})\n"
        try:
            _compiles_for_the_device(source, {module: {"math": math, "cmath": cmath, "np": np}[module]},
                                     ",".join([value, second][:arity]), frontend)
        except FrontendUnsupportedError as exc:
            if f"calls {module}.{name}, which numba-cuda-mlir 0.6 does not compile" not in str(exc):
                failures.append(f"{module}.{name}: {str(exc).splitlines()[0]}")
        except GpulabError as exc:
            failures.append(f"{module}.{name}: {str(exc).splitlines()[0]}")
    assert failures == []


def test_numpy_ufuncs_without_a_device_implementation_are_mapped():
    """np.sqrt and np.exp failed in numba-cuda with a bare `<ufunc 'sqrt'>`."""
    for name in frontends.DEVICE_EQUIVALENTS:
        assert name.__name__ in NUMPY_UFUNCS

    def f(x: gpulab.f32) -> gpulab.f32:
        return np.sqrt(x) + np.exp(x)

    build = gpulab.compile("map", f, target="sm_90")
    assert "MUFU.RSQ" in build.sass or "MUFU.SQRT" in build.sass or "sqrt" in build.ptx
    assert "MUFU.EX2" in build.sass


def test_a_ufunc_the_device_lacks_is_refused_at_check_time():
    def f(x):
        return np.cbrt(x)

    with pytest.raises(ImpureKernelError, match="numba-cuda has no cbrt"):
        gpulab.Kernel(f)

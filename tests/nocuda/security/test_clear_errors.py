"""Crashes and unclear errors 9-10: a gpulab error that says what is wrong, never a raw internal exception."""

import linecache
import re

import numpy as np
import pytest
from IPython.core.error import UsageError

import gpulab
from gpulab.errors import GpulabError, ImpureKernelError, KernelNameError, KernelTypeError, LimitError, NestingError
from gpulab.primitives import call

factor = 2.0
count = 3


def _function(text: str, name: str, namespace=None):
    """A function defined from ``text`` with its source in linecache (as a notebook cell has)."""
    filename = f"<clear-errors-{name}-{abs(hash(text))}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    namespace = {"gpulab": gpulab, "np": np, **(namespace or {})}
    exec(compile(text, filename, "exec"), namespace)
    return namespace[name]


@pytest.mark.parametrize("terms", [700, 790])
def test_a_long_expression_is_checked_and_run(terms):
    """A ~700-term expression raised RecursionError in the purity checker."""
    fn = _function("def long(x: gpulab.f32) -> gpulab.f32:\n    return " + " + ".join(["x"] * terms) + "\n", "long")
    assert gpulab.map(fn, np.ones(2, np.float32), device="host").tolist() == [terms, terms]


@pytest.mark.parametrize("terms", [900, 1200])
def test_a_too_deep_expression_says_how_to_split_it(terms):
    fn = _function("def long(x: gpulab.f32) -> gpulab.f32:\n    return " + " + ".join(["x"] * terms) + "\n", "long")
    with pytest.raises(NestingError, match="split it into several assignments") as info:
        gpulab.Kernel(fn)
    assert info.value.location.line == 2


def test_a_long_expression_compiles_for_the_device():
    fn = _function("def long(x: gpulab.f32) -> gpulab.f32:\n    return " + " * ".join(["x"] * 700) + "\n", "long")
    assert gpulab.compile("map", fn, target="sm_90").sass


# --- limits: long names, large kernels, deep calls and mapped inputs, refused before any compiler runs ------
@pytest.mark.parametrize("where", ["def long(NAME: gpulab.f64) -> gpulab.f64:\n    return NAME\n",
                                   "def long(x: gpulab.f64) -> gpulab.f64:\n    NAME = x\n    return NAME\n",
                                   "def long(x: gpulab.f64) -> gpulab.f64:\n    return x + NAME\n"])
def test_a_name_longer_than_the_limit_is_refused_before_any_compiler(where):
    """A 5000-character parameter name: LLVM IR parsing error on the host, NVVM's ERROR_INVALID_IR on sm_90."""
    fn = _function(where.replace("NAME", "p" * 5000), "long", {"p" * 5000: 1.0})
    for attempt in (lambda: gpulab.Kernel(fn), lambda: gpulab.map(fn, np.ones(2), device="host"),
                    lambda: gpulab.compile("map", fn, target="sm_90")):
        with pytest.raises(LimitError, match="the name `pppppppppppppppppppp...` is 5,000 characters long; a "
                                             "kernel's names may have up to 255"):
            attempt()
    fine = _function(where.replace("NAME", "q" * 255), "long", {"q" * 255: 1.0})
    assert gpulab.map(fine, np.ones(2), device="host").tolist() in ([1.0, 1.0], [2.0, 2.0])


def test_a_kernel_larger_than_the_limit_is_refused_when_it_is_checked():
    """A host map of a 10,000-line function was still typing after 600 s (numba's time grows with the square)."""
    body = "".join(f"    y = y * 1.0001 + {i}.5\n" for i in range(10_000))
    fn = _function("def huge(x: gpulab.f32) -> gpulab.f32:\n    y = x\n" + body + "    return y\n", "huge")
    for attempt in (lambda: gpulab.Kernel(fn), lambda: gpulab.map(fn, np.ones(2, np.float32), device="host"),
                    lambda: gpulab.compile("map", fn, target="sm_90")):
        with pytest.raises(LimitError, match=r"`huge` has 110,019 syntax nodes \(10,003 lines\); a kernel may have "
                                             r"up to 10,000.*Split it into @gpulab.kernel functions") as info:
            attempt()
        assert info.value.location.line == 1


def _chain(depth: int):
    """Kernels k0 .. k{depth-1}, each calling the one before; the last."""
    text = "@gpulab.kernel\ndef k0(x: gpulab.f64) -> gpulab.f64:\n    return x + 1.0\n" + "".join(
        f"@gpulab.kernel\ndef k{i}(x: gpulab.f64) -> gpulab.f64:\n    return k{i - 1}(x) + 1.0\n"
        for i in range(1, depth))
    return _function(text, f"k{depth - 1}")


def test_kernels_calling_kernels_deeper_than_the_limit_are_refused_at_the_call_that_goes_past():
    """A chain of 60 went past Python's recursion limit inside numba-cuda, told as a function with too many branches."""
    assert gpulab.compile("map", _chain(20), target="sm_90", lineinfo=False).sass
    with pytest.raises(LimitError, match=r"`k20` calls kernels that call kernels 20 deep; kernels may call each other "
                                         r"up to 19 deep"):
        _chain(21)


def inc(x: gpulab.i64) -> gpulab.i64:
    return x + 1


def _mapped(depth: int):
    found = gpulab.iota(3)
    for _ in range(depth):
        found = gpulab.mapped(inc, found)
    return found


def test_mapped_inputs_nested_deeper_than_the_limit_are_refused_as_they_are_made():
    """``mapped()`` nested about 1000-1500 deep raised RecursionError."""
    assert gpulab.map(inc, _mapped(32), device="host").tolist() == [33, 34, 35]
    with pytest.raises(LimitError, match="mapped `inc` would nest mapped inputs 33 deep; they may nest up to 32"):
        _mapped(1200)


def test_the_mapped_class_checks_what_mapped_checks():
    kernel = gpulab.Kernel(inc)
    with pytest.raises(KernelTypeError, match="a mapped input is made from a gpulab.Kernel; got function"):
        gpulab.Mapped(inc, (np.ones(3),), (), None)
    with pytest.raises(KernelTypeError, match=r"`inc` declares \(int64\) -> int64"):
        gpulab.Mapped(kernel, (np.ones(3, np.int64),), kernel.declared.args, gpulab.element_type(np.float32))
    with pytest.raises(KernelTypeError, match="input 0 of mapped `inc` holds float64, but `inc` takes int64"):
        gpulab.Mapped(kernel, (np.ones(3),), kernel.declared.args, kernel.declared.result)


def scaled(x: gpulab.f64) -> gpulab.f64:
    return x * factor


@pytest.mark.parametrize("value, needle", [
    ("two", "uniform `factor` of `scaled` now holds a str"),  # the issue's example
    (np.ones(3), "now holds a ndarray"),
    ([1.0], "now holds a list"),
    (None, "now holds a NoneType"),
])
def test_a_uniform_rebound_to_something_else_says_which(monkeypatch, value, needle):
    assert gpulab.map(scaled, np.ones(2), device="host").tolist() == [2.0, 2.0]  # a first call
    monkeypatch.setitem(globals(), "factor", value)
    with pytest.raises(KernelTypeError, match=needle):
        gpulab.map(scaled, np.ones(2), device="host")
    with pytest.raises(KernelTypeError, match=needle):
        gpulab.compile("map", scaled, target="sm_90")


def counted(x: gpulab.i64) -> gpulab.i64:
    return x + count


@pytest.mark.parametrize("value", [2**63, -(2**63) - 1, 10**30])
def test_a_uniform_that_does_not_fit_says_which_value(monkeypatch, value):
    monkeypatch.setitem(globals(), "count", value)
    with pytest.raises(KernelTypeError, match=rf"uniform `count` of `counted` = {value} does not fit in int64"):
        gpulab.map(counted, np.ones(2, np.int64), device="host")


@pytest.mark.parametrize("annotation", ["'not a type'", "'os.system(1)'", "'np.float32()'", "'undefined_name'"])
def test_a_string_annotation_that_is_not_a_type_is_a_type_error(annotation):
    fn = _function(f"def f(x: {annotation}) -> gpulab.f32:\n    return x\n", "f")
    with pytest.raises(KernelTypeError, match="is not an element type"):
        gpulab.Kernel(fn)


def test_string_annotations_are_never_evaluated():
    calls = []
    fn = _function("def f(x: 'record(1)') -> 'f32':\n    return x\n", "f", {"record": calls.append})
    with pytest.raises(KernelTypeError):
        gpulab.Kernel(fn)
    assert calls == []


def test_postponed_annotations_name_types():
    fn = _function("from __future__ import annotations\ndef f(x: np.float32, y: gpulab.i32) -> f64:\n"
                   "    return x + y\n", "f", {"f64": np.float64})
    assert str(gpulab.Kernel(fn).signature()) == "(float32, int32) -> float64"


@pytest.mark.parametrize("body, needle", [
    ("return x + nothing_here", "name `nothing_here` is not defined"),
    ("return undefined_function(x)", "name `undefined_function` is not defined"),
])
def test_undefined_names_are_name_errors(body, needle):
    fn = _function(f"def f(x: gpulab.f32) -> gpulab.f32:\n    {body}\n", "f")
    with pytest.raises(KernelNameError, match=needle) as info:
        gpulab.Kernel(fn)
    assert isinstance(info.value, NameError) and info.value.location.line == 2


def test_a_missing_module_attribute_is_named():
    fn = _function("import math\ndef f(x: gpulab.f32) -> gpulab.f32:\n    return math.not_a_function(x)\n", "f")
    with pytest.raises(KernelNameError, match="`math.not_a_function` is not defined"):
        gpulab.Kernel(fn)
    fn = _function("def f(x: gpulab.f32) -> gpulab.f32:\n    return np.not_a_function(x)\n", "f")
    with pytest.raises(GpulabError, match="`np.not_a_function` is no function gpulab knows"):
        gpulab.Kernel(fn)


def test_every_error_on_the_way_is_a_gpulab_error():
    """Kernels the check refuses, whatever the reason, raise gpulab errors only."""
    bodies = ["return x.__class__", "return (lambda: x)()", "import os\n    return x", "return {x: 1}[x]",
              "return [i for i in range(3)][0]", "return x if x else undefined", "return print", "del x\n    return 1",
              "assert x\n    return x", "with x:\n        return x", "return x.tofile('f')"]
    for body in bodies:
        fn = _function(f"def f(x):\n    {body}\n", "f")
        with pytest.raises(GpulabError):
            gpulab.Kernel(fn)


# --- %%gpukernel and gpulab.bench arguments: which value is wrong, and what to give -----
MAGIC_CELL = "%%gpukernel reduce --target sm_90 {}\ndef add(a: i32, b: i32) -> i32:\n    return a + b\n"


@pytest.fixture(scope="module")
def shell():
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    for line in ("%load_ext gpulab", "from gpulab import i32"):
        assert shell.run_cell(line, store_history=False).success
    return shell


def _magic_error(shell, options: str) -> str:
    from IPython.utils.capture import capture_output

    with capture_output() as captured:
        result = shell.run_cell(MAGIC_CELL.format(options), store_history=False)
    error = result.error_in_exec  # a cell's error raises (Run All stops there) as a UsageError or a gpulab error
    assert error is None or isinstance(error, (UsageError, GpulabError)), repr(error)
    return captured.stderr + captured.stdout + ("" if error is None else str(error))


@pytest.mark.parametrize("options, needle", [
    ("--run inf", "a number of items must be a whole, positive, finite count (such as 1e6), not 'inf'"),
    ("--run 1e309", "finite count (such as 1e6), not '1e309'"),
    ("--bench 1e3,inf", "not 'inf'"),
    ("--run 2.5", "whole, positive, finite count"),
    ("--run ten", "must be a count (such as 1e6), not 'ten'"),
    ("--run 1e12", "1,000,000,000,000 items (int32) need about"),  # a MemoryError for 7 TiB before
    ("--initial 'abc' --run 10", "initial='abc' is a str, not a number"),
    ("--initial 0.5 --run 10", "initial=0.5 is not exactly an int32"),
    ("--initial [0,1] --run 10", "initial= must be one int32 value, not a list"),
    ("--run '10", "No closing quotation"),  # shlex's ValueError, raw (the property test found it)
])
def test_magic_arguments_say_which_value_is_wrong(shell, options, needle):
    said = _magic_error(shell, options)
    assert needle in said and "Traceback" not in said, said


@pytest.mark.parametrize("sizes, needle", [
    ([float("inf")], "each of sizes must be a whole, positive, finite count"),
    ([1e309], "not inf"),
    ([0], "not 0"),
    ([10**12], "1,000,000,000,000 items (int32) need about"),
])
def test_bench_sizes_say_which_value_is_wrong(sizes, needle):
    from gpulab.errors import ArgumentError

    def add(a: gpulab.i32, b: gpulab.i32) -> gpulab.i32:
        return a + b

    with pytest.raises(ArgumentError, match=re.escape(needle)):
        gpulab.bench(add, "reduce", sizes, devices=["host"])


def test_a_kernel_with_more_branches_than_numba_cuda_follows_says_to_split_it():
    """numba-cuda walks a function's blocks recursively: 500 `if`s in a row raised RecursionError inside it."""
    from gpulab.errors import FrontendError

    fn = _function("def branchy(x: gpulab.f32) -> gpulab.f32:\n    y = x\n"
                   + "".join(f"    if y > {i}:\n        y = y * 1.0001 + {i}.5\n" for i in range(500))
                   + "    return y\n", "branchy")
    for call in (lambda: gpulab.map(fn, np.ones(2, np.float32), device="host"),
                 lambda: gpulab.compile("map", fn, target="sm_90", lineinfo=False)):
        with pytest.raises(FrontendError, match=r"`branchy` is too large for numba-cuda.*Split it into several "
                                                r"@gpulab.kernel functions") as info:
            call()
        assert "maximum recursion depth" not in str(info.value)


def test_the_same_branches_split_into_kernels_compile():
    half = _function("@gpulab.kernel\ndef half(y: gpulab.f32) -> gpulab.f32:\n"
                     + "    if y > 1:\n        y = y * 0.5\n" * 100 + "    return y\n", "half")
    fn = _function("def split(x: gpulab.f32) -> gpulab.f32:\n    return half(half(half(half(half(x)))))\n", "split",
                   {"half": half})
    result = gpulab.map(fn, np.array([3e38, 0.25], np.float32), device="host")  # 3e38 is about 2**128
    assert 0.5 < result[0] <= 1 and result[1] == 0.25
    assert gpulab.compile("map", fn, target="sm_90", lineinfo=False).sass


# --- numba's refusals, said as what the kernel does wrong and how to fix it; host and sm_90 alike -----
def _refused_alike(fn, error, needle, *, line=None, primitive="map", inputs=(np.ones(2),)):
    """``fn`` is refused on the host and for sm_90 with ``error`` matching ``needle`` (at ``line`` of its text)."""
    for attempt in (lambda: call(primitive, fn, inputs, device="host"),
                    lambda: gpulab.compile(primitive, fn, target="sm_90", types=["f64"] * len(inputs))):
        with pytest.raises(error, match=needle) as info:
            attempt()
        assert "_gpulab" not in str(info.value) and "$phi" not in str(info.value)
        if line is not None:
            assert info.value.location.line == line


@pytest.mark.parametrize("text", [
    "def step(x: gpulab.f64) -> gpulab.f64:\n    return step(x - 1.0) if x > 0 else x\n",
    "@gpulab.kernel\ndef step(x: gpulab.f64) -> gpulab.f64:\n    return step(x - 1.0) if x > 0 else x\n",
])
def test_a_recursive_kernel_is_told_it_cannot_recurse(text):
    """A recursive kernel got "Untyped global name 'step'", or the advice to decorate it, which cannot help."""
    with pytest.raises(ImpureKernelError, match=r"`step` calls itself: a kernel may not be recursive.*Write the "
                                                r"repetition as a `while` or `for` loop") as info:
        _function(text, "step")
        gpulab.Kernel(_function(text, "step"))
    assert "decorate" not in str(info.value)


def test_kernels_calling_each_other_in_a_cycle_are_told_so():
    fn = _function("def ping(x: gpulab.f64) -> gpulab.f64:\n    return pong(x) if x > 0 else x\n"
                   "def pong(x: gpulab.f64) -> gpulab.f64:\n    return ping(x - 1.0)\n", "ping")
    with pytest.raises(ImpureKernelError, match="`pong` calls `ping` back: kernels may not call each other in a "
                                                "cycle") as info:
        gpulab.Kernel(fn)
    assert "decorate" not in str(info.value)


def test_a_librarys_function_is_not_advised_to_be_decorated():
    import statistics

    fn = _function("def mean(x: gpulab.f64) -> gpulab.f64:\n    return statistics.fmean(x)\n", "mean",
                   {"statistics": statistics})
    with pytest.raises(ImpureKernelError, match=r"`statistics.fmean` is a function of the library `statistics`, "
                                                r"which gpulab cannot check or compile") as info:
        gpulab.Kernel(fn)
    assert "decorate" not in str(info.value)


@pytest.mark.parametrize("body", ["return None", "y = None\n    return y", "return x if x > 0 else None",
                                  "y = None if x > 0 else True\n    return y"])
def test_none_in_a_kernel_is_refused_where_it_is_written(body):
    """A filter predicate returning None: "No definition for lowering _EmptyImplementationEntry('always
    inlined')..."; `y = None if ... else True` raised TypeError: expected bool, got None."""
    fn = _function(f"def keep(x: gpulab.f64) -> bool:\n    {body}\n", "keep")
    _refused_alike(fn, KernelTypeError, "None is none of them: give a value on every path \\(a filter's predicate "
                                        "returns False to leave an item out\\)", line=2, primitive="filter")


table = np.arange(4.0)


def test_a_float_index_names_the_array_and_says_to_convert_it():
    """A float index named gpulab's internal `_gpulab_read1`."""
    fn = _function("def gather(x: gpulab.f64) -> gpulab.f64:\n    return table[x]\n", "gather", {"table": table})
    _refused_alike(fn, gpulab.errors.FrontendError, re.escape("captured array `table` is read with an index of "
                                                              "type f64; its indices must be integers (or bools): "
                                                              "convert the index first, table[int(i)]"), line=2)


@pytest.mark.parametrize("body, needle", [
    ('return x if x > 0 else "a"', 'a value of `f` is a f64 on one path and a str "a" on another'),
    ("s = 0.0\n    for i in x:\n        s = s + i\n    return s", "a `for` loop of `f` goes over a f64; a kernel "
                                                                   "loops over range"),
    ("return divmod(x, 2.0)", r"`f` gives a UniTuple\(f64 x 2\) where a f64 is wanted"),
    ("return complex(x)", "`f` gives a c128 where a f64 is wanted"),
])
def test_numbas_typing_refusals_are_told_in_the_kernels_terms(body, needle):
    _refused_alike(_function(f"def f(x: gpulab.f64) -> gpulab.f64:\n    {body}\n", "f"), gpulab.errors.FrontendError,
                   needle)


@pytest.mark.parametrize("call, needle", [
    ("two(x)", r"`two` takes 2 arguments \(a, b\); this call gives 1"),  # "Cannot bind 'args=...' to signature"
    ("int(x, 2)", "`int` takes 1 argument; this call gives 2"),  # "too many values to unpack (expected 1)"
    ("x.conjugate(1)", "`.conjugate` takes 0 arguments; this call gives 1"),  # a bare AssertionError
    ("np.float32(x, 1)", "`np.float32` takes 1 argument; this call gives 2"),  # "there is no float32() for ()"
    ("pow(x, 2, 3)", "`pow` takes 2 arguments; this call gives 3"),
])
def test_a_call_with_the_wrong_number_of_arguments_says_how_many(call, needle):
    two = _function("@gpulab.kernel\ndef two(a: gpulab.f64, b: gpulab.f64) -> gpulab.f64:\n    return a + b\n", "two")
    fn = _function(f"def f(x: gpulab.f64) -> gpulab.f64:\n    return {call}\n", "f", {"two": two})
    with pytest.raises(KernelTypeError, match=needle):
        gpulab.Kernel(fn)


flags = np.array([10.0, 20.0], np.float16)


def test_a_bool_index_reads_item_0_or_1_on_the_host_as_on_the_device():
    """A float16 kernel reading a captured array at a bool failed on the host ("setting an array element with a
    sequence", said to be refused by the device too) while sm_90 compiled it: NumPy read the bool as a mask."""
    fn = _function("def pick(x: gpulab.f16) -> gpulab.f16:\n    return flags[x > 0]\n", "pick", {"flags": flags})
    picked = gpulab.map(fn, np.array([1, -1, 2], np.float16), device="host")  # float16: interpreted on the host
    assert picked.dtype == np.float16 and picked.tolist() == [20.0, 10.0, 20.0]
    assert gpulab.compile("map", fn, target="sm_90").result.name == "float16"


# --- public functions given what they do not take (tests/nocuda/test_properties.py found these) -----
def test_a_target_of_other_than_two_whole_numbers_says_so():
    """``gpulab.Target(None, [])`` raised TypeError: unhashable type; ``Target(9.0, 0)`` made a target 'sm_9.00'."""
    for major, minor in ((None, []), (9.0, 0), ("9", "0")):
        with pytest.raises(gpulab.errors.TargetError, match=r"Target takes a compute capability as two whole "
                                                             r"numbers, Target\(9, 0\) for sm_90"):
            gpulab.Target(major, minor)
    assert gpulab.Target(np.int64(9), np.int8(0)).arch == "sm_90"


@pytest.mark.parametrize("call, needle", [
    (lambda: gpulab.sort(np.arange(3), descending="no", device="host"), "descending= is True or False, not 'no'"),
    (lambda: gpulab.argsort(np.arange(3), descending=np.ones(3), device="host"), "descending= is True or False"),
    (lambda: gpulab.reduce(lambda a, b: a + b, np.arange(3), 0, associative=np.ones(3), device="host"),
     "associative= is True or False"),
    (lambda: gpulab.map(lambda a: a, np.arange(3), verify="yes", device="host"), "verify= is True or False"),
    (lambda: gpulab.clear_cache(memory=np.ones(3)), "memory= is True or False"),
    (lambda: gpulab.compile("map", lambda a: a, types="f32", target="sm_90", associative=None),
     "associative= is True or False, not None"),
])
def test_a_true_or_false_argument_is_true_or_false(call, needle):
    """``clear_cache(memory=np.ones(3))`` and ``associative=np.ones(3)`` raised NumPy's ValueError (the truth value
    of an array); ``sort(descending="no")`` sorted descending."""
    with pytest.raises(gpulab.errors.ArgumentError, match=re.escape(needle)):
        call()


@pytest.mark.parametrize("make, args", [(gpulab.make_sort, ("",)), (gpulab.make_argsort, ("MappedShape",)),
                                        (gpulab.make_sort_by_key, (np.int32, 0))])
def test_an_example_that_is_no_array_nor_element_type_says_what_to_pass(make, args):
    """``make_sort("")``: TypeError: data type '' not understood."""
    with pytest.raises(gpulab.errors.ArgumentError, match=r"an example of a call's inputs is an array or a dtype "
                                                          r"\(np.float32, 'f4', gpulab.f32\), not"):
        make(*args)


def test_a_type_given_as_an_input_is_refused_as_no_array():
    """``gpulab.argsort(np.float32, device="host")``: AttributeError: 'getset_descriptor' object has no attribute
    'newbyteorder'."""
    for call in (lambda: gpulab.argsort(np.float32, device="host"), lambda: gpulab.map(inc, np.int64, device="host")):
        with pytest.raises(GpulabError):
            call()


def test_functions_of_builds_say_what_to_pass():
    """``gpulab.diagnostics(None)`` and ``gpulab.line_costs(None)`` raised AttributeError."""
    from gpulab.errors import ArgumentError

    for function in (gpulab.diagnostics, gpulab.line_costs):
        with pytest.raises(ArgumentError, match=rf"gpulab.{function.__name__} takes a build \(what gpulab.compile "
                                                r"returns\), not None \(a NoneType\)"):
            function(None)
    build = gpulab.compile("map", inc, target="sm_90")
    with pytest.raises(ArgumentError, match="takes inputs= as a list of the arrays a run would pass, not 5"):
        gpulab.diagnostics(build, inputs=5)
    with pytest.raises(ArgumentError, match=r"inputs= are arrays \(with __cuda_array_interface__ or "
                                            r"__array_interface__\), not 'x'"):
        gpulab.diagnostics(build, inputs=["x"])
    assert gpulab.diagnostics(build, inputs=[np.arange(4)]) is not None


def test_the_ipython_hook_given_no_shell_says_to_load_the_extension():
    """``gpulab.load_ipython_extension(None)``: AttributeError: 'NoneType' object has no attribute 'register_magics'."""
    with pytest.raises(gpulab.errors.ArgumentError, match="run %load_ext gpulab in IPython or Jupyter instead"):
        gpulab.load_ipython_extension(None)


def test_a_sort_key_that_is_no_function_says_so():
    """``gpulab.make_argsort(np.float32, key=0)``: AttributeError: 'int' object has no attribute 'declared'."""
    for call in (lambda: gpulab.make_argsort(np.float32, key=0), lambda: gpulab.sort(np.arange(3), key=0,
                                                                                    device="host")):
        with pytest.raises(KernelTypeError, match="a kernel is made from a Python function, not int"):
            call()


def test_fold_orders_says_what_orders_and_exact_are():
    """``gpulab.fold_orders(fn, xs, 0, orders=None)``: TypeError: 'NoneType' object is not iterable."""
    from gpulab.errors import ArgumentError

    with pytest.raises(ArgumentError, match="fold_orders takes orders= as a list of 'sequential' and 'portable', not "
                                            "None"):
        gpulab.fold_orders(lambda a, b: a + b, np.ones(3), 0.0, orders=None)
    with pytest.raises(ArgumentError, match="fold_orders takes exact= as the exact result, a number, not"):
        gpulab.fold_orders(lambda a, b: a + b, np.ones(3), 0.0, exact=gpulab.iota(3))


@pytest.mark.parametrize("spec", ["0:", "01", "(2)x"])
def test_an_element_type_numpy_cannot_read_is_a_type_error(spec):
    """``gpulab.element_type("0:")`` raised NumPy's ValueError, ``element_type("01")`` a SyntaxError from the
    literal_eval NumPy reads a dtype string with."""
    with pytest.raises(KernelTypeError, match="is not an element type"):
        gpulab.element_type(spec)

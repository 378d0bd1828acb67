"""Property-based test of gpulab's public API (issue 39): each call returns the host reference's result or raises
a gpulab error (:mod:`gpulab.errors`); never another exception, never a hang.

Kernels come from the grammar of ``tests/property_kernels.py`` (typed Python functions over nine element types;
the value each should give computed there, in plain Python, as numba-cuda types it), inputs and arguments from
hypothesis. Every example runs under the host's time limit (``gpulab.host.time_limit``: a kernel whose loop
never ends must stop with KernelTimeoutError) and a watchdog that interrupts it after ``WALL_SECONDS``.

Profiles: ``ci`` (the default; derandomized, no example database, no shrinking: the same examples every run)
and ``thorough`` (ten times the examples, random, shrinking), chosen by ``GPULAB_HYPOTHESIS_PROFILE``.

Coverage (COVERED below; test_the_counts_in_this_docstring_hold checks them): gpulab exports 52 public
callables besides NumPy's 27 scalar types it names (``f32``, ``uint8``...);
the property tests call 52 of the 52.
``python -m gpulab.cache`` has 5 subcommands, all 5 covered; the other command line, IPython's
``%%gpukernel`` and ``%gpulab`` magics, 2 of 2. 59 of 59 in all.

Examples per run of the ``ci`` profile: EXAMPLES below (``arguments``: of each public callable), 418 in all.

What it found while being written, each fixed at its root with a regression test (and, with
tests/nocuda/test_promotion.py's every pair of element types, what that found):

- a float16 kernel, interpreted on the host, computed in NumPy's types where numba-cuda computes in others
  (``x * 0.1`` in float16, not float64: another value for 19,896 of the 63,488 finite float16 values;
  ``f16 + u8``, ``f16 // f16``); and the associativity probe, run the same way, warned of an operator the
  device computes exactly (an int32 difference that wraps in NumPy only): gpulab/interpreted.py;
- a host time limit counted numba compiling the item loop around each new kernel: a correct kernel on a
  loaded grading machine "did not finish" (test_interrupt.py);
- raw exceptions out of public functions given what they do not take: ``Target(None, [])``,
  ``clear_cache(memory=np.ones(3))``, ``diagnostics(None)``, ``line_costs(None)``,
  ``load_ipython_extension(None)``, ``make_sort("")``, ``make_argsort(t, key=0)``,
  ``argsort(np.float32)``, ``check(f, "map", xs, [1.0, None])``, ``element_type("01")``,
  ``fold_orders(f, xs, 0, orders=None)``, ``%gpulab '`` (a quote left open); and True-or-False arguments
  taken as truthy (``sort(descending="no")`` sorted descending) (test_clear_errors.py, test_grading.py).
"""

from __future__ import annotations

import _thread
import contextlib
import functools
import inspect
import itertools
import math
import os
import signal
import threading
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from property_kernels import UNDEFINED, define, evaluate, inputs, kernels, source, store

import gpulab
from gpulab.errors import GpulabError, KernelIndexError, KernelTimeoutError

settings.register_profile("ci", derandomize=True, database=None, deadline=None, print_blob=True,
                          phases=(Phase.explicit, Phase.generate), suppress_health_check=list(HealthCheck))
settings.register_profile("thorough", settings.get_profile("ci"), derandomize=False, phases=tuple(Phase))
PROFILE = os.environ.get("GPULAB_HYPOTHESIS_PROFILE", "ci")
SCALE = {"ci": 1, "thorough": 10}[PROFILE]
EXAMPLES = {"kernels": 60, "inputs": 40, "check": 25, "arguments": 4, "explain_diff": 40, "cache_cli": 30,
            "magics": 15}
"""Examples of each property test (``arguments``: of each public function) in the ``ci`` profile."""
HOST_SECONDS = 2.0
"""The host's time limit of each call (running time only)."""
WALL_SECONDS = 120.0
"""An example still running after this long is a hang."""


def examples(name: str):
    return settings(settings.get_profile(PROFILE), max_examples=EXAMPLES[name] * SCALE)


@pytest.fixture(autouse=True)
def ctrl_c_raises():
    """The watchdog's interrupt raises KeyboardInterrupt here (a pytest-xdist worker ignores SIGINT)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@contextlib.contextmanager
def bounded():
    """Run the block under the host's time limit; fail it, as a hang, when it runs past ``WALL_SECONDS``."""
    done = threading.Event()
    fired = []

    def watch():
        if not done.wait(WALL_SECONDS):
            fired.append(True)
            _thread.interrupt_main()

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    device = gpulab.current()
    try:
        with gpulab.host.time_limit(HOST_SECONDS), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    except KeyboardInterrupt:
        if fired:
            pytest.fail(f"a call ran past {WALL_SECONDS} s: a hang")
        raise
    finally:
        done.set()
        watcher.join()
        gpulab.use(device)  # a call of gpulab.use() given a device's name changes it


def outcome(call):
    """``call()``'s value, or the gpulab error it raised; any other exception fails the test as it is."""
    try:
        return call()
    except GpulabError as exc:
        return exc


def same(got, expected, signed_zeros: bool = True) -> bool:
    """Item by item, NaN equal to NaN (and -0.0 not to 0.0 unless ``signed_zeros`` is false), items ``UNDEFINED``
    in ``expected`` skipped."""
    got = np.asarray(got).ravel()
    if len(got) != len(expected):
        return False
    for g, e in zip(got.tolist(), expected):
        if e is UNDEFINED:
            continue
        e = e.item() if hasattr(e, "item") else e
        if isinstance(e, float) and math.isnan(e):
            if not (isinstance(g, float) and math.isnan(g)):
                return False
        elif g != e:
            return False
        elif signed_zeros and isinstance(e, float) and e == 0 and math.copysign(1, g) != math.copysign(1, e):
            return False
    return True


# --- kernels through the primitives ------------------------------------------------------------------------------
def fold(drawn, carry, items, keep=None):
    """``functools.reduce`` of the drawn kernel from ``carry``, each step stored (``keep`` collects the steps)."""
    for x in items:
        if carry is not UNDEFINED:
            carry = evaluate(drawn, carry, x)
        if carry is None:
            return None
        if keep is not None:
            keep.append(carry)
    return carry


def expected_of(primitive: str, drawn, xs, ys, initial, exclusive):
    """What the primitive gives: a list of values (``None`` when a call of the kernel never ends)."""
    if primitive == "map":
        values = [evaluate(drawn, *t) for t in zip(*xs)]
        return None if any(v is None for v in values) else values
    if primitive == "filter":
        keep = [evaluate(drawn, x) for x in xs[0]]
        return [x for x, k in zip(xs[0], keep) if k]
    if primitive == "reduce":
        result = fold(drawn, store(initial, drawn.type_name), xs[0])
        return None if result is None else [result]
    if primitive == "scan":
        items = list(xs[0])
        steps = []
        if initial is None:
            if not items:
                return []
            steps.append(items[0])
            result = fold(drawn, items[0], items[1:], steps)
        elif exclusive:
            steps.append(store(initial, drawn.type_name))
            result = fold(drawn, steps[0], items[:-1], steps)
            steps = steps[:len(items)]
        else:
            result = fold(drawn, store(initial, drawn.type_name), items, steps)
        return None if result is None else steps
    if primitive == "segmented_reduce":
        results = [fold(drawn, store(initial, drawn.type_name), xs[0][a:b]) for a, b in zip(ys, ys[1:])]
        return None if any(r is None for r in results) else results
    keys, values = xs  # reduce_by_key: runs of equal keys
    runs = [list(g) for _, g in itertools.groupby(zip(keys.tolist(), values), key=lambda kv: kv[0])]
    results = [fold(drawn, run[0][1], [v for _, v in run[1:]]) for run in runs]
    return None if any(r is None for r in results) else [*[run[0][0] for run in runs], *results]


@st.composite
def primitive_calls(draw, data):
    primitive = draw(st.sampled_from(["map", "filter", "reduce", "scan", "segmented_reduce", "reduce_by_key"]))
    arity = draw(st.integers(1, 3)) if primitive == "map" else 1 if primitive == "filter" else 2
    drawn = draw(kernels(arity=arity, result="bool" if primitive == "filter" else None))
    n = draw(st.integers(0, 12))
    xs = [inputs(drawn.type_name, n, data) for _ in range(arity if primitive == "map" else 1)]
    initial = inputs(drawn.type_name, 1, data)[0]
    ys = sorted(draw(st.lists(st.integers(0, n), min_size=1, max_size=4)))  # segment offsets
    if primitive == "reduce_by_key":
        xs = [np.sort(np.array(draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)), np.int32)), xs[0]]
    return primitive, drawn, xs, ys, initial, draw(st.booleans()), draw(st.sampled_from([None, "initial"]))


def call_primitive(primitive, fn, xs, ys, initial, exclusive, scan_initial):
    if primitive == "map":
        return gpulab.map(fn, *xs, device="host")
    if primitive == "filter":
        return gpulab.filter(fn, xs[0], device="host")
    if primitive == "reduce":
        return gpulab.reduce(fn, xs[0], initial, device="host")
    if primitive == "scan":
        return gpulab.scan(fn, xs[0], initial if scan_initial else None, exclusive=exclusive, device="host")
    if primitive == "segmented_reduce":
        return gpulab.segmented_reduce(fn, xs[0], np.array(ys, np.int64), initial, device="host")
    keys, values = gpulab.reduce_by_key(fn, xs[0], xs[1], device="host")
    return np.concatenate([keys.astype(object), values.astype(object)])


@examples("kernels")
@given(data=st.data())
def test_a_drawn_kernel_through_a_primitive_gives_the_reference_or_a_gpulab_error(data):
    primitive, drawn, xs, ys, initial, exclusive, scan_initial = data.draw(primitive_calls(data))
    text = source(drawn)
    fn = define(text)
    with bounded():
        got = outcome(lambda: call_primitive(primitive, fn, xs, ys, initial, exclusive, scan_initial))
    if primitive == "scan" and exclusive and not scan_initial:
        return  # an exclusive scan with no initial value: what gpulab says of it is all there is to check
    expected = expected_of(primitive, drawn, xs, ys, initial if primitive != "scan" or scan_initial else None,
                           exclusive)
    if expected is None:
        assert isinstance(got, KernelTimeoutError), f"{text}\n{primitive}: {got!r}"
        return
    assert not isinstance(got, GpulabError), f"{text}\n{primitive} of {xs}: {got!r}"
    assert same(got, expected), f"{text}\n{primitive} of {xs} (offsets {ys}, initial {initial!r}):\n{got}\n{expected}"


# --- iota, mapped and captured arrays ----------------------------------------------------------------------------
def inc(i: gpulab.i64) -> gpulab.i64:
    return i + 1


def read(i: gpulab.i64) -> gpulab.f32:
    return table[i] + table[-1] * gpulab.f32(0.5)


table = np.zeros(1, np.float32)

SIZES = st.one_of(st.integers(0, 20), st.sampled_from([-1, 2**63, 2**63 - 1, 1.5, "3", None, np.int64(4), True]))
STARTS = st.one_of(st.integers(-20, 20), st.sampled_from([2**63 - 3, -(2**63), 2**64, 0.5, "0", None, np.uint8(2)]))


@examples("inputs")
@given(data=st.data())
def test_iota_mapped_and_captured_inputs_give_the_reference_or_a_gpulab_error(data, monkeypatch):
    n, start = data.draw(SIZES), data.draw(STARTS)
    form = data.draw(st.sampled_from(["iota", "mapped", "captured"]))
    captured = np.array(data.draw(st.lists(st.floats(-8, 8, width=32), max_size=6)), np.float32)
    monkeypatch.setitem(globals(), "table", captured)
    depth = data.draw(st.integers(1, 3))
    with bounded():
        def run():
            indices = gpulab.iota(n, start)
            if form == "iota":
                return gpulab.map(inc, indices, device="host")
            if form == "mapped":
                value = indices
                for _ in range(depth):
                    value = gpulab.mapped(inc, value)
                return gpulab.map(inc, value, device="host")
            return gpulab.map(read, indices, device="host")

        got = outcome(run)
    whole = isinstance(n, (int, np.integer)) and isinstance(start, (int, np.integer))
    n, start = (int(n), int(start)) if whole else (n, start)
    if not (whole and 0 <= n < 2**63 and -(2**63) <= start and start + max(n, 1) - 1 < 2**63):
        assert isinstance(got, GpulabError), f"iota({n!r}, {start!r}) gave {got!r}"
        return
    if n > 10**6:
        assert isinstance(got, GpulabError)  # stored on the host: more memory than there is
        return
    items = np.arange(start, start + n, dtype=np.int64) if n else np.zeros(0, np.int64)
    if form == "iota":
        assert not isinstance(got, GpulabError) and np.array_equal(got, items + 1), got
    elif form == "mapped":
        assert not isinstance(got, GpulabError) and np.array_equal(got, items + depth + 1), got
    elif n == 0:
        assert not isinstance(got, GpulabError) and got.size == 0, got
    elif all(-len(captured) <= i < len(captured) for i in items):
        expected = captured[items] + captured[-1] * np.float32(0.5)
        assert not isinstance(got, GpulabError) and np.array_equal(got, expected), (got, expected)
    else:
        assert isinstance(got, KernelIndexError), got


# --- grading -----------------------------------------------------------------------------------------------------
@examples("check")
@given(data=st.data())
def test_check_passes_exactly_the_right_answers(data):
    learner = data.draw(kernels(arity=1, types=("f64", "i32", "u8", "f16")))
    # a model solution that fails is the exercise's error, raised: the model here always finishes
    model = data.draw(st.one_of(st.just(learner), kernels(arity=1, types=(learner.type_name,), loops=False))
                      .filter(lambda k: k.form != "forever"))
    xs = inputs(learner.type_name, data.draw(st.integers(1, 8)), data)
    learner_fn, model_fn = define(source(learner)), define(source(model, "g"), "g")
    given_values = data.draw(st.booleans()) and UNDEFINED not in [evaluate(model, x) for x in xs]
    with bounded():
        checked = outcome(lambda: gpulab.check(learner_fn, "map", xs, model_fn if not given_values
                                               else [evaluate(model, x) for x in xs], timeout=HOST_SECONDS))
    assert isinstance(checked, gpulab.Checked), checked  # a learner's mistake is a failed check, not an error
    mine = [evaluate(learner, x) for x in xs]
    theirs = [evaluate(model, x) for x in xs]
    if None in mine or None in theirs:
        assert not checked.passed and "did not finish" in checked.message, checked
    elif UNDEFINED not in mine and UNDEFINED not in theirs:
        # a grade compares values: -0.0 is 0.0 there
        assert checked.passed == same(mine, theirs, signed_zeros=False), (source(learner), source(model), xs, checked)
    assert str(checked).startswith("passed: " if checked.passed else "failed: ")


# --- every public function, given any arguments ------------------------------------------------------------------
def identity(x):
    return x


def pair(a: gpulab.f32, b: gpulab.f32) -> gpulab.f32:
    return a + b


JUNK = st.one_of(
    st.sampled_from([None, 0, -1, 3, 2**70, 1.5, math.nan, math.inf, True, "", "x", "map", "reduce", "host",
                     "sm_90", "cuda:9", b"FFMA", (), [], [1, 2], {}, {"a": 1}, object(), slice(2), Ellipsis,
                     np.float32(2.0), np.int8(-3), np.ones(3), np.ones((2, 2), np.float32), np.zeros(0, np.int32),
                     np.array(["a", "b"]), np.ma.masked_array([1.0, 2.0], mask=[0, 1]), np.array([1 + 2j]),
                     np.dtype("f4"), np.float32, identity, pair, lambda a, b: a * b, print, gpulab.f64]),
    st.builds(gpulab.iota, st.integers(0, 4)),
    st.text(max_size=12),
    st.integers(),
    st.floats(),
)
def public() -> dict[str, object]:
    """gpulab's public callables: functions and classes, not modules nor NumPy's scalar types it names."""
    return {name: value for name, value in vars(gpulab).items()
            if not name.startswith("_") and callable(value) and not inspect.ismodule(value)
            and not (isinstance(value, type) and issubclass(value, np.generic))}


def scalar_types() -> list[str]:
    return [name for name, value in vars(gpulab).items()
            if isinstance(value, type) and issubclass(value, np.generic)]


@st.composite
def arguments(draw, function):
    """``function``'s positional parameters filled with junk, and some of its keywords."""
    parameters = list(inspect.signature(function).parameters.values())
    required = [p for p in parameters if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY,
                                                                              p.POSITIONAL_OR_KEYWORD)]
    args = [draw(JUNK) for _ in required]
    if any(p.kind is p.VAR_POSITIONAL for p in parameters):
        args += draw(st.lists(JUNK, max_size=2))
    optional = [p.name for p in parameters if p.default is not p.empty and p.kind is not p.VAR_KEYWORD]
    chosen = draw(st.lists(st.sampled_from(optional), max_size=2, unique=True)) if optional else []
    return args, {key: draw(JUNK) for key in chosen}


BRIEF = {"bench": {"repeats": 1, "warmup": 0, "max_seconds": 0.2, "progress": False}}
"""Keywords a call always gets, so that one given valid arguments is short."""


@pytest.mark.parametrize("name", sorted(public()))
@examples("arguments")
@given(data=st.data())
def test_every_public_function_given_any_arguments_returns_or_raises_a_gpulab_error(name, data):
    function = public()[name]
    args, keywords = data.draw(arguments(function))
    keywords.update(BRIEF.get(name, {}))
    with bounded():
        outcome(lambda: function(*args, **keywords))


# --- explain and diff --------------------------------------------------------------------------------------------
@functools.cache
def builds() -> tuple:
    """Builds to compare: one kernel for sm_90 with and without FMA contraction, for sm_80, and a reduce."""
    return (gpulab.compile("map", pair, target="sm_90"), gpulab.compile("map", pair, target="sm_90", fma=False),
            gpulab.compile("map", pair, target="sm_80"), gpulab.compile("reduce", pair, target="sm_90"))


OPCODES = st.one_of(st.sampled_from(["FFMA", "LDG.E.128", "ld.global.v4.f32", "FADD.FTZ", "CALL.REL", "BRA", "HADD2",
                                     "SHFL.BFLY", "fma.rn.f32", "FROB", "FFMA.WOBBLY", "", " ", "\n", "."]),
                    st.text(max_size=20), JUNK)


@examples("explain_diff")
@given(OPCODES, st.integers(0, 3), st.one_of(st.integers(0, 3), JUNK))
def test_explain_and_diff_return_their_answers_or_say_what_to_pass(opcode, first, second):
    with bounded():
        explained = outcome(lambda: gpulab.explain(opcode))
        assert isinstance(explained, GpulabError) or str(explained)
        if not isinstance(opcode, str):
            assert isinstance(explained, GpulabError)
        made = builds()
        other = made[second] if isinstance(second, int) and not isinstance(second, bool) and 0 <= second < 4 \
            else second
        compared = outcome(lambda: gpulab.diff(made[first], other))
        if isinstance(other, gpulab.Build):
            assert not isinstance(compared, GpulabError) and isinstance(str(compared), str), compared
        else:
            assert isinstance(compared, GpulabError)


# --- python -m gpulab.cache --------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def cache_folders(tmp_path_factory):
    """Folders a command may be pointed at: an empty one, a cache folder gpulab made, one with a file of its own,
    a text file, a file that is no notebook, and a missing path."""
    root = tmp_path_factory.mktemp("cli")
    (root / "empty").mkdir()
    made = root / "made"
    from gpulab.cache import BuildCache

    BuildCache(made, shared=())
    (root / "private").mkdir(mode=0o700)
    (root / "private" / "secret").write_text("s")
    (root / "notes.txt").write_text("hello")
    (root / "bad.ipynb").write_text("{not json")
    return root, ["empty", "made", "private", "notes.txt", "bad.ipynb", "missing", "private/secret"]


COMMAND_WORDS = st.sampled_from(["info", "clear", "warm", "publish", "check", "--out", "--targets", "sm_90,sm_80",
                                 "sm_999", ",", "", "-h", "--nope", "x"])


@examples("cache_cli")
@given(data=st.data())
def test_the_cache_command_line_exits_with_a_status_never_a_traceback(data, cache_folders, monkeypatch, capsys):
    from gpulab import cache
    from gpulab.cache.__main__ import main

    root, names = cache_folders
    monkeypatch.setenv("GPULAB_CACHE_DIR", str(root / "mine"))
    cache.reset_default_cache()
    argv = data.draw(st.lists(st.one_of(COMMAND_WORDS, st.sampled_from(names).map(lambda n: str(root / n))),
                              max_size=5))
    try:
        with bounded():
            try:
                status = main(argv)
            except SystemExit as exc:  # argparse: a usage error, or -h
                status = exc.code
    finally:
        cache.reset_default_cache()
    said = capsys.readouterr()
    assert status in (0, 1, 2), (argv, status)
    assert "Traceback" not in said.err + said.out, (argv, said.err)
    assert (root / "private").stat().st_mode & 0o777 == 0o700  # never opened to others


# --- the magics --------------------------------------------------------------------------------------------------
CELL = "def add(a: i32, b: i32) -> i32:\n    return a + b\n"
MAGIC_WORDS = st.sampled_from(["map", "reduce", "scan", "filter", "sort", "--run", "--bench", "--diff", "--compare",
                               "--target", "sm_90", "sm_80", "--initial", "0", "1e3", "-5", "inf", "abc", "--fma",
                               "--no-fma", "--associative", "--profile", "2", "--lto", "--nope", ",", "'"])


@examples("magics")
@given(st.lists(MAGIC_WORDS, max_size=6), st.sampled_from(["%gpulab", "%%gpukernel"]))
def test_the_magics_say_what_is_wrong_never_a_traceback(gpulab_shell, words, magic):
    from IPython.utils.capture import capture_output

    line = " ".join(words)
    text = f"{magic} {line}" if magic == "%gpulab" else f"{magic} {line}\n{CELL}"
    with bounded(), capture_output() as captured:
        result = gpulab_shell.run_cell("from gpulab import i32\n" + text if magic == "%gpulab" else text,
                                       store_history=False)
    error = result.error_in_exec or result.error_before_exec
    assert error is None or isinstance(error, GpulabError) or "UsageError" in type(error).__name__, (text, error)
    assert "Traceback" not in captured.stdout + captured.stderr or isinstance(error, GpulabError), text


# --- the counts --------------------------------------------------------------------------------------------------
COVERED = (
    "BenchResult", "Build", "BuildOptions", "Checked", "FoldOrders", "Iota", "Kernel", "Mapped", "Target",
    "argsort", "bench", "cache_info", "check", "clear_cache", "compile", "current", "devices", "diagnostics",
    "diff", "element_type", "explain", "filter", "fold_orders", "histogram", "iota", "kernel", "line_costs",
    "load_ipython_extension", "make_argsort", "make_filter", "make_histogram", "make_map", "make_reduce",
    "make_reduce_by_key", "make_scan", "make_segmented_reduce", "make_sort", "make_sort_by_key",
    "make_unique_by_key", "map", "mapped", "profile", "reduce", "reduce_by_key", "scan", "segmented_reduce", "sort",
    "sort_by_key", "to_device", "to_host", "unique_by_key", "use",
)
"""The public callables the property tests call: each through test_every_public_function_given_any_arguments;
the primitives, iota, mapped, check, explain and diff through tests of their own results too."""
CLI = {"python -m gpulab.cache": ("info", "clear", "warm", "publish", "check"), "IPython": ("%%gpukernel", "%gpulab")}


def test_the_counts_in_this_docstring_hold():
    from gpulab.cache.__main__ import parser

    names = set(public())
    assert names == set(COVERED), names ^ set(COVERED)
    assert len(names) == 52 and len(scalar_types()) == 27
    subcommands = parser()._subparsers._group_actions[0].choices
    assert set(subcommands) == set(CLI["python -m gpulab.cache"])
    assert sum(EXAMPLES.values()) + EXAMPLES["arguments"] * (len(names) - 1) == 418
    assert f"the property tests call {len(COVERED)} of the {len(names)}" in __doc__

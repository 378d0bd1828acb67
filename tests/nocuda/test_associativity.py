"""The associativity probe: a reduce's or scan's operator tried on the host, a warning with a counterexample.

Without a GPU: the probe itself, per element type; the Python API's warning
(``gpulab.compile``, ``gpulab.reduce``/``scan`` on the host) and its per-call
silencing; the view's diagnostic at the operator's line; and ``%%gpukernel``,
whose ``--run`` must not claim an agreement where both columns ran the host.
``tests/gpu/test_associativity_on_device.py`` checks the device calls and ``make_*``.
"""

from __future__ import annotations

import dataclasses
import math
import time
import warnings

import numpy as np
import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

import gpulab
from gpulab import bool_, c64, f16, f32, f64, i8, i32, i64, u8
from gpulab.compiler import associativity
from gpulab.compiler.associativity import SECONDS, probe, probe_values
from gpulab.compiler.bundle import bundle_of
from gpulab.display.html import render_html
from gpulab.display.view import MIME_TYPE
from gpulab.errors import AssociativityWarning
from gpulab.kernel import as_kernel
from gpulab.notebook.magics import GpulabMagics
from gpulab.registry import PRIMITIVES, OperatorCall

PAIR = np.dtype([("value", np.float32), ("index", np.int32)], align=True)


# --- operators ---------------------------------------------------------------------------------------------------
def sub(a: i32, b: i32) -> i32:
    return a - b


def add(a: i32, b: i32) -> i32:
    return a + b  # wraps on int32: still associative


def add8(a: u8, b: u8) -> u8:
    return a + b


def mul64(a: i64, b: i64) -> i64:
    return a * b


def smaller(a: i8, b: i8) -> i8:
    return min(a, b)


def first_nonzero(a: i32, b: i32) -> i32:
    return a if a != 0 else b  # associative, not commutative


def left(a: i32, b: i32) -> i32:
    return a  # associative, not commutative: never probed as if it had to be


def fadd(a: f32, b: f32) -> f32:
    return a + b  # rounding only: within a few ulps


def fmul(a: f64, b: f64) -> f64:
    return a * b


def hadd(a: f16, b: f16) -> f16:
    return a + b


def fsub(a: f32, b: f32) -> f32:
    return a - b


def mean(a: f32, b: f32) -> f32:
    return (a + b) * f32(0.5)


def fmax(a: f32, b: f32) -> f32:
    return max(a, b)  # differs only where NaN is involved


def cmul(a: c64, b: c64) -> c64:
    return a * b


def both(a: bool_, b: bool_) -> bool_:
    return a and b


def implies(a: bool_, b: bool_) -> bool_:
    return (not a) or b


def argmin(a: PAIR, b: PAIR) -> PAIR:
    return a if a.value <= b.value else b


def index_difference(a: PAIR, b: PAIR) -> PAIR:
    return b if i32(a.index - b.index) > 0 else a  # the difference wraps as an int32 (numba computes it in int64)


def smaller_index(a: PAIR, b: PAIR) -> PAIR:
    return b if a.index - b.index > 0 else a  # int64 in numba: no wrap (the probe's NumPy int32 wrapped, and warned)


def root_sum(a: f32, b: f32) -> f32:
    return f32(math.sqrt(a)) + b  # raises on a negative value: those are skipped


def never(a: f32, b: f32) -> f32:
    return f32(math.sqrt(-1.0 - a * a)) + b  # raises on every value


def slow(a: i32, b: i32) -> i32:
    while b > 0:  # about 2**31 steps for b = the int32 maximum: the probe's time limit ends it
        a = a + 1
        b = b - 1
    return a


SCALE = 1


def scaled(a: i32, b: i32) -> i32:
    return (a + b) * SCALE  # associative for SCALE = 1 only


def finite(value) -> bool:
    """Whether every number in ``value`` (a number or a record) is finite."""
    numbers = value.tolist() if isinstance(value, np.record) else (value,)
    return all(np.isfinite(complex(n)) for n in numbers)


def found(fn):
    kernel = as_kernel(fn)
    return probe(kernel, kernel.declared.args[0])


# --- the probe ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fn", [add, add8, mul64, smaller, first_nonzero, left, fadd, fmul, hadd, both,
                                smaller_index])
def test_associative_operators_pass(fn):
    assert found(fn) is None


@pytest.mark.parametrize(("fn", "counterexample"), [
    (sub, "sub(sub(a, b), c) = -1 but sub(a, sub(b, c)) = 1, for a = 1, b = 1, c = 1"),
    (fsub, "fsub(fsub(a, b), c) = -1.0 but fsub(a, fsub(b, c)) = 1.0, for a = 1.0, b = 1.0, c = 1.0"),
    (mean, "mean(mean(a, b), c) = 0.75 but mean(a, mean(b, c)) = 0.875, for a = 1.0, b = 1.0, c = 0.5"),
    (implies, "implies(implies(a, b), c) = False but implies(a, implies(b, c)) = True, for a = False, b = True, "
              "c = False"),
])
def test_a_non_associative_operator_gives_its_counterexample(fn, counterexample):
    finding = found(fn)
    assert finding.severity == "warning" and finding.counterexample() == counterexample
    a, b, c = finding.values
    assert finding.left == fn(fn(a, b), c) and finding.right == fn(a, fn(b, c))
    assert finding.line == fn.__code__.co_firstlineno + 1  # its return line


def test_a_record_is_probed_field_by_field():
    finding = found(index_difference)
    assert finding.severity == "warning"
    assert all(isinstance(v, np.record) and v.dtype == PAIR for v in finding.values)
    values = probe_values(gpulab.element_type(PAIR))
    assert {float(v.value) for v in values} >= {0.0, 1.0, 0.5} and any(np.isnan(v.value) for v in values)
    assert {int(v.index) for v in values} >= {0, 1, -1, np.iinfo(np.int32).min, np.iinfo(np.int32).max}


@pytest.mark.parametrize("fn", [fmax, argmin, cmul])
def test_differences_only_with_nan_or_infinity_are_a_note_not_a_warning(fn):
    finding = found(fn)
    assert finding.severity == "info" and finding.nonfinite
    assert not all(finite(v) for v in finding.values)
    assert "except with NaN or infinities" in finding.message("reduce")


def test_the_float_message_says_what_rounding_does_and_the_integer_one_does_not():
    floats, integers = found(fsub).message("reduce"), found(sub).message("scan")
    assert "deterministic run to run but differ from a left-to-right fold" in floats
    assert "scan on a device folds the items in a tree" in integers and "rounding" not in integers
    for message in (floats, integers):
        assert "pass associative=True (%%gpukernel --associative)" in message


def test_the_probe_values_cover_each_type():
    ints = [int(v) for v in probe_values(gpulab.element_type(np.int8))]
    assert {0, 1, -1, -128, 127} <= set(ints)
    floats = probe_values(gpulab.element_type(np.float32))
    assert any(v == 0 and math.copysign(1, v) < 0 for v in floats) and any(np.isnan(v) for v in floats)
    assert max(abs(float(v)) for v in floats if np.isfinite(v)) ** 3 < np.finfo(np.float32).max
    assert {bool(v) for v in probe_values(gpulab.element_type(np.bool_))} == {True, False}


def test_an_operator_that_raises_is_skipped_where_it_raises():
    assert found(root_sum).severity == "warning"  # found on values it takes
    assert found(never) is None


def test_an_operator_that_loops_is_stopped_in_time():
    started = time.perf_counter()
    assert found(slow) is None
    assert time.perf_counter() - started < SECONDS + 2


def test_the_verdict_is_kept_per_kernel_type_and_uniform_values():
    global SCALE
    kernel = as_kernel(scaled)
    assert probe(kernel, kernel.declared.args[0]) is None
    SCALE = 3
    try:
        assert probe(kernel, kernel.declared.args[0]).severity == "warning"
        assert probe(kernel, kernel.declared.args[0]) is probe(kernel, kernel.declared.args[0])
    finally:
        SCALE = 1


@pytest.fixture
def folder(tmp_path):
    """An empty cache folder of this test's own as the default cache, and no verdict in memory."""
    from gpulab.cache import BuildCache, reset_default_cache

    associativity.VERDICTS.clear()
    reset_default_cache(BuildCache(tmp_path / "cache", shared=()))
    yield tmp_path / "cache"
    reset_default_cache()
    associativity.VERDICTS.clear()


def verdicts_in(folder) -> list:
    return sorted(path.name for path in folder.rglob("probe-*.gpulab"))


@pytest.mark.parametrize("fn", [mean, index_difference, add])
def test_a_verdict_is_read_back_from_the_cache_folder_without_probing_again(fn, folder, monkeypatch):
    kernel = as_kernel(fn)
    element = kernel.declared.args[0]
    first = probe(kernel, element)
    assert len(verdicts_in(folder)) == 1
    associativity.VERDICTS.clear()  # as in a new process
    monkeypatch.setattr(associativity, "_probe", lambda *args: pytest.fail("probed again"))
    again = probe(kernel, element)
    if first is None:
        assert again is None
    else:
        assert (again.counterexample(), again.severity, again.line) == (first.counterexample(), first.severity,
                                                                        first.line)
        assert all(a.tobytes() == b.tobytes() for a, b in zip(again.values, first.values))


def test_a_probe_the_time_limit_stopped_is_not_kept_in_the_folder(folder):
    assert found(slow) is None
    assert verdicts_in(folder) == []


def test_a_forged_verdict_is_refused_with_a_warning_and_probed_again(folder):
    from gpulab.cache import CacheWarning, default_cache

    kernel = as_kernel(sub)
    element = kernel.declared.args[0]
    key = associativity.verdict_key(kernel, element, kernel.host_arguments())
    forged = associativity.Verdict(key, (99, 0, 0), b"1234", b"1234", False)
    default_cache().put(key, forged, encode=associativity.Verdict.encode)
    with pytest.warns(CacheWarning, match="a verdict that is not one of int32's"):
        finding = probe(kernel, element)
    assert finding.counterexample() == "sub(sub(a, b), c) = -1 but sub(a, sub(b, c)) = 1, for a = 1, b = 1, c = 1"


def test_a_record_with_an_operator_in_a_tree_is_probed_by_its_record_alone():
    """A primitive added later (segmented_reduce, reduce_by_key) needs nothing but its record's operator."""
    reduce = PRIMITIVES["reduce"]
    segmented = dataclasses.replace(reduce, name="segmented_reduce")
    in_order = dataclasses.replace(reduce, name="in_order", operator=OperatorCall("op", "value_t", ("a", "b")))
    kernel = as_kernel(sub)
    assert associativity.finding(segmented, kernel, kernel.declared.args[0]).severity == "warning"
    assert associativity.finding(in_order, kernel, kernel.declared.args[0]) is None
    folds = [name for name, record in PRIMITIVES.items() if record.operator.associative]
    assert folds == ["reduce", "scan", "segmented_reduce", "reduce_by_key"]


@pytest.mark.parametrize("primitive", ["segmented_reduce", "reduce_by_key"])
def test_the_segmented_and_by_key_primitives_are_probed_by_their_records(primitive):
    with pytest.warns(AssociativityWarning, match=f"{primitive} on a device folds"):
        gpulab.compile(primitive, sub, target="sm_90")
    xs, groups = np.arange(10, dtype=np.int32), np.array([0, 4, 10], dtype=np.int32)
    call = (lambda: gpulab.segmented_reduce(sub, xs, groups, np.int32(0), device="host")) \
        if primitive == "segmented_reduce" else (lambda: gpulab.reduce_by_key(sub, xs // 4, xs, device="host"))
    with pytest.warns(AssociativityWarning, match=f"{primitive} on a device folds"):
        call()


# --- the Python API ----------------------------------------------------------------------------------------------
def test_compile_warns_at_the_operators_line_and_the_view_shows_it():
    with pytest.warns(AssociativityWarning, match="`sub` is not associative") as caught:
        build = gpulab.compile("reduce", sub, target="sm_90")
    [warning] = [w for w in caught if w.category is AssociativityWarning]
    assert (warning.filename, warning.lineno) == (__file__, sub.__code__.co_firstlineno + 1)
    [diagnostic] = [d for d in gpulab.diagnostics(build) if d.kind == "associativity"]
    assert diagnostic.severity == "warning" and diagnostic.python_line == warning.lineno
    assert "sub(sub(a, b), c) = -1" in diagnostic.message and "associative=True" in diagnostic.fix
    bundle = bundle_of(build)
    [shown] = [d for d in bundle["header"]["diagnostics"] if d["kind"] == "associativity"]
    assert shown["line"] == f"Python line {warning.lineno}" and shown["severity"] == "warning"
    assert f'data-k="{shown["key"]}"><span class="gl-dk">associativity' in render_html(bundle, uid="v")


def test_associative_true_silences_one_call():
    with warnings.catch_warnings():
        warnings.simplefilter("error", AssociativityWarning)
        build = gpulab.compile("reduce", sub, target="sm_90", associative=True)
        assert not [d for d in gpulab.diagnostics(build) if d.kind == "associativity"]
        gpulab.scan(sub, np.arange(5, dtype=np.int32), device="host", associative=True)
        gpulab.compile("reduce", add, target="sm_90")
        gpulab.compile("map", sub, target="sm_90")  # a map never folds: never probed
    with pytest.warns(AssociativityWarning):
        gpulab.compile("scan", sub, target="sm_90")  # the next call is probed again


@pytest.mark.parametrize("primitive", ["reduce", "scan"])
def test_a_host_call_warns_too(primitive):
    xs = np.arange(10, dtype=np.int32)
    with pytest.warns(AssociativityWarning, match=f"{primitive} on a device folds"):
        getattr(gpulab, primitive)(sub, xs, np.int32(0), device="host")


def test_a_nan_note_is_in_the_view_but_not_warned():
    with warnings.catch_warnings():
        warnings.simplefilter("error", AssociativityWarning)
        build = gpulab.compile("reduce", fmax, target="sm_90")
    [note] = [d for d in gpulab.diagnostics(build) if d.kind == "associativity"]
    assert note.severity == "info" and "NaN" in note.message


# --- %%gpukernel -------------------------------------------------------------------------------------------------
CELL = """%%gpukernel reduce --target sm_90 --run 1000{options}
from gpulab import i32

def minus(a: i32, b: i32) -> i32:
    return a - b
"""


@pytest.fixture
def shell():
    shell = InteractiveShell.instance()
    shell.run_cell("%load_ext gpulab")
    yield shell
    InteractiveShell.clear_instance()


def run(shell, cell):
    with capture_output() as captured:
        shell.run_cell(cell, store_history=True)
    views = [o.data[MIME_TYPE] for o in captured.outputs if MIME_TYPE in o.data]
    tables = "".join(o.data.get("text/plain", "") for o in captured.outputs if MIME_TYPE not in o.data)
    return captured.stderr, views, tables


def test_the_magic_warns_at_the_cell_line_each_time_and_claims_no_agreement_without_a_gpu(shell):
    for _ in range(2):  # every run of the cell says it, once
        stderr, [view], tables = run(shell, CELL.format(options=""))
        assert stderr.count("AssociativityWarning: `minus` is not associative") == 1, stderr
        assert "at cell line 5:\n    return a - b" in stderr
        [diagnostic] = [d for d in view["header"]["diagnostics"] if d["kind"] == "associativity"]
        assert diagnostic["line"] == "Python line 5" and diagnostic["severity"] == "warning"
        assert "not checked: no device ran it" in tables and "exact" not in tables


def test_the_magic_is_silenced_by_associative(shell):
    stderr, [view], _ = run(shell, CELL.format(options=" --associative"))
    assert "AssociativityWarning" not in stderr, stderr
    assert not [d for d in view["header"]["diagnostics"] if d["kind"] == "associativity"]
    assert "--associative" in GpulabMagics.gpukernel.__doc__  # in %%gpukernel?

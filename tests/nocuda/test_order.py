"""order=: the tree a fold takes, named; the host replays the portable one bit for bit.

``sequential`` is ``functools.reduce`` (and ``itertools.accumulate``); ``portable``
is checked against a reference written here from its definition alone: the
nodes of the aligned binary tree over the positions that cover a span, each the
pairwise tree of its items, folded left to right (``initial`` on the left of
the whole). Float addition and a record's selection that is not associative
show any other grouping.
"""

import functools
import itertools
import math
import sys
from collections import namedtuple
from pathlib import Path

import numpy as np
import pytest

import gpulab
from gpulab.display.order import fold_orders_mimebundle
from gpulab.errors import ArgumentError
from gpulab.host import portable
from gpulab.options import BuildOptions, build_options
from gpulab.registry import PRIMITIVES

PAIR = np.dtype([("value", np.float32), ("index", np.int32)], align=True)
Pair = namedtuple("Pair", "value index")  # an item of PAIR as the reference's Python sees it (fast to read)
SIZES = [0, 1, 2, 3, 1000, 2**20 + 7]
KINDS = ["float32", "float64", "float16", "record"]


def add(a, b):
    return a + b


def hop(a, b):
    """A record's operator that is not associative: which item wins depends on the grouping, as a float sum's
    last bits do."""
    return b if b.value + b.value > a.value else a


def _items(kind, n, seed=0):
    rng = np.random.default_rng(seed)
    if kind != "record":  # magnitudes from 1e-3 to 1e3 (to 10 for float16, whose sums must stay finite)
        return (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 2 if kind == "float16" else 4, n)).astype(kind)
    items = np.zeros(n, PAIR)
    items["value"], items["index"] = rng.standard_normal(n), np.arange(n)
    return items


def _case(kind):
    """``(operator, initial, the items as the reference takes them)`` of one kind of item."""
    if kind == "record":
        return hop, Pair(np.float32(0.25), -1), lambda items: [Pair(v, i) for v, i in
                                                                 zip(items["value"], items["index"].tolist())]
    return add, np.array(0.5, kind)[()], lambda items: items


def _array(value, dtype):
    """A value of the reference (a Pair, a NumPy scalar) as a 0-d array of ``dtype``."""
    return np.array(tuple(value) if isinstance(value, Pair) else value, dtype)


def _same(got, want) -> bool:
    got = np.asarray(got)
    want = np.array([_array(v, got.dtype) for v in want]) if isinstance(want, list) else _array(want, got.dtype)
    return got.tobytes() == want.tobytes()


# --- the reference: the portable tree from its definition ---------------------------------------------------------
class Tree:
    """The aligned binary tree over the positions of ``items``: a node is the pairwise tree of its items."""

    def __init__(self, op, items):
        self.op, self.items = op, items
        self.value = functools.lru_cache(maxsize=None)(self._value)

    def _value(self, first, size):
        if size == 1:
            return self.items[first]
        half = size // 2
        return self.op(self.value(first, half), self.value(first + half, half))

    def covering(self, start, end, first=0, size=None):
        """The nodes that cover positions [start, end), in order: a node inside it, else its halves'."""
        if size is None:
            size = 1 << max(0, (end - 1).bit_length())
        if end <= first or first + size <= start or start >= end:
            return []
        if start <= first and first + size <= end:
            return [(first, size)]
        half = size // 2
        return self.covering(start, end, first, half) + self.covering(start, end, first + half, half)

    def fold(self, start, end):
        """The portable fold of [start, end): its covering nodes' values, left to right (None when empty)."""
        values = [self.value(*node) for node in self.covering(start, end)]
        return functools.reduce(self.op, values) if values else None


def _with_initial(op, initial, value):
    return initial if value is None else op(initial, value)


@pytest.fixture(scope="module", autouse=True)
def _deep_enough():
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10000))
    yield
    sys.setrecursionlimit(limit)


# --- sequential: functools.reduce ---------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", SIZES)
def test_sequential_is_functools_reduce_and_the_hosts_default(kind, n):
    op, initial, python = _case(kind)
    items = _items(kind, n)
    want = functools.reduce(op, python(items), initial)
    for order in ("sequential", "device"):
        got = gpulab.reduce(op, items, _array(initial, items.dtype)[()], device="host", order=order,
                            associative=True)
        assert _same(got, want), order
    if n <= 1000:
        scanned = gpulab.scan(op, items, _array(initial, items.dtype)[()], device="host", order="sequential",
                              associative=True)
        assert _same(scanned, list(itertools.accumulate(python(items), op, initial=initial))[1:])


# --- portable: the tree, replayed ---------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", SIZES)
def test_portable_reduce_and_scan_are_the_trees_folds(kind, n):
    op, initial, python = _case(kind)
    items = _items(kind, n, seed=1)
    tree = Tree(op, python(items))
    given = _array(initial, items.dtype)[()]
    got = gpulab.reduce(op, items, given, device="host", order="portable", associative=True)
    assert _same(got, _with_initial(op, initial, tree.fold(0, n)))
    inclusive = gpulab.scan(op, items, device="host", order="portable", associative=True)
    from_initial = gpulab.scan(op, items, given, device="host", order="portable", associative=True)
    exclusive = gpulab.scan(op, items, given, exclusive=True, device="host", order="portable", associative=True)
    assert inclusive.shape == exclusive.shape == (n,)
    positions = range(n) if n <= 1000 else [*range(40), *np.random.default_rng(2).integers(0, n, 40).tolist(), n - 1]
    for i in positions:
        assert _same(inclusive[i], tree.fold(0, i + 1)), i
        assert _same(from_initial[i], op(initial, tree.fold(0, i + 1))), i
        assert _same(exclusive[i], _with_initial(op, initial, tree.fold(0, i))), i
    if n:
        assert _same(inclusive[-1], tree.fold(0, n)) and _same(from_initial[-1], got)  # a reduce is the last item


@pytest.mark.parametrize("kind", KINDS)
def test_portable_segments_and_runs_fold_their_positions(kind):
    op, initial, python = _case(kind)
    n = 5000
    items = _items(kind, n, seed=3)
    tree = Tree(op, python(items))
    rng = np.random.default_rng(4)
    offsets = np.sort(np.concatenate([[7, 7, 4096], rng.integers(7, n - 3, 60)])).astype(np.int64)  # not from 0
    got = gpulab.segmented_reduce(op, items, offsets, _array(initial, items.dtype)[()], device="host",
                                  order="portable", associative=True)
    for k in range(offsets.size - 1):
        assert _same(got[k], _with_initial(op, initial, tree.fold(int(offsets[k]), int(offsets[k + 1])))), k
    keys = np.cumsum(rng.random(n) < 1 / 40).astype(np.int32)
    unique, folds = gpulab.reduce_by_key(op, keys, items, device="host", order="portable", associative=True)
    starts = np.flatnonzero(np.diff(keys, prepend=keys[0] - 1))
    assert np.array_equal(unique, keys[starts])
    for k, (start, end) in enumerate(zip(starts.tolist(), [*starts[1:].tolist(), n])):
        assert _same(folds[k], tree.fold(start, end)), k
    sequential = gpulab.reduce_by_key(op, keys, items, device="host", associative=True)[1]
    if kind != "float64":  # float64 sums of ~40 items may round alike in both orders
        assert not _same(folds, sequential)  # the order shows


def test_the_orders_differ_where_floats_round():
    items = _items("float32", 1000)
    portable = gpulab.reduce(add, items, np.float32(0), device="host", order="portable")
    sequential = gpulab.reduce(add, items, np.float32(0), device="host", order="sequential")
    assert not _same(portable, sequential)
    exact = float(np.sum(items.astype(np.float64)))
    assert abs(float(portable) - exact) < 1e-3 * np.abs(items).sum()


# --- the option ---------------------------------------------------------------------------------------------------
def test_order_is_checked_and_belongs_to_the_folds():
    folds = {name for name, record in PRIMITIVES.items() if "order" in record.options}
    assert folds == {"reduce", "scan", "segmented_reduce", "reduce_by_key"}
    assert all("order" in PRIMITIVES[name].portable_helpers for name in folds)  # each builds the portable tree
    with pytest.raises(ArgumentError, match="order is one of 'device', 'portable', 'sequential', not 'tree'"):
        gpulab.reduce(add, np.ones(3, np.float32), np.float32(0), device="host", order="tree")
    with pytest.raises(ArgumentError, match="order is not an option of map; it is an option of reduce, scan"):
        gpulab.map(lambda x: x, np.ones(3, np.float32), device="host", order="portable")
    with pytest.raises(ArgumentError, match="order is one of"):
        gpulab.host.host_reduce(add, np.ones(3, np.float32), np.float32(0), order="left")


def test_portable_builds_without_contraction():
    assert BuildOptions(order="portable").fma is False
    assert build_options(PRIMITIVES["reduce"], BuildOptions(lto=False), order="portable").fma is False
    assert build_options(PRIMITIVES["reduce"], BuildOptions(order="portable"), lto=False).fma is False
    with pytest.raises(ArgumentError, match="order='portable' compiles without FMA contraction"):
        BuildOptions(order="portable", fma=True)
    with pytest.raises(ArgumentError, match="leave fma out, or pass fma=False"):
        build_options(PRIMITIVES["scan"], BuildOptions(order="portable"), fma=True)


def test_no_device_build_folds_sequentially():
    with pytest.raises(ArgumentError, match="order='sequential' is the host's left-to-right fold"):
        gpulab.compile("reduce", add, types="f32,f32", target="sm_90", order="sequential")


# --- the device builds (run on a GPU by tests/gpu/test_order.py) ----------------------------------------------------
def _build(primitive, kind, target):
    fn, types = (hop, [PAIR, PAIR]) if kind == "record" else (add, [kind, kind])
    return gpulab.compile(primitive, fn, types=types, target=target, order="portable", associative=True)


@pytest.mark.parametrize("primitive", ["reduce", "scan", "segmented_reduce", "reduce_by_key"])
@pytest.mark.parametrize("kind, target", [(kind, "sm_90") for kind in KINDS] + [("float32", "sm_80"),
                                                                                 ("record", "sm_80")])
def test_portable_builds_link_with_no_call(primitive, kind, target):
    build = _build(primitive, kind, target)
    assert "#define PORTABLE_ORDER 1" in build.source and build.options.fma is False
    geometry = build.geometry
    for count in (geometry.block_threads, geometry.vec, geometry.unroll, geometry.scan_items, geometry.small_items):
        assert count & (count - 1) == 0, geometry  # tiles, threads and rows of 2^k items (templates/order.cu)
    calls = [line.strip() for line in build.sass.splitlines() if "CALL" in line]
    assert not calls, f"with LTO the SASS must have no CALL (sm_80 emulates a shuffle it cannot prove whole): {calls[:3]}"
    spills = {name: r.spill_stores for name, r in build.resources.items()}
    assert max(spills.values()) <= 32, spills


def test_the_device_order_is_built_as_before():
    build = gpulab.compile("reduce", add, types="f32,f32", target="sm_90")
    assert "#define PORTABLE_ORDER 0" in build.source and build.options.fma is True


# --- the view of the trees ---------------------------------------------------------------------------------------
def test_fold_orders_draws_each_tree_with_its_errors():
    small = np.array([1.0] + [1e-8] * 15, np.float32)  # left to right loses every 1e-8: the tree keeps them
    exact = math.fsum(small.astype(np.float64))
    found = gpulab.fold_orders(add, small, np.float32(0), exact=exact)
    sequential, tree = found.folds
    assert _same(sequential.value, gpulab.reduce(add, small, np.float32(0), device="host"))
    assert _same(tree.value, gpulab.reduce(add, small, np.float32(0), device="host", order="portable"))
    assert float(sequential.value) == 1.0 and float(tree.value) > 1.0
    assert (sequential.depth, tree.depth) == (16, 5)
    assert found.error(tree, exact)[1] < 0.5 < found.error(sequential, exact)[1]  # in units of the last place
    data = found.as_dict()
    assert data["folds"][1]["tree"] == ["initial", [[[["x0", "x1"], ["x2", "x3"]], [["x4", "x5"], ["x6", "x7"]]],
                                                     [[["x8", "x9"], ["x10", "x11"]], [["x12", "x13"], ["x14", "x15"]]]]]
    bundle = found._repr_mimebundle_()
    assert "portable: initial ⊕ ((((x0 ⊕ x1) ⊕ (x2 ⊕ x3))" in bundle["text/plain"]
    assert "sequential: (((((((((((((((initial ⊕ x0) ⊕ x1)" in bundle["text/plain"]
    assert bundle["text/html"].count("⊕") == 2 * 16 and "5 combines deep" in bundle["text/html"]


def test_fold_orders_of_thirteen_items_folds_the_blocks_of_thirteens_digits():
    found = gpulab.fold_orders(add, np.arange(13, dtype=np.float64), 0.0)
    eight, four = (((0, 1), (2, 3)), ((4, 5), (6, 7))), ((8, 9), (10, 11))
    assert portable.tree(0, 13) == ((eight, four), 12)
    assert [fold.depth for fold in found.folds] == [13, 6] and float(found.folds[1].value) == 78.0
    large = gpulab.fold_orders(add, np.ones(1000, np.float32), np.float32(0))
    assert large.as_dict()["items"] is None and all(fold.tree is None for fold in large.folds)
    for shown in fold_orders_mimebundle(large.as_dict()).values():
        assert "of 1,000 float32 items" in shown and "pass a slice, xs[:64], to see them" in shown
    with pytest.raises(ArgumentError, match="fold_orders compares sequential and portable, not 'device'"):
        gpulab.fold_orders(add, np.ones(3, np.float32), np.float32(0), orders=("device",))


def scaled(a, b):
    return a * 0.1 + b  # numba-cuda: a float16 times a float64 constant is a float64


def scaled_again(a, b):
    return a * 0.1 + b


def test_an_interpreted_operator_on_whole_arrays_computes_as_one_pair_at_a_time(monkeypatch):
    from gpulab.host import run

    items = _items("float16", 3000, seed=5)
    at_once = gpulab.scan(scaled, items, device="host", order="portable", associative=True)
    assert run.prepare_fold(scaled, items, "scan", False).operator.elementwise is True  # on whole arrays

    def refuse(op, out, left, right, uniforms):
        raise TypeError("one pair at a time")

    monkeypatch.setattr(run, "ARRAY_PAIRS", run.Loop(refuse, items=(0, 1, 2)))
    one_by_one = gpulab.scan(scaled_again, items, device="host", order="portable", associative=True)
    assert run.prepare_fold(scaled_again, items, "scan", False).operator.elementwise is False
    assert _same(at_once, one_by_one)


HOST_THEN_DEVICE = '''
import numpy as np
import gpulab

def add(a, b):
    return a + b

gpulab.reduce(add, np.ones(5, np.float16), np.float16(0), device="host")  # numba keeps its float16 code
gpulab.compile("reduce", add, types="f16,f16", target="sm_90", order="portable")
print("built")
'''


def test_a_float16_operator_run_on_the_host_then_builds_for_a_device(tmp_path):
    """The host's typing of a float16 operator compiles cuda_fp16's callers, which numba keeps for later builds:
    their debug-info flags must be the builds' (NVVM refused the mix: ERROR_INVALID_IR). A process of its own,
    so that nothing compiled float16 before."""
    import os
    import subprocess

    script = tmp_path / "host_then_device.py"
    script.write_text(HOST_THEN_DEVICE)
    environment = {**os.environ, "GPULAB_CACHE_DIR": str(tmp_path / "cache"),
                   "PYTHONPATH": os.pathsep.join([str(Path(gpulab.__file__).parents[1]), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=environment, timeout=300)
    assert done.returncode == 0 and "built" in done.stdout, done.stderr[-2000:]

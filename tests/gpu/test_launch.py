"""The fast call path on the GPU: every array kind, every stream kind, both launchers, 8 threads, one launch.

CuPy arrays take the fast path (read from their attributes); a
``__cuda_array_interface__`` object, a DLPack capsule provider and strided or
2-D views take the general one. Both must give the results the host
reference gives, and integer results bit for bit the same as each other.
"""

import threading

import numpy as np
import pytest
from operators import add, positive, twice

import gpulab
from gpulab.primitives import dispatch
from gpulab.registry import PRIMITIVES
from gpulab.runtime import module, replay

pytestmark = pytest.mark.gpu
cupy = pytest.importorskip("cupy")

N = 3 * 4096 + 17


class Interface:
    """A device array seen only through ``__cuda_array_interface__`` (as Numba's and PyTorch's are)."""

    def __init__(self, array):
        self.__cuda_array_interface__ = array.__cuda_array_interface__
        self.keep = array


class DLPackOnly:
    """A device array seen only through DLPack."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


def _kinds(data):
    """(name, device input, its items as a flat NumPy array) for each kind of array."""
    flat = cupy.asarray(data)
    grid = cupy.asarray(data[: 8 * 1024]).reshape(8, 1024)
    return [
        ("cupy", flat, data),
        ("cuda_array_interface", Interface(flat), data),
        ("dlpack", DLPackOnly(flat), data),
        ("strided", flat[::3], data[::3]),
        ("2-d columns", grid[:, 5:900], cupy.asnumpy(grid[:, 5:900]).reshape(-1)),
        ("2-d transposed", grid.T, cupy.asnumpy(grid.T).reshape(-1)),
    ]


def _results(xs):
    """What every primitive gives for ``xs`` (one-shot calls and reused objects)."""
    reducer, scanner = gpulab.make_reduce(add, np.int32), gpulab.make_scan(add, np.int32)
    return {
        "map": cupy.asnumpy(gpulab.map(twice, xs)),
        "reduce": int(gpulab.reduce(add, xs, np.int32(5))),
        "reduce, reused": int(reducer(xs, np.int32(5))),
        "scan": cupy.asnumpy(gpulab.scan(add, xs, np.int32(1))),
        "scan, reused": cupy.asnumpy(scanner(xs, np.int32(1))),
        "filter": cupy.asnumpy(gpulab.filter(positive, xs)),
    }


def _expected(items):
    return {
        "map": items * 2,
        "reduce": int(items.sum()) + 5,
        "reduce, reused": int(items.sum()) + 5,
        "scan": np.cumsum(items) + 1,
        "scan, reused": np.cumsum(items) + 1,
        "filter": items[items > 0],
    }


@pytest.fixture(params=list(module.LAUNCHERS))
def launcher(request):
    module.use_launcher(request.param)
    yield request.param
    module.use_launcher()


@pytest.fixture(params=[True, False], ids=["graphs", "no graphs"])
def graphs(request):
    replay.use_graphs(request.param)
    yield request.param
    replay.use_graphs(True)


def test_every_array_kind_gives_the_host_results(launcher, graphs):
    data = np.random.default_rng(0).integers(-1000, 1000, N, dtype=np.int32)
    for name, xs, items in _kinds(data):
        for repeat in range(2):  # the second time, map and reduce replay their first launches (with graphs)
            got, want = _results(xs), _expected(items)
            for primitive in want:
                np.testing.assert_array_equal(got[primitive], want[primitive], err_msg=(
                    f"{primitive} of a {name} input, call {repeat + 1} ({launcher} launcher, graphs {graphs})"))


def _graphs(plan, kernel: str) -> int:
    return plan.prepared(32, plan.uniform_values()).kernel_launcher(kernel).graphs


def test_a_repeated_launch_is_replayed_and_reads_the_memory_as_it_is_then(launcher):
    xs = cupy.arange(N, dtype=cupy.int32)
    doubled = cupy.empty(N, np.int64)
    mapper = gpulab.make_map(twice, xs)
    for _ in range(3):
        mapper(xs, out=doubled)
    assert _graphs(mapper, "gpulab_map") == 1
    xs += 5  # the graph holds the pointers, not the items
    np.testing.assert_array_equal(mapper(xs, out=doubled).get(), (np.arange(N) + 5) * 2)
    stream = cupy.cuda.Stream(non_blocking=True)  # another stream: the same graph, launched there
    doubled.fill(0)
    mapper(xs, out=doubled, stream=stream)
    stream.synchronize()
    np.testing.assert_array_equal(doubled.get(), (np.arange(N) + 5) * 2)
    assert _graphs(mapper, "gpulab_map") == 1


def test_a_replay_is_told_apart_by_the_parameter_bytes_not_the_values():
    reducer = gpulab.make_reduce(add, np.float32)
    zeros, scalar = cupy.full(5000, -0.0, np.float32), cupy.empty((), np.float32)
    for initial in (-0.0, -0.0, -0.0, 0.0, 0.0, -0.0, 0.0):  # equal as Python values, not as bits
        got = reducer(zeros, np.float32(initial), out=scalar).get()
        assert np.signbit(got) == np.signbit(initial), initial
    assert _graphs(reducer, "gpulab_reduce") == 2


def test_a_launcher_keeps_a_bounded_number_of_launches_and_no_graph_when_turned_off():
    xs = cupy.arange(N, dtype=cupy.int32)
    outs = [cupy.empty(N, np.int64) for _ in range(replay.GRAPHS_KEPT + 4)]
    mapper = gpulab.make_map(twice, xs)
    for count in (replay.GRAPHS_KEPT - 1, len(outs)):  # a cycle it holds, then one longer than it keeps
        for _ in range(3):
            for out in outs[:count]:
                out.fill(0)
                mapper(xs, out=out)
                np.testing.assert_array_equal(out.get(), np.arange(N) * 2)
        launcher = mapper.prepared(32, ()).kernel_launcher("gpulab_map")
        if count < replay.GRAPHS_KEPT:
            assert launcher.graphs == count
        assert len(launcher._graphs) <= replay.GRAPHS_KEPT
    held, seen = launcher.graphs, len(launcher._graphs)
    replay.use_graphs(False)
    try:
        other = cupy.empty(N, np.int64)
        for _ in range(3):
            mapper(xs, out=other)
        np.testing.assert_array_equal(other.get(), np.arange(N) * 2)
        assert (launcher.graphs, len(launcher._graphs)) == (held, seen)
    finally:
        replay.use_graphs(True)


def test_a_launch_the_driver_will_not_capture_is_launched_plainly(monkeypatch):
    monkeypatch.setattr(replay, "_capture", lambda *launch: replay.NO_GRAPH)  # as where graphs are refused
    xs = cupy.arange(N, dtype=cupy.int32)
    doubled = cupy.empty(N, np.int64)
    mapper = gpulab.make_map(twice, xs)
    for k in range(4):
        doubled.fill(0)
        np.testing.assert_array_equal(mapper(xs + k, out=doubled).get(), (np.arange(N) + k) * 2)
        np.testing.assert_array_equal(mapper(xs, out=doubled).get(), np.arange(N) * 2)
    assert _graphs(mapper, "gpulab_map") == 0


def test_scan_and_filter_launches_never_repeat_so_keep_no_graph():
    xs = cupy.arange(N, dtype=cupy.int32)
    out, kept = cupy.empty_like(xs), cupy.empty((), np.int64)
    scanner, filterer = gpulab.make_scan(add, xs), gpulab.make_filter(positive, xs)
    for _ in range(3):
        scanner(xs, out=out)
        filterer(xs, out=out, kept=kept)
    assert _graphs(scanner, "gpulab_scan") == 0 and _graphs(filterer, "gpulab_filter") == 0


def test_float_results_do_not_depend_on_the_path():
    data = np.random.default_rng(1).standard_normal(2**20).astype(np.float32)
    flat = cupy.asarray(data)
    fast = [cupy.asnumpy(gpulab.map(twice, flat)), cupy.asnumpy(gpulab.reduce(add, flat, np.float32(0))),
            cupy.asnumpy(gpulab.scan(add, flat))]
    for other in (Interface(flat), DLPackOnly(flat)):  # the same array through the general path
        general = [cupy.asnumpy(gpulab.map(twice, other)), cupy.asnumpy(gpulab.reduce(add, other, np.float32(0))),
                   cupy.asnumpy(gpulab.scan(add, other))]
        for a, b in zip(fast, general):
            assert a.tobytes() == b.tobytes()


class StreamProtocol:
    """A stream given only by the ``__cuda_stream__`` protocol."""

    def __init__(self, stream):
        self.stream = stream

    def __cuda_stream__(self):
        return (0, self.stream.ptr)


def _stream_kinds(streams):
    """(name, stream=, the current stream) for each way of giving a stream; ``streams`` keeps them alive."""
    streams += [cupy.cuda.Stream(non_blocking=True) for _ in range(4)]
    return [
        ("default", None, None),
        ("current (with a CuPy stream)", None, streams[0]),
        ("a CuPy stream", streams[1], None),
        ("__cuda_stream__", StreamProtocol(streams[2]), None),
        ("an int handle", streams[3].ptr, None),
        ("per-thread default", cupy.cuda.Stream.ptds, None),
    ]


def test_every_stream_kind():
    data = np.random.default_rng(2).integers(-1000, 1000, 2**20 + 3, dtype=np.int32)
    expected = _expected(data)
    xs = cupy.asarray(data)
    cupy.cuda.Device().synchronize()
    plans = {"map": gpulab.make_map(twice, xs), "reduce": gpulab.make_reduce(add, xs),
             "scan": gpulab.make_scan(add, xs), "filter": gpulab.make_filter(positive, xs)}
    streams = []
    for name, stream, current in _stream_kinds(streams):
        with current if current is not None else cupy.cuda.Stream.null:
            got = {"map": plans["map"](xs, stream=stream), "reduce": plans["reduce"](xs, np.int32(5), stream=stream),
                   "scan": plans["scan"](xs, np.int32(1), stream=stream),
                   "filter": plans["filter"].finish(plans["filter"](xs, stream=stream), stream=stream)}
            cupy.cuda.Device().synchronize()
        for primitive, value in got.items():
            np.testing.assert_array_equal(cupy.asnumpy(value), expected[primitive], err_msg=f"{primitive} on {name}")


def _on_eight_threads(work) -> None:
    """Run ``work(index)`` for index 0 to 7, each in a thread of its own (``work`` waits on its own barrier
    once its arrays are made), and wait for all of them."""
    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


@pytest.mark.parametrize("own_streams", [False, True])
@pytest.mark.parametrize("outputs_given", [False, True])
def test_eight_threads_share_one_plan_of_each_primitive(own_streams, outputs_given):
    rng = np.random.default_rng(3)
    inputs = [rng.integers(-1000, 1000, size, dtype=np.int32) for size in (100, 5000, 2**16 + 1, 2**20, 777) * 2]
    device_inputs = [cupy.asarray(data) for data in inputs]
    cupy.cuda.Device().synchronize()
    plans = {"map": gpulab.make_map(twice, np.int32), "reduce": gpulab.make_reduce(add, np.int32),
             "scan": gpulab.make_scan(add, np.int32), "filter": gpulab.make_filter(positive, np.int32)}
    failures, barrier = [], threading.Barrier(8)

    def work(index):
        try:
            stream = cupy.cuda.Stream(non_blocking=True) if own_streams else cupy.cuda.Stream.null
            barrier.wait()
            for round_ in range(20):
                k = (index + round_) % len(inputs)
                with stream:
                    xs = device_inputs[k]

                    def out(dtype, shape=xs.shape):  # given or allocated: the plain call either way (see DevicePlan)
                        return cupy.empty(shape, dtype) if outputs_given else None

                    got = {"map": plans["map"](xs, out=out(np.int64)),
                           "reduce": plans["reduce"](xs, np.int32(5), out=out(np.int32, ())),
                           "scan": plans["scan"](xs, np.int32(1), out=out(np.int32)),
                           "filter": plans["filter"].finish(plans["filter"](xs, out=out(np.int32),
                                                                            kept=out(np.int64, ())))}
                    stream.synchronize()
                for primitive, want in _expected(inputs[k]).items():
                    if primitive in got and not np.array_equal(cupy.asnumpy(got[primitive]), want):
                        failures.append((index, round_, primitive))
        except Exception as exc:  # reported below, with the thread
            failures.append((index, repr(exc)))

    _on_eight_threads(work)
    assert not failures


def test_eight_threads_replay_their_own_launches_of_one_plan():
    rng = np.random.default_rng(8)
    inputs = [rng.integers(-1000, 1000, 2**16 + 7 * k, dtype=np.int32) for k in range(8)]
    mapper, reducer = gpulab.make_map(twice, np.int32), gpulab.make_reduce(add, np.int32)
    failures, barrier = [], threading.Barrier(8)

    def work(index):
        try:
            data = inputs[index]
            stream = cupy.cuda.Stream(non_blocking=True)
            with stream:
                xs, doubled, total = cupy.asarray(data), cupy.empty(data.size, np.int64), cupy.empty((), np.int32)
                barrier.wait()
                for round_ in range(30):  # the same arrays every round: from the third on, graph replays
                    xs += 1
                    mapper(xs, out=doubled)
                    reducer(xs, np.int32(index), out=total)
                    if round_ % 10 == 9:
                        shifted = data + round_ + 1
                        if not (np.array_equal(doubled.get(), shifted * 2) and int(total) == shifted.sum() + index):
                            failures.append((index, round_))
            if mapper.prepared(32, ()).kernel_launcher("gpulab_map").graphs != 1:
                failures.append((index, "no graph of its repeated map"))
        except Exception as exc:  # reported below, with the thread
            failures.append((index, repr(exc)))

    _on_eight_threads(work)
    assert not failures


def _kernel_nodes(call) -> int:
    """How many kernels ``call`` launches: it is captured into a CUDA graph and the graph's nodes counted."""
    from cuda.bindings import driver

    stream = cupy.cuda.Stream(non_blocking=True)
    for _ in range(3):  # allocations and first builds happen outside the capture; the launch is replayed by now
        call(stream)
    stream.synchronize()
    (status,) = driver.cuStreamBeginCapture(stream.ptr, driver.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED)
    assert status == driver.CUresult.CUDA_SUCCESS
    call(stream)
    status, graph = driver.cuStreamEndCapture(stream.ptr)
    assert status == driver.CUresult.CUDA_SUCCESS
    status, *_, count = driver.cuGraphGetNodes(graph, 0)
    assert status == driver.CUresult.CUDA_SUCCESS
    driver.cuGraphDestroy(graph)
    return count


@pytest.mark.parametrize("n", [1000, 2**16, 2**20, 2**24 + 5])
def test_every_primitive_is_one_launch(n):
    xs = cupy.ones(n, np.int32)
    out, scalar, kept = cupy.empty_like(xs), cupy.empty((), np.int32), cupy.empty((), np.int64)
    doubled = cupy.empty(n, np.int64)  # x + x of int32 items is int64 (numba's typing); out= is never converted
    mapper, reducer = gpulab.make_map(twice, xs), gpulab.make_reduce(add, xs)
    scanner, filterer = gpulab.make_scan(add, xs), gpulab.make_filter(positive, xs)
    assert _kernel_nodes(lambda s: mapper(xs, out=doubled, stream=s)) == 1
    assert _kernel_nodes(lambda s: reducer(xs, np.int32(0), out=scalar, stream=s)) == 1
    assert _kernel_nodes(lambda s: scanner(xs, out=out, stream=s)) == 1
    assert _kernel_nodes(lambda s: filterer(xs, out=out, kept=kept, stream=s)) == 1
    assert int(scalar) == n and int(kept) == n


def test_a_reduce_counter_is_ready_for_every_next_launch():
    plan = gpulab.make_reduce(add, np.int64)
    data = cupy.arange(2**22, dtype=cupy.int64)
    temp = cupy.full(plan.temp_storage_bytes(data.size), 0xFF, cupy.uint8)  # partials need no zeroing
    for size in (2**22, 3, 2**16 + 1, 2**22 - 1, 5 * 4096, 2**20) * 3:
        for storage in (None, temp):
            got = plan(data[:size], np.int64(0), temp_storage=storage)
            assert int(got) == size * (size - 1) // 2, (size, storage is None)


@gpulab.kernel
def helper(x: gpulab.i64) -> gpulab.i64:
    return x + 1


offset = 10


def outer(x):
    return helper(x) + offset


def test_one_shot_calls_see_a_changed_uniform_and_a_redefined_helper(monkeypatch):
    xs = cupy.arange(4, dtype=cupy.int64)
    for _ in range(3):  # the repeated call takes the fast lookup
        np.testing.assert_array_equal(gpulab.map(outer, xs).get(), [11, 12, 13, 14])
    monkeypatch.setitem(globals(), "offset", 20)
    np.testing.assert_array_equal(gpulab.map(outer, xs).get(), [21, 22, 23, 24])

    def redefined(x: gpulab.i64) -> gpulab.i64:  # what the next notebook cell defines
        return x * 100

    monkeypatch.setitem(globals(), "helper", gpulab.kernel(redefined))
    np.testing.assert_array_equal(gpulab.map(outer, xs).get(), [20, 120, 220, 320])
    monkeypatch.setitem(globals(), "offset", 1.5)  # a float now: another build, the same plan
    np.testing.assert_array_equal(gpulab.map(outer, xs).get(), [1.5, 101.5, 201.5, 301.5])


def _plain_calls(data):
    """Per primitive: a reused plan, its call with every output given, and that call's host result."""
    xs = cupy.asarray(data)
    doubled, out = cupy.empty(N, np.int64), cupy.empty(N, np.int32)  # x + x of int32 items is int64 (numba)
    scalar, kept = cupy.empty((), np.int32), cupy.empty((), np.int64)
    mapper, reducer = gpulab.make_map(twice, xs), gpulab.make_reduce(add, xs)
    scanner, exclusive = gpulab.make_scan(add, xs), gpulab.make_scan(add, xs, exclusive=True)
    filterer = gpulab.make_filter(positive, xs)
    return {
        "map": (mapper, lambda x=xs: mapper(x, out=doubled), data * 2),
        "reduce": (reducer, lambda x=xs: reducer(x, np.int32(5), out=scalar), data.sum() + 5),
        "scan": (scanner, lambda x=xs: scanner(x, out=out), np.cumsum(data)),
        "scan, initial": (scanner, lambda x=xs: scanner(x, np.int32(3), out=out), np.cumsum(data) + 3),
        "exclusive scan": (exclusive, lambda x=xs: exclusive(x, np.int32(3), out=out),
                           np.concatenate([[3], np.cumsum(data)[:-1] + 3])),
        "filter": (filterer, lambda x=xs: filterer.finish(filterer(x, out=out, kept=kept)), data[data > 0]),
    }


def test_reused_plans_with_their_outputs_given_take_the_plain_call_and_give_the_host_results():
    data = np.random.default_rng(5).integers(-1000, 1000, N, dtype=np.int32)
    for name, (plan, call, want) in _plain_calls(data).items():
        assert plan._plain is None or plan._plain, name  # not refused: no uniforms, arrays only
        for _ in range(3):  # the first call loads the 32-bit build and takes the general path, the next the plain
            np.testing.assert_array_equal(cupy.asnumpy(call()), want, err_msg=name)
        assert plan._plain, name
        grid = cupy.asarray(data).reshape(1, N)  # C-contiguous, but not 1-D: the plain call reads its size
        np.testing.assert_array_equal(cupy.asnumpy(call(grid)), want, err_msg=f"{name} of a 2-d input")


def test_calls_that_allocate_their_outputs_take_the_plain_call_and_allocate_what_the_general_path_does():
    data = np.random.default_rng(7).integers(-1000, 1000, N, dtype=np.int32)
    xs, general = cupy.asarray(data).reshape(5, N // 5), cupy.cuda.get_current_stream()  # a stream: general path
    mapper, reducer = gpulab.make_map(twice, xs), gpulab.make_reduce(add, xs)
    scanner, filterer = gpulab.make_scan(add, xs), gpulab.make_filter(positive, xs)
    calls = {"map": (mapper, lambda **s: mapper(xs, **s)),
             "reduce": (reducer, lambda **s: reducer(xs, np.int32(5), **s)),
             "scan": (scanner, lambda **s: scanner(xs, **s)),
             "filter": (filterer, lambda **s: filterer.finish(filterer(xs, **s)))}
    for name, (plan, call) in calls.items():
        want = call(stream=general)
        for _ in range(3):
            got = call()
            assert (got.shape, got.dtype) == (want.shape, want.dtype), name
            np.testing.assert_array_equal(cupy.asnumpy(got), cupy.asnumpy(want), err_msg=name)
        assert plan._plain, name
    gpulab.map(twice, xs)  # one-shot calls reach the same kind of plan through the cache
    assert dispatch.plan_for(PRIMITIVES["map"], twice, [xs], dispatch.resolve_device(None))._plain


def test_every_call_the_plain_call_does_not_take_gives_what_the_general_path_gives():
    from gpulab.errors import ConversionError, HostArrayError, LengthMismatchError

    data = np.random.default_rng(6).integers(-1000, 1000, N, dtype=np.int32)
    xs = cupy.asarray(data)
    calls = _plain_calls(data)
    for _, call, _ in calls.values():
        call(), call()
    mapper, reducer, scanner = calls["map"][0], calls["reduce"][0], calls["scan"][0]
    out, doubled = cupy.empty(N, np.int32), cupy.empty(N, np.int64)
    pair = gpulab.make_map(add, xs, xs)
    for _ in range(2):
        np.testing.assert_array_equal(cupy.asnumpy(pair(xs, xs[::-1].copy(), out=doubled)), data + data[::-1])
    half = cupy.empty(len(data[::2]), np.int64)
    np.testing.assert_array_equal(cupy.asnumpy(mapper(xs[::2], out=half)), data[::2] * 2)
    np.testing.assert_array_equal(cupy.asnumpy(mapper(Interface(xs), out=doubled)), data * 2)
    columns = cupy.empty((N, 2), np.int64)
    np.testing.assert_array_equal(cupy.asnumpy(mapper(xs, out=columns[:, 1])), data * 2)
    np.testing.assert_array_equal(cupy.asnumpy(scanner(xs[::3], out=out[: len(data[::3])])), np.cumsum(data[::3]))
    assert int(reducer(xs, 5, out=cupy.empty((), np.int32))) == data.sum() + 5  # a Python initial value
    temp = cupy.zeros(scanner.temp_storage_bytes(N), np.uint8)
    np.testing.assert_array_equal(cupy.asnumpy(scanner(xs, out=out, temp_storage=temp)), np.cumsum(data))
    stream = cupy.cuda.Stream(non_blocking=True)
    doubled.fill(0)
    mapper(xs, out=doubled, stream=stream)
    stream.synchronize()
    np.testing.assert_array_equal(cupy.asnumpy(doubled), data * 2)
    with pytest.raises(ConversionError, match="output holds float32"):
        mapper(xs, out=cupy.empty(N, np.float32))
    with pytest.raises(ConversionError, match="input 0 holds float32"):
        reducer(xs.astype(np.float32), np.int32(0), out=cupy.empty((), np.int32))
    with pytest.raises(LengthMismatchError, match=f"the output has {N - 1} items"):
        scanner(xs, out=out[1:])
    with pytest.raises(LengthMismatchError, match="equal lengths"):
        pair(xs, xs[1:], out=doubled)
    with pytest.raises(LengthMismatchError, match="the output has 2 items"):
        reducer(xs, np.int32(0), out=cupy.empty(2, np.int32))
    with pytest.raises(HostArrayError):
        mapper(data, out=doubled)
    empty = cupy.empty(0, np.int64)
    assert mapper(cupy.empty(0, np.int32), out=empty) is empty
    assert int(reducer(cupy.empty(0, np.int32), np.int32(7), out=cupy.empty((), np.int32))) == 7

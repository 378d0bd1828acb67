"""Class 12: one build for many threads, on the device path and the host's, and nothing half-written left behind."""

import contextlib
import gc
import linecache
import threading
import time

import numpy as np
from threads import run_threads

import gpulab
from gpulab.kernel import parse
from gpulab.cache import BuildCache, reset_default_cache
from gpulab.cache.folder import TMP_PREFIX
from gpulab.host import run

THREADS = 16


def test_sixteen_threads_compiling_one_new_kernel_build_it_once_and_store_it_whole(tmp_path):
    cache = BuildCache(tmp_path / "cache", shared=())
    reset_default_cache(cache)
    try:
        def sixteen_way(a, b):
            return a * 16 + b

        results = run_threads(THREADS, lambda: gpulab.compile("map", sixteen_way, types="i32,i32", target="sm_90"))
        assert not [r for r in results if isinstance(r, BaseException)], results
        assert cache.info().builds == 2  # the build and its disassembly, once each
        assert all(r.key == results[0].key and r.artifacts is results[0].artifacts for r in results)  # one build
        sass = results[0].sass
        assert "IMAD" in sass or "LEA" in sass or "ISCADD" in sass

        # What the threads left on disk reads back whole in a new process's cache: no build, the same code.
        again = BuildCache(tmp_path / "cache", shared=())
        reset_default_cache(again)
        reread = gpulab.compile("map", sixteen_way, types="i32,i32", target="sm_90")
        assert again.info().builds == 0
        assert reread.cubin == results[0].cubin and reread.sass == sass
        assert not [p for p in (tmp_path / "cache").rglob(f"{TMP_PREFIX}*")]
    finally:
        reset_default_cache(None)


def test_sixteen_threads_on_the_host_make_one_operator_and_the_right_values():
    def host_sixteen(a, b):
        return a * 16 + b

    x = np.arange(1000, dtype=np.int64)
    run.OPERATORS.clear()  # a full cache (the tests before this one in a process) would evict one for it
    results = run_threads(THREADS, lambda: gpulab.map(host_sixteen, x, x, device="host"))
    assert not [r for r in results if isinstance(r, BaseException)], results
    assert len(run.OPERATORS) == 1
    for result in results:
        np.testing.assert_array_equal(result, x * 17)


@contextlib.contextmanager
def _thread_switches_inside_the_ast_converter():
    """Collect garbage often and sleep in every collection, so that a thread converting an AST lets others run.

    That is what made 16 host threads fail now and then: CPython 3.11 counts the AST converter's recursion per
    interpreter, not per thread (gh-106905), and a thread switch inside it (a collection running a weakref
    callback) gave ``SystemError: AST constructor recursion depth mismatch``. Under this, plain ``ast.parse``
    in four threads fails within a few hundred parses.
    """
    def pause(phase, info):
        if phase == "start":
            time.sleep(0.0005)

    threshold = gc.get_threshold()
    gc.callbacks.append(pause)
    gc.set_threshold(50)
    try:
        yield
    finally:
        gc.callbacks.remove(pause)
        gc.set_threshold(*threshold)


def _at_depth(depth: int, work):
    """Run ``work`` ``depth`` Python frames deeper (threads at different depths make the miscount visible)."""
    return _at_depth(depth - 1, work) if depth else work()


def test_threads_parsing_at_once_never_see_the_ast_recursion_miscount():
    text = "def f(x):\n" + "".join(f"    y{i} = (x + {i}) * (x - {i})\n" for i in range(200)) + "    return x\n"
    with _thread_switches_inside_the_ast_converter():
        results = run_threads(4, lambda: _at_depth(5 * threading.get_ident() % 20,
                                                   lambda: [parse(text) for _ in range(10)]))
    assert not [r for r in results if isinstance(r, BaseException)], results


def test_threads_checking_new_kernels_at_once_never_see_the_ast_recursion_miscount():
    def define(index: int):
        text = (f"def many_{index}(a: gpulab.i64, b: gpulab.i64) -> gpulab.i64:\n"
                + "".join(f"    a = a * {i} + b\n" for i in range(40)) + "    return a\n")
        filename = f"<many-threads-{index}-{time.time_ns()}>"
        linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
        namespace = {"gpulab": gpulab}
        exec(compile(text, filename, "exec"), namespace)
        return namespace[f"many_{index}"]

    functions = iter([define(i) for i in range(THREADS * 2)])
    lock = threading.Lock()

    def check_two():
        for _ in range(2):
            with lock:
                fn = next(functions)
            _at_depth(hash(fn.__name__) % 20, lambda: gpulab.Kernel(fn).python_function())

    with _thread_switches_inside_the_ast_converter():
        results = run_threads(THREADS, check_two)
    assert not [r for r in results if isinstance(r, BaseException)], results

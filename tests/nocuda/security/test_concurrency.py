"""Class 12: one build for many threads, on the device path and the host's, and nothing half-written left behind."""

import numpy as np
from threads import run_threads

import gpulab
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
        assert all(r is results[0] for r in results)
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
    before = len(run.OPERATORS)
    results = run_threads(THREADS, lambda: gpulab.map(host_sixteen, x, x, device="host"))
    assert not [r for r in results if isinstance(r, BaseException)], results
    assert len(run.OPERATORS) == before + 1
    for result in results:
        np.testing.assert_array_equal(result, x * 17)

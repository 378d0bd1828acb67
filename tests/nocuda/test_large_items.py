"""Items too large for a tile's shared memory: records of 32 bytes and more in scan, filter, segmented_reduce
and reduce_by_key.

A tile's shared memory grows with its items' size; past what a block may
declare (48 KiB), ptxas refuses the kernel, and the pipeline builds it in
smaller tiles until it fits (codegen's ``shrink``), or says that it cannot.
tests/gpu/test_large_items_on_device.py runs them against the host.
"""

import numpy as np
import pytest
from large_items import larger, positive, record

import gpulab
from gpulab.compiler import codegen, link
from gpulab.errors import LimitError
from gpulab.registry import PRIMITIVES

MOST_SHARED = 48 * 1024


def build(primitive: str, dtype: np.dtype, order: str = "device"):
    if primitive == "filter":
        return gpulab.compile("filter", positive, types=[dtype], target="sm_90")
    keys = {"keys": np.int32} if primitive == "reduce_by_key" else {}
    return gpulab.compile(primitive, larger, types=[dtype, dtype], target="sm_90", order=order, associative=True,
                          **keys)


@pytest.mark.parametrize(("primitive", "size", "order"), [
    ("scan", 32, "device"), ("scan", 128, "portable"), ("filter", 64, "device"), ("reduce_by_key", 64, "device"),
    ("segmented_reduce", 48, "portable"),
])
def test_a_tile_of_large_records_is_built_smaller_until_it_fits(primitive, size, order):
    built = build(primitive, record(size), order)
    usual = codegen.geometry_for([gpulab.element_type(record(size))], PRIMITIVES[primitive],
                                 portable=order == "portable")
    assert built.geometry.scan_tile < usual.scan_tile  # smaller than its usual shape, which did not fit
    assert max(r.shared_bytes for r in built.resources.values()) <= MOST_SHARED
    assert f"#define SCAN_ITEMS {built.geometry.scan_items} " in built.source
    assert "// The tile is halved" in built.source  # the CUDA pane says why its tile is smaller
    line = larger.__code__.co_firstlineno + 2 if primitive != "filter" else positive.__code__.co_firstlineno + 1
    assert line in built.line_map.python_lines()  # the operator's line still reaches the SASS


def smaller(a, b):
    return b if b.f0 < a.f0 else a


def test_another_operator_on_the_same_records_is_linked_in_fitting_tiles_at_once(monkeypatch):
    """The halvings a kernel needed are remembered by its text: no refused shape is linked again (~1 s each)."""
    first = build("scan", record(64))
    links = []
    real_link = link.link
    monkeypatch.setattr(link, "link", lambda *args, **kw: links.append(args) or real_link(*args, **kw))
    second = gpulab.compile("scan", smaller, types=[record(64)] * 2, target="sm_90", associative=True)
    assert len(links) == 1
    assert second.geometry == first.geometry and "// The tile is halved" in second.source
    assert max(r.shared_bytes for r in second.resources.values()) <= MOST_SHARED


def test_a_tile_that_fits_keeps_its_usual_shape():
    built = build("scan", record(16))
    assert (built.geometry.block_threads, built.geometry.scan_items) == (codegen.SCAN_BLOCK_THREADS, 8)
    assert f"#define LOOKBACK_TILES {codegen.LOOKBACK_TILES} " in built.source and "halved" not in built.source


def test_a_block_of_fewer_threads_looks_back_over_fewer_tiles():
    built = build("scan", record(128))
    assert built.geometry.block_threads < codegen.SCAN_BLOCK_THREADS and built.geometry.scan_items == 1
    assert f"#define LOOKBACK_TILES {built.geometry.block_threads} " in built.source


def test_records_too_large_for_the_smallest_tile_are_refused_with_what_to_do():
    """The segmented reduce's search needs all 256 threads of its block: 64-byte records do not fit."""
    with pytest.raises(LimitError, match=r"segmented_reduce of 64-byte record items needs [\d,]+ bytes of shared "
                                         r"memory per block even in its smallest tiles, more than the 49,152 a "
                                         r"kernel may declare: use smaller items") as caught:
        build("segmented_reduce", record(64))
    assert caught.value.location is not None


def test_numba_cuda_mlir_operators_are_built_in_smaller_tiles_too():
    pytest.importorskip("numba_cuda_mlir")
    built = gpulab.compile("scan", larger, types=[record(64)] * 2, target="sm_90", frontend="numba-cuda-mlir",
                           associative=True)
    assert built.geometry.block_threads < codegen.SCAN_BLOCK_THREADS
    assert max(r.shared_bytes for r in built.resources.values()) <= MOST_SHARED

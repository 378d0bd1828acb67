"""The variants bench/sweep.py times: codegen tuning constants to set, and the primitives they change.

Kept apart from the sweep (which needs CuPy and a GPU) so that a CPU test can build every variant
and check it has no CALL in its SASS before anyone spends GPU time on it.
"""

from gpulab.compiler import codegen, spec

SCAN, REDUCE, MAP = ("scan", "filter"), ("reduce",), ("map",)
SEGMENTS = ("segmented_reduce", "reduce_by_key")
SORT, HISTOGRAM = ("sort",), ("histogram",)
VARIANTS = {  # name: (constants, what they change)
    "landed": ({}, ("scan", "filter", "reduce", "map", *SEGMENTS, *SORT, *HISTOGRAM)),
    "window128": ({"LOOKBACK_TILES": 128}, SCAN),
    "window512": ({"LOOKBACK_TILES": 512}, SCAN),
    # issue 11, scan levers (run B): a shorter serial fold of the window (groups of 32 slots), wider windows
    "window512-group32": ({"LOOKBACK_TILES": 512, "LOOKBACK_GROUP": 32}, SCAN),
    "window1024-group32": ({"LOOKBACK_TILES": 1024, "LOOKBACK_GROUP": 32}, SCAN),
    "window256-group8": ({"LOOKBACK_GROUP": 8}, SCAN),
    # resident threads: SCAN_ for scan of items up to 4 bytes, TILE_ for filter and wider scans
    "scan512x64B-1536": ({"SCAN_BLOCK_THREADS": 512, "SCAN_THREAD_BYTES": 64, "SCAN_RESIDENT_THREADS": 1536,
                          "TILE_RESIDENT_THREADS": 1536}, SCAN),
    "scan256x64B-1536": ({"SCAN_THREAD_BYTES": 64, "SCAN_RESIDENT_THREADS": 1536, "TILE_RESIDENT_THREADS": 1536},
                         SCAN),
    "scan256x128B-768": ({"SCAN_RESIDENT_THREADS": 768, "TILE_RESIDENT_THREADS": 768}, SCAN),
    "scan256x128B-1280": ({"TILE_RESIDENT_THREADS": 1280}, SCAN),  # filter and 8-byte scans at 1280 too
    "scan256x96B-1280": ({"SCAN_THREAD_BYTES": 96, "TILE_RESIDENT_THREADS": 1280}, SCAN),
    "scan-1024": ({"SCAN_RESIDENT_THREADS": 1024}, ("scan",)),  # the scan landed before run 22
    "filter-768": ({"TILE_RESIDENT_THREADS": 768}, ("filter",)),  # 80 registers: no spill on sm_90
    "reduce64B": ({"REDUCE_THREAD_BYTES": 64}, REDUCE),
    "reduce128B": ({"REDUCE_THREAD_BYTES": 128}, REDUCE),
    # issue 11, reduce levers (run B): blocks per SM (a register cap, or 128 bytes a thread), and
    # several rows of loads per block folded a batch at a time so the tail is paid once
    "reduce-1block": ({"REDUCE_MIN_BLOCKS": 1}, REDUCE),  # no cap: 188 registers (the default before run B)
    "reduce128B-3blocks": ({"REDUCE_THREAD_BYTES": 128, "REDUCE_MIN_BLOCKS": 3}, REDUCE),  # 128B alone: 2 blocks
    "reduce128B-4blocks": ({"REDUCE_THREAD_BYTES": 128, "REDUCE_MIN_BLOCKS": 4}, REDUCE),
    "reduce512B-8rows": ({"REDUCE_THREAD_BYTES": 512, "MAX_REDUCE_ROWS": 32, "MAX_REDUCE_ITEMS": 128,
                          "REDUCE_ROWS_IN_FLIGHT": 8}, REDUCE),
    "block512-reduce128B": ({"BLOCK_THREADS": 512, "REDUCE_THREAD_BYTES": 128}, REDUCE + MAP),
    "map-unroll1": ({"MAP_UNROLL": 1}, MAP),
    "map-unroll4": ({"MAP_UNROLL": 4}, MAP),
    # issue 41, the segment primitives' tiles: resident threads (a register cap of 48 or 80), bytes per thread
    "segments-1280": ({"TILE_RESIDENT_THREADS": 1280}, SEGMENTS),
    "segments-768": ({"TILE_RESIDENT_THREADS": 768}, SEGMENTS),
    "segments64B": ({"SCAN_THREAD_BYTES": 64}, SEGMENTS),
    "segments64B-1536": ({"SCAN_THREAD_BYTES": 64, "TILE_RESIDENT_THREADS": 1536}, SEGMENTS),
    "segments-early-loads": ({"SEGMENT_EARLY_LOADS": 1}, ("segmented_reduce",)),  # loads in flight during the search
    # issue 41, sort: blocks per SM (a register cap of 64, or 128), items per thread (12 or 24 of 4 bytes)
    "sort-4blocks": ({"SORT_MIN_BLOCKS": 4}, SORT),
    "sort-2blocks": ({"SORT_MIN_BLOCKS": 2}, SORT),
    "sort-12items": ({"SORT_THREAD_BYTES": 48}, SORT),
    "sort-24items": ({"SORT_THREAD_BYTES": 96, "MAX_SORT_ITEMS": 24}, SORT),
    # issue 41, histogram: blocks per SM the registers allow (42 or 128 registers), half the shared counts
    "histogram-6blocks": ({"HISTOGRAM_MIN_BLOCKS": 6}, HISTOGRAM),
    "histogram-2blocks": ({"HISTOGRAM_MIN_BLOCKS": 2}, HISTOGRAM),
    "histogram-16copies": ({"SHARED_BIN_WORDS": 4096}, HISTOGRAM),
}
DEFAULTS = {name: getattr(codegen, name) for variant, _ in VARIANTS.values() for name in variant}


def use(variant: dict) -> None:
    """Set codegen's constants to ``variant`` (the others to their defaults)."""
    for name, value in {**DEFAULTS, **variant}.items():
        setattr(codegen, name, value)
    spec.toolchain_versions.cache_clear()  # the template fingerprint digests the constants

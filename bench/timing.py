"""What every GPU benchmark here shares: CUDA-event timing, the table of rows as ratios to a copy, the versions.

Timing: CUDA events around each call, warm-up, the median of the repeats; inputs of 2^28 items (``N``) are far
larger than L2. Each row of a :class:`Table` is a ratio to the device-to-device copy of the same run
(:func:`copy_row`).
"""

from __future__ import annotations

import platform
import statistics
from importlib.metadata import PackageNotFoundError, version

import cupy

N = 2**28
REPEATS = 20
WARMUP = 3


def gpu_seconds(call, repeats=REPEATS, warmup=WARMUP) -> float:
    """Median seconds of ``call`` between two CUDA events on the current stream."""
    for _ in range(warmup):
        call()
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    samples = []
    for _ in range(repeats):
        start.record()
        call()
        end.record()
        end.synchronize()
        samples.append(cupy.cuda.get_elapsed_time(start, end) / 1e3)
    return statistics.median(samples)


def versions() -> dict:
    """The Python, library, toolkit and driver versions a result file names."""
    found = {"python": platform.python_version()}
    for name in ("gpulab", "numba-cuda", "numba-cuda-mlir", "numba", "cupy-cuda13x", "cuda-bindings", "cuda-cccl",
                 "numpy", "nvidia-cuda-nvrtc", "nvidia-nvjitlink"):
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            pass
    from gpulab.compiler import link, nvrtc

    found["nvrtc"] = ".".join(map(str, nvrtc.version()))
    found["nvjitlink"] = ".".join(map(str, link.version()))
    found["driver"] = cupy.cuda.runtime.driverGetVersion()
    return found


class Table:
    """Rows of (name, dtype, seconds, bytes) and the copy they are compared with."""

    def __init__(self):
        self.rows = []

    def add(self, name, dtype, seconds, moved_bytes, **extra):
        self.rows.append({"name": name, "dtype": dtype, "seconds": seconds, "bytes": moved_bytes,
                          "gb_per_s": moved_bytes / seconds / 1e9 if seconds else None, **extra})

    def try_add(self, name, dtype, moved_bytes, call):
        try:
            self.add(name, dtype, gpu_seconds(call), moved_bytes)
        except Exception as exc:  # a peer that cannot run here is reported, not fatal
            self.rows.append({"name": name, "dtype": dtype, "error": f"{type(exc).__name__}: {exc}"[:300]})

    def print(self, copy_gbps):
        print(f"{'what':58} {'dtype':8} {'GB/s':>8} {'x copy':>7}")
        for row in self.rows:
            if "error" in row:
                print(f"{row['name']:58} {row['dtype']:8} {'error: ' + row['error'][:60]}")
                continue
            row["vs_copy"] = row["gb_per_s"] / copy_gbps
            keys = f" {row['g_keys_per_s']:6.2f} G keys/s" if "g_keys_per_s" in row else ""
            print(f"{row['name']:58} {row['dtype']:8} {row['gb_per_s']:8.0f} {row['vs_copy']:7.2f}{keys}")


def copy_row(table: Table, dtype: str) -> None:
    """The device-to-device copy of N items (read + write bytes): what every row is a ratio to."""
    xs, out = cupy.zeros(N, dtype), cupy.empty(N, dtype)
    table.try_add("device-to-device copy (read+write)", dtype, 2 * xs.nbytes, lambda: out.__setitem__(Ellipsis, xs))


def sizes(text: str) -> list[int]:
    """``"2^10,65536"`` -> ``[1024, 65536]``."""
    sizes = []
    for part in text.split(","):
        base, _, exponent = part.strip().partition("^")
        sizes.append(int(base) ** int(exponent) if exponent else int(base))
    return sizes

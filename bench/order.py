"""What order="portable" costs: reduce and scan of 2^28 float32 items in the device order and the portable one.

``python bench/order.py [--runs 3] [--json FILE]`` times, in each run, a device-to-device copy of the items,
then reused ``make_reduce`` and ``make_scan`` objects of ``a + b`` in both orders (median of CUDA events,
bench/timing.py's ``gpu_seconds``), and prints GB/s, the ratio to that run's copy and portable's ratio to
device (issue 44's targets: reduce within 5%, scan within 10%). Where the cost comes from, the templates say
(gpulab/compiler/templates/order.cu, reduce.cu, scan.cu).
"""

import argparse
import json
import os
import sys

import cupy
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from primitives import N, add  # noqa: E402
from timing import gpu_seconds  # noqa: E402

import gpulab  # noqa: E402


def run(xs) -> dict:
    """One run's GB/s: the copy (read + write bytes), each reduce (read bytes) and scan (read + write bytes)."""
    out, scanned, zero = cupy.empty_like(xs), cupy.empty_like(xs), np.float32(0)
    found = {"copy": 2 * xs.nbytes / gpu_seconds(lambda: out.__setitem__(Ellipsis, xs)) / 1e9}
    for order in ("device", "portable"):
        reducer = gpulab.make_reduce(add, xs, order=order)
        total = cupy.empty((), xs.dtype)
        found[f"reduce {order}"] = xs.nbytes / gpu_seconds(lambda: reducer(xs, zero, out=total)) / 1e9
        scanner = gpulab.make_scan(add, xs, order=order)
        found[f"scan {order}"] = 2 * xs.nbytes / gpu_seconds(lambda: scanner(xs, out=scanned)) / 1e9
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", help="write the runs here")
    args = parser.parse_args()
    xs = cupy.asarray(np.random.default_rng(0).standard_normal(N, dtype=np.float32))
    device = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    runs = []
    for number in range(1, args.runs + 1):
        found = run(xs)
        runs.append(found)
        print(f"run {number} on {device}, float32, 2^{N.bit_length() - 1} items")
        for name, gbps in found.items():
            print(f"  {name:16} {gbps:8.0f} GB/s  {gbps / found['copy']:5.2f} x copy")
        for primitive in ("reduce", "scan"):
            print(f"  {primitive} portable / device: {found[f'{primitive} portable'] / found[f'{primitive} device']:.3f}")
    if args.json:
        with open(args.json, "w") as file:
            json.dump({"device": device, "n": N, "dtype": "float32", "runs": runs}, file, indent=1)


if __name__ == "__main__":
    main()

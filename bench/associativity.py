"""How long the associativity probe of a reduce's or scan's operator takes at build time. Runs without a GPU.

``python bench/associativity.py [--runs 7]`` probes, each from an empty
verdict cache, operators the probe passes (the whole value set is tried:
its longest case), fails at once, or stops on its time limit, per element
type, prints the medians and writes
``bench/results/associativity-<machine>.json``. A repeated probe of the same
kernel, types and uniform values is a lookup.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from compile import write_cpu_record

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PAIR = np.dtype([("value", np.float32), ("index", np.int32)], align=True)
TRIPLE = np.dtype([("value", np.float32), ("index", np.int32), ("weight", np.float32)], align=True)


def add(a, b):
    return a + b


def minus(a, b):
    return a - b


def first_nonzero(a, b):
    return a if a != 0 else b


def smallest(a, b):
    return a if a.value <= b.value else b


def count_up(a, b):
    while b > 0:
        a = a + 1
        b = b - 1
    return a


CASES = [  # (name, operator, element type)
    ("add int32 (passes)", add, np.int32),
    ("add float32 (passes)", add, np.float32),
    ("add float64 (passes)", add, np.float64),
    ("add complex64 (passes)", add, np.complex64),
    ("first non-zero int64 (passes)", first_nonzero, np.int64),
    ("smallest of (f32, i32) records (a NaN note)", smallest, PAIR),
    ("smallest of (f32, i32, f32) records (a NaN note)", smallest, TRIPLE),
    ("minus int32 (fails at the first triple)", minus, np.int32),
    ("a loop of 2**31 steps (stopped by the time limit)", count_up, np.int32),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = parser.parse_args()

    from gpulab.compiler import associativity
    from gpulab.kernel import as_kernel
    from gpulab.types import element_type

    rows = {}
    for name, fn, dtype in CASES:
        kernel, element = as_kernel(fn), element_type(dtype)
        seconds = []
        for _ in range(args.runs):
            associativity.VERDICTS.clear()
            start = time.perf_counter()
            associativity.probe(kernel, element)
            seconds.append(time.perf_counter() - start)
        start = time.perf_counter()
        associativity.probe(kernel, element)
        rows[name] = {"median": statistics.median(seconds), "min": min(seconds),
                      "values": len(associativity.probe_values(element)), "cached": time.perf_counter() - start}
    print(f"associativity probe, median of {args.runs} (empty verdict cache), {os.cpu_count()} CPUs, "
          f"load {os.getloadavg()[0]:.1f}")
    for name, row in rows.items():
        print(f"  {name:52} {row['values']:3} values {row['median'] * 1e3:8.2f} ms (min {row['min'] * 1e3:.2f}; "
              f"cached {row['cached'] * 1e6:.0f} us)")
    write_cpu_record(args.out, "associativity", {"runs": args.runs, "time_limit_seconds": associativity.SECONDS,
                                                 "seconds": rows})


if __name__ == "__main__":
    main()

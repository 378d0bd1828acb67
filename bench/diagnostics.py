"""Three kernels where a diagnostic fires, the fix it names applied, and the time before and after.

Run on a GPU: ``python bench/diagnostics.py [--out DIR]``. Without one
(``--target sm_90``) it compiles every kernel, checks that the diagnostic
fires before the fix and not after, and skips the timing.

- float64 promotion: a float32 polynomial written with Python float
  constants (float64) against the same with ``f32(...)`` constants;
- a spill: a float64 log-add-exp scan (spills under the scan's register
  cap) against two fixes: one ``exp`` instead of two (same precision), and
  float32 (it spills a little under the tighter cap of 4-byte scans);
- an unvectorised strided input: a map over every second item of an array
  against the same items copied to a contiguous array first.

Timing as in ``bench/primitives.py``: reused plan objects, CUDA events, the
median of the repeats, inputs far larger than L2. Writes
``diagnostics-<gpu>.json`` with the GPU, driver and toolchain versions.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import gpulab  # noqa: E402
from gpulab import f32, f64  # noqa: E402
from gpulab.compiler.analysis import diagnostics  # noqa: E402

N = 2**26


def poly_promoted(a: f32, b: f32) -> f32:
    return ((((a * 0.5 + 0.25) * a + 0.125) * a + 0.0625) * a + 0.03125) * a + b


def poly_single(a: f32, b: f32) -> f32:
    return ((((a * f32(0.5) + f32(0.25)) * a + f32(0.125)) * a + f32(0.0625)) * a + f32(0.03125)) * a + b


def log_add_exp64(a: f64, b: f64) -> f64:
    m = max(a, b)
    return m + math.log(math.exp(a - m) + math.exp(b - m))


def log_add_exp64_one_exp(a: f64, b: f64) -> f64:
    return max(a, b) + math.log1p(math.exp(-abs(a - b)))


def log_add_exp32(a: f32, b: f32) -> f32:
    return max(a, b) + math.log1p(math.exp(-abs(a - b)))


def axpb(x: f32) -> f32:
    return x * f32(2) + f32(1)


# (case, diagnostic kind, primitive, function, what it is, whether the diagnostic should fire)
CASES = [
    ("float64", "float64", "map", poly_promoted, "before: Python float constants", True),
    ("float64", "float64", "map", poly_single, "after: f32(...) constants", False),
    ("spill", "spill", "scan", log_add_exp64, "before: float64, two exp", True),
    ("spill", "spill", "scan", log_add_exp64_one_exp, "fix 1: float64, one exp", True),
    ("spill", "spill", "scan", log_add_exp32, "fix 2: float32", True),
]


def diagnose(target, strided_example, contiguous_example) -> list[dict]:
    """Compile every case for ``target`` and record which diagnostics fire."""
    rows = []
    for case, kind, primitive, fn, what, expected in CASES:
        build = gpulab.compile(primitive, fn, target=target)
        rows.append(_row(case, kind, primitive, fn, what, expected, build, gpulab.diagnostics(build)))
    build = gpulab.compile("map", axpb, target=target)
    for what, example, expected in (("before: strided view x[::2]", strided_example, True),
                                    ("after: contiguous copy", contiguous_example, False)):
        rows.append(_row("strided", "unvectorised", "map", axpb, what, expected, build,
                         diagnostics(build, inputs=[example])))
    return rows


def _row(case, kind, primitive, fn, what, expected, build, found) -> dict:
    resources = next(iter(build.resources.values()))
    return {"case": case, "what": what, "primitive": primitive, "function": fn.__name__, "target": build.target.arch,
            "fires": any(d.kind == kind for d in found), "expected": expected,
            "diagnostics": [d.as_dict() for d in found],
            "registers": resources.registers, "spill_stores": resources.spill_stores, "origin": build.origin,
            "sass_instructions": build.sass_instructions}


def time_cases(rows: list[dict]) -> None:
    """Add ``seconds`` and ``items_per_s`` to each row (needs a GPU and CuPy)."""
    import cupy

    from timing import gpu_seconds

    rng = cupy.random.default_rng(0)
    functions = {case[3].__name__: case[3] for case in CASES}
    for row in rows:
        if row["case"] == "strided":
            continue
        fn = functions[row["function"]]
        dtype = np.float64 if "64" in row["function"] else np.float32
        xs = rng.standard_normal(N, dtype=dtype)
        if row["primitive"] == "map":
            ys = rng.standard_normal(N, dtype=dtype)
            plan, out = gpulab.make_map(fn, xs, ys), cupy.empty(N, dtype)
            row["seconds"] = gpu_seconds(lambda: plan(xs, ys, out=out))
        else:
            plan, out = gpulab.make_scan(fn, xs), cupy.empty(N, dtype)
            row["seconds"] = gpu_seconds(lambda: plan(xs, out=out))
        row["items_per_s"] = N / row["seconds"]
    big = rng.standard_normal(2 * N, dtype=np.float32)
    strided, contiguous = big[::2], cupy.ascontiguousarray(big[::2])
    plan, out = gpulab.make_map(axpb, contiguous), cupy.empty(N, np.float32)
    timings = {"before: strided view x[::2]": gpu_seconds(lambda: plan(strided, out=out)),
               "after: contiguous copy": gpu_seconds(lambda: plan(contiguous, out=out))}
    copy_seconds = gpu_seconds(lambda: cupy.ascontiguousarray(strided))
    for row in rows:
        if row["case"] == "strided":
            row["seconds"] = timings[row["what"]]
            row["items_per_s"] = N / row["seconds"]
            if row["what"].startswith("after"):
                row["seconds_with_the_copy"] = row["seconds"] + copy_seconds


def _versions(gpu: bool) -> dict:
    from importlib.metadata import PackageNotFoundError, version

    found = {"python": platform.python_version()}
    for name in ("gpulab", "numba-cuda", "numba", "cupy-cuda13x", "cuda-bindings", "numpy"):
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            pass
    if gpu:
        import cupy

        found["driver"] = cupy.cuda.runtime.driverGetVersion()
    return found


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("."), help="folder for the JSON (default: here)")
    parser.add_argument("--target", default=None, help="compile for this target and skip timing (no GPU needed)")
    arguments = parser.parse_args(argv)
    gpus = [d for d in gpulab.devices() if d.is_gpu]
    timed = arguments.target is None and bool(gpus)
    target = arguments.target or (gpus[0].compute_capability if gpus else "sm_90")
    host = np.zeros(2 * 4096, np.float32)  # the layout question is the same on the host
    rows = diagnose(target, host[::2], np.ascontiguousarray(host[::2]))
    if timed:
        time_cases(rows)
    wrong = [r for r in rows if r["fires"] != r["expected"]]
    for row in rows:
        speed = f"{row['items_per_s'] / 1e9:8.2f} G items/s" if "items_per_s" in row else "   (not timed)"
        print(f"{row['case']:9} {row['what']:46} {row['target']:7} fires={str(row['fires']):5} "
              f"regs={row['registers']:3} spill={row['spill_stores']} {speed}")
    name = gpus[0].description.replace(" ", "-") if timed else f"{target}-compile-only"
    arguments.out.mkdir(parents=True, exist_ok=True)
    path = arguments.out / f"diagnostics-{name}.json"
    path.write_text(json.dumps({"n": N, "timed": timed, "gpu": gpus[0].description if timed else None,
                                "versions": _versions(timed), "rows": rows}, indent=1, default=str))
    print(f"wrote {path}")
    if wrong:
        print("a diagnostic did not behave as expected:", [(r["case"], r["what"]) for r in wrong])
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())

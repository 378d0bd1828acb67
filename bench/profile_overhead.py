"""What measuring a kernel with gpulab.profile costs: the profiled call's wall time against a plain call's, and the
kernel's own time with and without the profiler (its duration in the report against CUDA events).

    python bench/profile_overhead.py OUT.json [CASE ...]

Cases are tests/golden/profile_cases.py's (by default a map, a reduce and a scan). Needs a GPU and ncu.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "golden")]

import gpulab  # noqa: E402
import profile_cases  # noqa: E402
from gpulab.bench import _time_device, default_initial  # noqa: E402
from gpulab.device import current_device  # noqa: E402
from gpulab.kernel import as_kernel  # noqa: E402
from gpulab.profiler import ncu  # noqa: E402

DEFAULT_CASES = ("map-exp64", "reduce-add32", "scan-add32")
REPEATS = 20


def _median_wall_seconds(call) -> float:
    import cupy

    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        call()
        cupy.cuda.runtime.deviceSynchronize()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def measure(name: str) -> dict:
    import cupy

    case = profile_cases.CASES[name]
    arguments = case.make(cupy)
    initial = default_initial(case.primitive, as_kernel(case.function), None)
    if initial is not None:
        arguments.append(initial)
    primitive = getattr(gpulab, case.primitive)

    def call():
        return primitive(case.function, *arguments, **case.options)

    call()
    events = _time_device(lambda _: call(), [None], REPEATS, 3)[0]
    wall = _median_wall_seconds(call)
    profiled = []
    for _ in range(2):  # the second finds ncu's files in the page cache
        found = gpulab.profile(primitive, case.function, *arguments, **case.options)
        profiled.append(found.seconds)
    durations = [launch.metrics().get("duration") for launch in found.launches]
    return {"case": name, "primitive": case.primitive, "n": case.n, "call_wall_seconds": wall,
            "kernel_seconds": events, "profiled_call_seconds": profiled,
            "kernel_seconds_profiled": sum(d for d in durations if d) * 1e-9 if all(durations) else None,
            "launches": len(found.launches), "samples": found.measures().total.samples}


def main(out: str, names) -> None:
    rows = []
    for name in names:
        row = measure(name)
        rows.append(row)
        print(f"{name:16} call {row['call_wall_seconds'] * 1e6:9.1f} us  kernel {row['kernel_seconds'] * 1e6:9.1f} us"
              f"  under ncu {(row['kernel_seconds_profiled'] or 0) * 1e6:9.1f} us  profiled call "
              f"{', '.join(f'{s:.2f}' for s in row['profiled_call_seconds'])} s  ({row['samples']} samples)",
              flush=True)
    tool = ncu.find()
    version = subprocess.run([tool, "--version"], capture_output=True, text=True).stdout.strip().splitlines()
    Path(out).write_text(json.dumps({"gpu": current_device().description, "ncu": tool,
                                     "ncu_version": version[-1] if version else None, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:] or DEFAULT_CASES)

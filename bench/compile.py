"""Build latency: cold, warm, disk hit and memory hit, each stage's share. Runs without a GPU.

``python bench/compile.py [--target sm_90]`` prints a table and writes
``bench/results/compile-<machine>.json``. "Fresh process" numbers run a new
Python interpreter each time (numba, NVRTC and nvJitLink start cold).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Run in a child interpreter: time one build of a spec given by a seed.
CHILD = r"""
import json, sys, time
start = time.perf_counter()
import gpulab, gpulab.cache
imported = time.perf_counter() - start
seed, target = int(sys.argv[1]), sys.argv[2]
namespace = {}
source = f"def op(a, b):\n    return a * {seed}.5 + b\n"
path = sys.argv[3]
with open(path, "w") as file:
    file.write(source)
exec(compile(source, path, "exec"), namespace)
from gpulab.compiler.build import build_for, make_spec
start = time.perf_counter()
build = build_for(make_spec("reduce", namespace["op"], types="f32,f32", target=target))
seconds = time.perf_counter() - start
start = time.perf_counter()
build.disassembled()
disasm = time.perf_counter() - start
info = gpulab.cache.cache_info()
print(json.dumps({"import": imported, "build": seconds, "disasm": disasm, "timings": build.timings,
                  "disk_hits": info.disk_hits, "builds": info.builds}))
"""


def child(seed: int, target: str, cache_dir: str, source_dir: str) -> dict:
    env = dict(os.environ, GPULAB_CACHE_DIR=cache_dir, PYTHONPATH=str(ROOT))
    path = os.path.join(source_dir, f"op{seed}.py")
    result = subprocess.run([sys.executable, "-c", CHILD, str(seed), target, path], env=env,
                            capture_output=True, text=True, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def in_process(target: str, cache_dir: str, source_dir: str, count: int) -> tuple[list, list, list, dict]:
    os.environ["GPULAB_CACHE_DIR"] = cache_dir
    sys.path.insert(0, str(ROOT))
    import gpulab
    import gpulab.cache

    gpulab.cache.reset_default_cache()
    from gpulab.compiler.build import build_for, make_spec

    warm_new, warm_view, memory_hits, stages = [], [], [], {}
    for seed in range(1000, 1000 + count + 1):
        path = os.path.join(source_dir, f"warm{seed}.py")
        source = f"def op(a, b):\n    return a * {seed}.5 + b\n"
        Path(path).write_text(source)
        namespace = {}
        exec(compile(source, path, "exec"), namespace)
        start = time.perf_counter()
        build = build_for(make_spec("reduce", namespace["op"], types="f32,f32", target=target))
        elapsed = time.perf_counter() - start
        build.disassembled()
        with_view = time.perf_counter() - start
        if seed == 1000:
            continue  # the first one starts numba: that is the cold case
        warm_new.append(elapsed)
        warm_view.append(with_view)
        for stage, seconds in build.timings.items():
            stages.setdefault(stage, []).append(seconds)
        start = time.perf_counter()
        gpulab.compile("reduce", namespace["op"], types="f32,f32", target=target)
        memory_hits.append(time.perf_counter() - start)
    return warm_new, warm_view, memory_hits, {stage: statistics.median(v) for stage, v in stages.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="sm_90")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as cache_dir, tempfile.TemporaryDirectory() as source_dir:
        cold = [child(seed, args.target, cache_dir, source_dir) for seed in range(args.runs)]
        disk = [child(seed, args.target, cache_dir, source_dir) for seed in range(args.runs)]
        assert all(d["builds"] == 0 and d["disk_hits"] == 2 for d in disk), "fresh processes must hit the disk"
        warm_new, warm_view, memory_hits, stages = in_process(args.target, cache_dir, source_dir, args.runs)
    median = statistics.median
    rows = {
        "cold build of a new spec, fresh process": median(c["build"] for c in cold),
        "new spec, warm process (numba started)": median(warm_new),
        "  + its disassembly (for the view)": median(warm_view),
        "disk hit, fresh process": median(d["build"] for d in disk),
        "  + its disassembly, fresh process": median(d["build"] + d["disasm"] for d in disk),
        "memory hit": median(memory_hits),
        "import gpulab, fresh process": median(c["import"] for c in cold),
    }
    print(f"gpulab build latency, reduce of a float32 operator for {args.target}, median of {args.runs}")
    for name, seconds in rows.items():
        print(f"  {name:45} {seconds * 1e3:10.2f} ms")
    print(f"  disk hit is {rows['cold build of a new spec, fresh process'] / rows['disk hit, fresh process']:.0f}x "
          "faster than a cold build")
    total = sum(stages.values())
    print("  stages of a new spec in a warm process:")
    for stage, seconds in stages.items():
        print(f"    {stage:10} {seconds * 1e3:8.1f} ms  {100 * seconds / total:5.1f} %")
    cold_stages = {k: median(c["timings"][k] for c in cold) for k in cold[0]["timings"]}
    record = {"machine": platform.node(), "processor": platform.processor(), "cpus": os.cpu_count(),
              "python": platform.python_version(), "target": args.target, "runs": args.runs,
              "seconds": rows, "warm_stage_seconds": stages, "cold_stage_seconds": cold_stages,
              "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    from gpulab.compiler.spec import toolchain_versions

    record["versions"] = toolchain_versions()
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"compile-{platform.machine()}-{os.cpu_count()}cpu.json"
    path.write_text(json.dumps(record, indent=2))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

"""Build latency: cold, warm, disk hit and memory hit, each stage's share, per primitive and frontend. Runs without
a GPU.

``python bench/compile.py [--target sm_90] [--runs 5] [--frontends numba-cuda,numba-cuda-mlir]`` prints a
table per frontend (default: each one installed) and writes ``bench/results/compile-<machine>.json``. "Fresh process" numbers run
a new Python interpreter each time (numba, NVRTC and nvJitLink start cold);
``import gpulab`` is timed apart. A disk hit is timed from the
``gpulab.compile()`` call to the returned Build with its SASS, as a notebook
cell asks for it. A new spec in a warm process is timed from ``build_for`` to
a Build ready to run (no disassembly), then with its SASS, then with its view
(the MIME bundle a ``%%gpukernel`` cell shows), for each primitive; NVRTC runs
beside numba there, so stage times add up to more than the total.
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
OPERATORS = {  # primitive -> (source of a new operator, numbered by seed; its types)
    "map": ("def op(x):\n    return x * {seed}.5 + 1\n", "f32"),
    "reduce": ("def op(a, b):\n    return a * {seed}.5 + b\n", "f32,f32"),
    "scan": ("def op(a, b):\n    return a * {seed}.5 + b\n", "f32,f32"),
    "filter": ("def op(x):\n    return x > {seed}.5\n", "f32"),
    "segmented_reduce": ("def op(a, b):\n    return a * {seed}.5 + b\n", "f32,f32"),
    "reduce_by_key": ("def op(a, b):\n    return a * {seed}.5 + b\n", "f32,f32"),
    "histogram": ("def op(x):\n    return int(x * {seed}.5)\n", "f32"),
    "sort": ("def op(x):\n    return x * {seed}.5 + 1\n", "f32"),
}

# Run in a child interpreter: one gpulab.compile() of a reduce given by a seed.
CHILD = r"""
import json, sys, time
start = time.perf_counter()
import gpulab, gpulab.cache
imported = time.perf_counter() - start
seed, target, path, frontend = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
source = f"def op(a, b):\n    return a * {seed}.5 + b\n"
with open(path, "w") as file:
    file.write(source)
namespace = {}
exec(compile(source, path, "exec"), namespace)
start = time.perf_counter()
build = gpulab.compile("reduce", namespace["op"], types="f32,f32", target=target, frontend=frontend)
seconds = time.perf_counter() - start
info = gpulab.cache.cache_info()
print(json.dumps({"import": imported, "compile": seconds, "timings": build.timings,
                  "disk_hits": info.disk_hits, "builds": info.builds}))
"""


def child(seed: int, target: str, cache_dir: str, source_dir: str, frontend: str) -> dict:
    env = dict(os.environ, GPULAB_CACHE_DIR=cache_dir,
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    path = os.path.join(source_dir, f"op{seed}.py")
    result = subprocess.run([sys.executable, "-c", CHILD, str(seed), target, path, frontend], env=env,
                            capture_output=True, text=True)
    if result.returncode:
        sys.exit(f"a build of frontend={frontend} failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def _operator(primitive: str, seed: int, source_dir: str):
    template, types = OPERATORS[primitive]
    source = template.format(seed=seed)
    path = os.path.join(source_dir, f"{primitive}{seed}.py")
    Path(path).write_text(source)
    namespace = {}
    exec(compile(source, path, "exec"), namespace)
    return namespace["op"], types


def in_process(target: str, cache_dir: str, source_dir: str, count: int, primitives=tuple(OPERATORS),
               frontend: str = "numba-cuda") -> dict:
    """Per primitive: seconds of a new spec built by ``frontend`` ready to run, with its disassembly, with its view,
    a memory hit, and each stage."""
    os.environ["GPULAB_CACHE_DIR"] = cache_dir
    import gpulab
    import gpulab.cache

    gpulab.cache.reset_default_cache()
    from gpulab.compiler.pipeline import build_for, make_spec
    from gpulab.notebook.formatters import build_mimebundle

    found = {}
    for primitive in primitives:
        new, with_sass, with_view, memory_hits, stages = [], [], [], [], {}
        for seed in range(1000, 1000 + count + 1):
            op, types = _operator(primitive, seed, source_dir)
            start = time.perf_counter()
            build = build_for(make_spec(primitive, op, types=types, target=target, frontend=frontend))
            elapsed = time.perf_counter() - start
            build.disassembled()
            sass = time.perf_counter() - start
            build_mimebundle(build)
            if seed == 1000:
                continue  # the first one of a primitive starts numba or compiles its first kernel text
            new.append(elapsed)
            with_sass.append(sass)
            with_view.append(time.perf_counter() - start)
            for stage, seconds in build.timings.items():
                stages.setdefault(stage, []).append(seconds)
            start = time.perf_counter()
            gpulab.compile(primitive, op, types=types, target=target, frontend=frontend)
            memory_hits.append(time.perf_counter() - start)
        median = statistics.median
        found[primitive] = {"new spec, ready to run": median(new), "  + its disassembly": median(with_sass),
                            "  + its view (analysis, bundle, HTML)": median(with_view),
                            "memory hit": median(memory_hits),
                            "stages": {stage: median(v) for stage, v in stages.items()}}
    return found


def main() -> None:
    sys.path.insert(0, str(ROOT))
    from gpulab.compiler.frontends import installed
    from gpulab.compiler.spec import toolchain_versions

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="sm_90")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    parser.add_argument("--primitives", default=",".join(OPERATORS),
                        help="the primitives whose new specs are timed in a warm process (default: all)")
    parser.add_argument("--frontends", default=",".join(installed()),
                        help="the frontends whose builds are timed (default: each one installed)")
    args = parser.parse_args()
    median = statistics.median
    record = {"target": args.target, "runs": args.runs, "frontends": {}}
    for frontend in args.frontends.split(","):
        with tempfile.TemporaryDirectory() as cache_dir, tempfile.TemporaryDirectory() as source_dir:
            cold = [child(seed, args.target, cache_dir, source_dir, frontend) for seed in range(args.runs)]
            disk = [child(seed, args.target, cache_dir, source_dir, frontend) for seed in range(args.runs)]
            # a fresh process reads the build, its disassembly and the associativity probe's verdict from disk
            assert all(d["builds"] == 0 and d["disk_hits"] == 3 for d in disk), "fresh processes must hit the disk"
            warm = in_process(args.target, cache_dir, source_dir, args.runs, args.primitives.split(","), frontend)
        rows = {
            "reduce: cold compile() with SASS, fresh process": median(c["compile"] for c in cold),
            "reduce: disk hit, compile() to a Build with SASS, fresh process": median(d["compile"] for d in disk),
            "import gpulab, fresh process": median(c["import"] for c in cold),
        }
        print(f"gpulab build latency for {args.target} with {frontend}, median of {args.runs}, {os.cpu_count()} CPUs")
        for name, seconds in rows.items():
            print(f"  {name:66} {seconds * 1e3:9.1f} ms")
        for primitive, figures in warm.items():
            print(f"  {primitive}: a new spec in a warm process")
            for name, seconds in figures.items():
                if name != "stages":
                    print(f"    {name:64} {seconds * 1e3:9.1f} ms")
            print("    stages: " + ", ".join(f"{stage} {seconds * 1e3:.1f}"
                                           for stage, seconds in figures["stages"].items()) + " ms")
        record["frontends"][frontend] = {
            "seconds": rows, "warm": warm, "versions": toolchain_versions(frontend),
            "cold_stage_seconds": {k: median(c["timings"][k] for c in cold) for k in cold[0]["timings"]}}
    write_cpu_record(args.out, "compile", record)


def write_cpu_record(out: Path, name: str, figures: dict) -> Path:
    """Write ``figures`` with the machine they were measured on (its CPUs and load) to
    ``out/<name>-<machine>-<cpus>cpu.json``, and say where."""
    record = {"machine": platform.node(), "processor": platform.processor(), "cpus": os.cpu_count(),
              "python": platform.python_version(), "load_average": os.getloadavg(), **figures,
              "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}-{platform.machine()}-{os.cpu_count()}cpu.json"
    path.write_text(json.dumps(record, indent=2))
    print(f"wrote {path}")
    return path


if __name__ == "__main__":
    main()

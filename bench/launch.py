"""Where a small call's microseconds go: ways to launch side by side, each step of gpulab's call path, a profile.

Run on a GPU: ``python bench/launch.py [--out DIR]``. Every figure is wall
time per call, calls issued back to back (the stream synchronised once at
the end), median of 5 rounds; ``gpu_us`` is the GPU's own time per call
(see ``gpu_time``): where it is close to the wall time, the kernel, not the
host, sets the pace. Launch candidates launch the same pre-packed
kernel (a gpulab map of 1024 float32 items) or, where a candidate packs its
own arguments, a kernel of nine 64-bit parameters (as many bytes as the map's):

- ``cuLaunchKernel`` through cuda.bindings, CuPy's compiled ``launchKernel``,
  ctypes, and a 20-line C extension (built here with the system compiler,
  if there is one: the floor a compiled launcher shipped in the wheel would give);
- cuda.core's ``launch`` and CuPy's ``RawKernel`` call, which pack their arguments;
- replaying a CUDA graph of the same launch (what gpulab's calls cost when
  they repeat a launch: :mod:`gpulab.runtime.replay`).

Every call row is timed with each launcher, with graph replays on and off.
"""

from __future__ import annotations

import argparse
import cProfile
import ctypes
import io
import json
import pstats
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import cupy
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import gpulab  # noqa: E402
from gpulab.primitives import dispatch  # noqa: E402
from gpulab.registry import PRIMITIVES  # noqa: E402
from gpulab.runtime import module, replay  # noqa: E402
from gpulab.runtime.arrays import array_fields  # noqa: E402
from gpulab.runtime.streams import stream_handle  # noqa: E402

N = 1024
NINE = 'extern "C" __global__ void nine(long long a, long long b, long long c, long long d, long long e,' \
       ' long long f, long long g, long long h, long long i) { if (a == 1 && threadIdx.x == 0) *(long long*)b = i; }'
C_LAUNCHER = r"""
#include <Python.h>
#include <dlfcn.h>
typedef int (*launch_t)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*, void**,
                        void**);
static launch_t cu_launch;
static PyObject* launch(PyObject* self, PyObject* const* args, Py_ssize_t n) {
    if (n != 6) { PyErr_SetString(PyExc_TypeError, "launch(f, grid, block, shared, stream, params)"); return NULL; }
    void* f = PyLong_AsVoidPtr(args[0]);
    unsigned grid = PyLong_AsUnsignedLong(args[1]), block = PyLong_AsUnsignedLong(args[2]);
    unsigned shared = PyLong_AsUnsignedLong(args[3]);
    void* stream = PyLong_AsVoidPtr(args[4]);
    void** params = (void**)PyLong_AsVoidPtr(args[5]);
    if (PyErr_Occurred()) return NULL;
    int status = cu_launch(f, grid, 1, 1, block, 1, 1, shared, stream, params, NULL);
    if (status) { PyErr_Format(PyExc_RuntimeError, "cuLaunchKernel: %d", status); return NULL; }
    Py_RETURN_NONE;
}
static PyMethodDef methods[] = {{"launch", (PyCFunction)(void(*)(void))launch, METH_FASTCALL, ""}, {0}};
static struct PyModuleDef definition = {PyModuleDef_HEAD_INIT, "c_launcher", 0, -1, methods};
PyMODINIT_FUNC PyInit_c_launcher(void) {
    void* cuda = dlopen("libcuda.so.1", RTLD_NOW);
    if (!cuda || !(cu_launch = (launch_t)dlsym(cuda, "cuLaunchKernel"))) {
        PyErr_SetString(PyExc_ImportError, "no libcuda.so.1"); return NULL; }
    return PyModule_Create(&definition);
}
"""


def per_call(call, calls=2000, rounds=5) -> float:
    """Microseconds per call, back to back, median of ``rounds``."""
    for _ in range(50):
        call()
    samples = []
    for _ in range(rounds):
        cupy.cuda.runtime.deviceSynchronize()
        start = time.perf_counter()
        for _ in range(calls):
            call()
        cupy.cuda.runtime.deviceSynchronize()
        samples.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(samples)


def per_step(call, calls=20000) -> float:
    """Microseconds per call of a host-only step (nothing to synchronise)."""
    for _ in range(100):
        call()
    samples = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(calls):
            call()
        samples.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(samples)


SPIN = ('extern "C" __global__ void spin(long long cycles) {'
        ' const long long t = clock64(); while (clock64() - t < cycles) {} }')


def gpu_time(call, calls=500, rounds=5) -> float:
    """Microseconds of GPU time per call, back to back: the calls queue up behind a kernel that spins for
    longer than the host takes to issue them, so the GPU never waits for the host (a call's cost when
    issuing it is not the limit; per_call is the larger of the two)."""
    spin = cupy.RawKernel(SPIN, "spin")
    cycles = np.int64(cupy.cuda.Device().attributes["ClockRate"] * 1000 * calls * 60e-6)  # 60 us per call
    for _ in range(20):
        call()
    samples = []
    for _ in range(rounds):
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        spin((1,), (1,), (cycles,))
        start.record()
        for _ in range(calls):
            call()
        end.record()
        end.synchronize()
        samples.append(cupy.cuda.get_elapsed_time(start, end) * 1e3 / calls)
    return statistics.median(samples)


def times_two_plus_one(x: gpulab.f32) -> gpulab.f32:
    return x * 2 + 1


def add(a, b):
    return a + b


def is_positive(x):
    return x > 0


def c_launcher():
    """The C extension, compiled here; ``None`` (and why) when there is no compiler or no Python headers."""
    folder = Path(tempfile.mkdtemp())
    source = folder / "c_launcher.c"
    source.write_text(C_LAUNCHER)
    target = folder / ("c_launcher" + sysconfig.get_config_var("EXT_SUFFIX"))
    command = ["cc", "-O2", "-shared", "-fPIC", f"-I{sysconfig.get_paths()['include']}", str(source), "-o",
               str(target), "-ldl"]
    try:
        subprocess.run(command, check=True, capture_output=True, text=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        return None, f"{exc} {getattr(exc, 'stderr', '')}"[:300]
    sys.path.insert(0, str(folder))
    import c_launcher as found

    return found, None


def launch_candidates(results: dict) -> None:
    xs = cupy.arange(N, dtype=cupy.float32)
    out = cupy.empty_like(xs)
    plan = gpulab.make_map(times_two_plus_one, xs)
    plan(xs, out=out)
    prepared = plan.prepared(32, ())
    function, pack = prepared.kernels["gpulab_map"], prepared.pack("gpulab_map")
    grid, block = -(-N // prepared.build.geometry.tile), prepared.build.geometry.block_threads
    stream = cupy.cuda.get_current_stream().ptr
    from cuda.bindings import driver

    measured = results.setdefault("launch_us", {})
    measured["cuLaunchKernel, cuda.bindings, pre-packed"] = per_call(
        lambda: driver.cuLaunchKernel(function, grid, 1, 1, block, 1, 1, 0, stream, pack.address, 0))
    cupy_launch = cupy.cuda.driver.launchKernel
    measured["cuLaunchKernel, CuPy's launchKernel, pre-packed"] = per_call(
        lambda: cupy_launch(function, grid, 1, 1, block, 1, 1, 0, stream, pack.address, 0))
    size = ctypes.c_size_t(pack._memory.nbytes)
    buffer = np.frombuffer(pack._memory, np.uint8)
    extra = (ctypes.c_void_p * 5)(1, buffer.ctypes.data, 2, ctypes.addressof(size), 0)  # BUFFER_POINTER, SIZE, END
    measured["cuLaunchKernel, CuPy's launchKernel, one parameter buffer (extra=)"] = per_call(
        lambda: cupy_launch(function, grid, 1, 1, block, 1, 1, 0, stream, 0, ctypes.addressof(extra)))
    libcuda = ctypes.CDLL("libcuda.so.1")
    cu_launch = libcuda.cuLaunchKernel
    cu_launch.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
    cu_launch.restype = ctypes.c_int
    measured["cuLaunchKernel, ctypes, pre-packed"] = per_call(
        lambda: cu_launch(function, grid, 1, 1, block, 1, 1, 0, stream, pack.address, None))
    extension, why = c_launcher()
    if extension is not None:
        measured["cuLaunchKernel, a C extension (METH_FASTCALL), pre-packed"] = per_call(
            lambda: extension.launch(function, grid, block, 0, stream, pack.address))
    else:
        measured["cuLaunchKernel, a C extension"] = f"not built: {why}"
    measured["gpulab.runtime.module.launch, pre-packed"] = per_call(
        lambda: module.launch(function, grid, block, stream, pack))
    graph_stream = cupy.cuda.Stream(non_blocking=True)
    with graph_stream:
        graph_stream.begin_capture()
        cupy_launch(function, grid, 1, 1, block, 1, 1, 0, graph_stream.ptr, pack.address, 0)
        graph = graph_stream.end_capture()
    measured["CUDA graph of that launch, replayed (cupy Graph.launch)"] = per_call(lambda: graph.launch(graph_stream))
    graph_stream.synchronize()

    values = [0, 0, 0, 0, 0, 0, 0, 0, 7]
    raw = cupy.RawKernel(NINE, "nine")
    measured["CuPy RawKernel call, 9 int arguments packed per call"] = per_call(
        lambda: raw((1,), (256,), values))
    try:
        from cuda.core import Device, LaunchConfig, Program, ProgramOptions, launch

        device = Device()
        device.set_current()
        arch = "".join(map(str, device.compute_capability))
        kernel = Program(NINE, "c++", ProgramOptions(arch=f"sm_{arch}")).compile("cubin").get_kernel("nine")
        core_stream = device.create_stream()
        config = LaunchConfig(grid=1, block=256)
        measured["cuda.core launch, 9 int arguments packed per call"] = per_call(
            lambda: launch(core_stream, config, kernel, *values))
        core_stream.sync()
    except Exception as exc:  # reported, not fatal
        measured["cuda.core launch"] = f"error: {type(exc).__name__}: {exc}"[:300]


def steps(results: dict) -> None:
    xs = cupy.arange(N, dtype=cupy.float32)
    out = cupy.empty_like(xs)
    dtype = xs.dtype
    plan = gpulab.make_map(times_two_plus_one, xs)
    plan(xs, out=out)
    prepared = plan.prepared(32, ())
    pack = prepared.pack("gpulab_map")
    interface = type("Interface", (), {"__cuda_array_interface__": xs.__cuda_array_interface__})()
    found = results.setdefault("step_us", {})
    found["array_fields(CuPy array)"] = per_step(lambda: array_fields(xs, dtype, "input"))
    found["array_fields(__cuda_array_interface__ object)"] = per_step(lambda: array_fields(interface, dtype, "input"))
    found["array_fields(CuPy strided view)"] = per_step(lambda: array_fields(xs[::2], dtype, "input"))
    found["  of which xs[::2] itself"] = per_step(lambda: xs[::2])
    found["stream_handle(None)"] = per_step(lambda: stream_handle(None))
    found["plan.uniform_values()"] = per_step(plan.uniform_values)
    found["plan.prepared(32, ())"] = per_step(lambda: plan.prepared(32, ()))
    found["prepared.pack(kernel) (thread-local)"] = per_step(lambda: prepared.pack("gpulab_map"))
    values = (1,) * pack.value_count  # a 1 fits every field: pointers, sizes, strides, flags
    found[f"pack.write({len(values)} values)"] = per_step(lambda: pack.write(*values))
    found["cupy.empty(1024, float32)"] = per_step(lambda: cupy.empty(N, dtype))
    found["cupy.ndarray((1024,), float32)"] = per_step(lambda: cupy.ndarray((N,), dtype))
    found["cupy.empty((), float32)"] = per_step(lambda: cupy.empty((), dtype))
    found["cupy.ndarray(1024, float32) (an int shape)"] = per_step(lambda: cupy.ndarray(N, dtype))
    found["cupy.empty_like(xs)"] = per_step(lambda: cupy.empty_like(xs))
    found[f"pack.packed({len(values)} values) (a launch's key)"] = per_step(lambda: pack.packed(*values))
    record, device = PRIMITIVES["map"], plan.device
    found["dispatch.resolve_device(None)"] = per_step(lambda: dispatch.resolve_device(None))
    found["dispatch.plan_for (a repeated one-shot)"] = per_step(
        lambda: dispatch.plan_for(record, times_two_plus_one, (xs,), device))


def calls(results: dict) -> None:
    xs = cupy.random.default_rng(0).standard_normal(N, dtype=np.float32)
    out, scalar, kept = cupy.empty_like(xs), cupy.empty((), xs.dtype), cupy.zeros((), np.int64)
    zero = np.float32(0)
    mapper, reducer = gpulab.make_map(times_two_plus_one, xs), gpulab.make_reduce(add, xs)
    scanner, filterer = gpulab.make_scan(add, xs), gpulab.make_filter(is_positive, xs)
    rows = {
        "make_map, reused": lambda: mapper(xs, out=out),
        "map, one-shot": lambda: gpulab.map(times_two_plus_one, xs),
        "make_reduce, reused": lambda: reducer(xs, zero, out=scalar),
        "reduce, one-shot": lambda: gpulab.reduce(add, xs, zero),
        "make_scan, reused": lambda: scanner(xs, out=out),
        "make_filter, reused": lambda: filterer(xs, out=out, kept=kept),
        "scan, one-shot": lambda: gpulab.scan(add, xs),
    }
    found = results.setdefault("call_us", {})
    on_gpu = results.setdefault("gpu_us", {})
    for name, call in rows.items():
        on_gpu[name] = gpu_time(call)
    profiles = results.setdefault("profiles", {})
    for launcher in module.LAUNCHERS:
        module.use_launcher(launcher)
        for graphs in (True, False):
            replay.use_graphs(graphs)
            for name, call in rows.items():
                found[f"{name} ({launcher} launcher{', graphs' if graphs else ''})"] = per_call(call)
    module.use_launcher()
    replay.use_graphs(True)
    for name in ("make_map, reused", "make_reduce, reused", "make_scan, reused", "map, one-shot"):
        profiler = cProfile.Profile()
        call = rows[name]
        profiler.enable()
        for _ in range(20000):
            call()
        profiler.disable()
        cupy.cuda.runtime.deviceSynchronize()
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(14)
        profiles[name] = text.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args()
    from cuda.bindings import driver

    results = {"device": str(gpulab.device.current_device()), "cupy": cupy.__version__,
               "cuda-bindings": driver.__version__ if hasattr(driver, "__version__") else None,
               "driver": cupy.cuda.runtime.driverGetVersion(), "python": sys.version.split()[0],
               "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    for part in (launch_candidates, steps, calls):
        part(results)
    print(results["device"])
    for section in ("launch_us", "step_us", "call_us", "gpu_us"):
        print(f"\n{section}")
        for name, value in results[section].items():
            print(f"  {name:72} {value:8.2f}" if isinstance(value, float) else f"  {name:72} {value}")
    for name, text in results["profiles"].items():
        print(f"\n==== profile: {name}, 20000 calls\n{text}")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "launch.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()

"""Replay recorded launches (:mod:`gpulab.profiler.record`) in a process of their own: what Nsight Compute runs.

``python -m gpulab.profiler.replay FOLDER`` loads the request's cubins, allocates its allocations, and for each
launch writes back the memory it read, moves its pointers into the new allocations and launches it, on the
legacy default stream of the same device, one after the other. It needs the CUDA driver and NumPy, nothing of
gpulab's compiler.
"""

from __future__ import annotations

import ctypes
import json
import struct
import sys
from pathlib import Path

import numpy as np

from .record import REQUEST, REQUEST_VERSION


def _check(result):
    from cuda.bindings import driver

    status, *values = result
    if status != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"CUDA driver call failed: {status.name}")
    return values[0] if len(values) == 1 else values


def _allocate(size: int, host: bool) -> tuple[int, int]:
    """``(address to write to, device pointer)`` of a new allocation like a recorded one."""
    from cuda.bindings import driver

    if host:
        flags = driver.CU_MEMHOSTALLOC_DEVICEMAP | driver.CU_MEMHOSTALLOC_PORTABLE
        pointer = int(_check(driver.cuMemHostAlloc(size, flags)))
        return pointer, int(_check(driver.cuMemHostGetDevicePointer(pointer, 0)))
    pointer = int(_check(driver.cuMemAlloc(size)))
    return pointer, pointer


def replay(folder: Path) -> None:
    """Run every launch of the request in ``folder``."""
    from cuda.bindings import driver

    request = json.loads((folder / REQUEST).read_text())
    if request.get("version") != REQUEST_VERSION:
        raise SystemExit(f"a replay request of version {request.get('version')}; this gpulab reads {REQUEST_VERSION}")
    _check(driver.cuInit(0))
    context = _check(driver.cuDevicePrimaryCtxRetain(_check(driver.cuDeviceGet(request["device"]))))
    _check(driver.cuCtxSetCurrent(context))
    modules = [_check(driver.cuModuleLoadData((folder / name).read_bytes())) for name in request["modules"]]
    allocations = [_allocate(a["size"], a["host"]) for a in request["allocations"]]
    snapshots = request["snapshots"]
    for launch in request["launches"]:
        for number in launch["restore"]:
            snapshot = snapshots[number]
            data = np.fromfile(folder / snapshot["file"], np.uint8)
            written, _ = allocations[snapshot["allocation"]]
            if request["allocations"][snapshot["allocation"]]["host"]:
                ctypes.memmove(written, data.ctypes.data, data.size)
            else:
                _check(driver.cuMemcpyHtoD(written, data.ctypes.data, data.size))
        parameters = bytearray.fromhex(launch["parameters"])
        for where, allocation, offset in launch["pointers"]:
            struct.pack_into("<Q", parameters, where, allocations[allocation][1] + offset)
        space = np.frombuffer(bytes(parameters) + bytes(16), np.uint8).copy()
        pointers = np.array([space.ctypes.data + offset for offset in launch["offsets"]], np.uint64)
        function = _check(driver.cuModuleGetFunction(modules[launch["module"]], launch["kernel"].encode()))
        _check(driver.cuLaunchKernel(function, launch["grid"], 1, 1, launch["block"], 1, 1, launch["shared_bytes"],
                                     0, pointers.ctypes.data, 0))
        _check(driver.cuCtxSynchronize())


if __name__ == "__main__":
    replay(Path(sys.argv[1]))

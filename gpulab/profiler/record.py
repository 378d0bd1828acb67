"""Record a call's gpulab launches, with the memory each one reads, so that another process can replay them.

A launch is its kernel (a build's cubin and a kernel name), its grid and block, and its parameter bytes. The
bytes hold device pointers (:attr:`~gpulab.compiler.parameters.Parameter.pointers` says where): each points into
an allocation of this process, which the recording copies, whole, just before the launch (its stream
synchronised first). A replay allocates the same sizes, writes the copies back and moves each pointer by its
offset in its allocation, so that every launch reads what it read here.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import ProfilerError
from ..runtime.module import loaded_kernel
from ..runtime.replay import observing

MAX_LAUNCHES = 16
"""The most launches one profile replays (each costs the profiler tens of replays of the kernel)."""

REQUEST = "request.json"
REQUEST_VERSION = 1


@dataclass(frozen=True)
class Allocation:
    """A block of memory a launch points into: its base address and size here, and whether it is pinned host
    memory the device reads through (else device memory)."""

    base: int
    size: int
    host: bool


@dataclass
class Launch:
    """One recorded launch.

    Attributes
    ----------
    build : Build
        Whose cubin holds the kernel.
    kernel : str
        The kernel's name.
    device : Device
        Where it ran.
    grid, block, shared_bytes : int
        Its launch configuration.
    parameters : bytes
        Its parameter space, as launched here.
    pointers : list of (int, int, int)
        ``(where in parameters, allocation, offset in it)`` of each device pointer.
    contents : dict of int to int
        Allocation -> the snapshot of it taken just before this launch.
    """

    build: object
    kernel: str
    device: object
    grid: int
    block: int
    shared_bytes: int
    parameters: bytes
    pointers: list[tuple[int, int, int]]
    contents: dict[int, int]


@dataclass
class Recording:
    """What one call launched: the launches in order, the allocations they point into, the snapshots taken."""

    launches: list[Launch] = field(default_factory=list)
    allocations: list[Allocation] = field(default_factory=list)
    snapshots: list[tuple[int, np.ndarray]] = field(default_factory=list)  # (allocation, its bytes)

    def observe(self, function: int, grid: int, block: int, stream: int, pack, shared_bytes: int) -> None:
        """Record one launch (what :func:`~gpulab.runtime.replay.observing` calls before it is made)."""
        found = loaded_kernel(function)
        if found is None:
            raise ProfilerError("a launch of a kernel gpulab did not load cannot be profiled")
        if len(self.launches) == MAX_LAUNCHES:
            raise ProfilerError(f"the call launched more than {MAX_LAUNCHES} kernels: profile one call of a "
                                "primitive (gpulab.profile(plan, xs)), not a loop of them")
        build, kernel, device = found
        if self.launches and device != self.launches[0].device:
            raise ProfilerError(f"the call launched on {self.launches[0].device.name} and {device.name}: profile the "
                                "calls of one device at a time")
        _synchronize(stream)
        parameters = pack.written
        pointers, contents = [], {}
        for parameter in build.parameters[kernel]:
            for at in parameter.pointers:
                where = parameter.offset + at
                (address,) = struct.unpack_from("<Q", parameters, where)
                if not address:
                    continue
                index = self._allocation(address, kernel, parameter.name)
                pointers.append((where, index, address - self.allocations[index].base))
                if index not in contents:
                    contents[index] = self._snapshot(index)
        self.launches.append(Launch(build, kernel, device, grid, block, shared_bytes, parameters, pointers, contents))

    def _allocation(self, address: int, kernel: str, name: str) -> int:
        for index, allocation in enumerate(self.allocations):
            if allocation.base <= address < allocation.base + allocation.size:
                return index
        base, size, host = _range_of(address, kernel, name)
        self.allocations.append(Allocation(base, size, host))
        return len(self.allocations) - 1

    def _snapshot(self, index: int) -> int:
        """Copy allocation ``index`` now; a copy equal to its last one is that one."""
        import cupy

        allocation = self.allocations[index]
        data = np.empty(allocation.size, np.uint8)
        cupy.cuda.runtime.memcpy(data.ctypes.data, allocation.base, allocation.size, cupy.cuda.runtime.memcpyDefault)
        for number in range(len(self.snapshots) - 1, -1, -1):
            owner, earlier = self.snapshots[number]
            if owner == index:
                if np.array_equal(earlier, data):
                    return number
                break
        self.snapshots.append((index, data))
        return len(self.snapshots) - 1

    def write(self, folder: Path) -> None:
        """Write what a replay needs into ``folder``: the request (JSON), the cubins and the snapshots."""
        modules: dict[str, int] = {}
        for launch in self.launches:
            if launch.build.key not in modules:
                modules[launch.build.key] = len(modules)
                (folder / f"module-{modules[launch.build.key]}.cubin").write_bytes(launch.build.cubin)
        for number, (_, data) in enumerate(self.snapshots):
            data.tofile(folder / f"memory-{number}.bin")
        request = {
            "version": REQUEST_VERSION,
            "device": self.launches[0].device.ordinal,
            "modules": [f"module-{number}.cubin" for number in modules.values()],
            "allocations": [{"size": a.size, "host": a.host} for a in self.allocations],
            "snapshots": [{"file": f"memory-{number}.bin", "allocation": owner}
                          for number, (owner, _) in enumerate(self.snapshots)],
            "launches": [{"module": modules[launch.build.key], "kernel": launch.kernel, "grid": launch.grid,
                          "block": launch.block, "shared_bytes": launch.shared_bytes,
                          "parameters": launch.parameters.hex(),
                          "offsets": [p.offset for p in launch.build.parameters[launch.kernel]],
                          "pointers": [list(p) for p in launch.pointers], "restore": sorted(launch.contents.values())}
                         for launch in self.launches],
        }
        (folder / REQUEST).write_text(json.dumps(request))


def record(call, args=(), kwargs=None) -> tuple[object, Recording]:
    """Run ``call(*args, **kwargs)`` once, recording its gpulab launches; return its result and the recording.

    Raises
    ------
    ProfilerError
        When the call launched no gpulab kernel, or too many.
    """
    import cupy

    recording = Recording()
    with observing(recording.observe):
        result = call(*args, **(kwargs or {}))
        cupy.cuda.runtime.deviceSynchronize()
    if not recording.launches:
        raise ProfilerError(f"{getattr(call, '__name__', 'the call')} launched no gpulab kernel: profile a call of a "
                            "gpulab primitive on the GPU, e.g. gpulab.profile(gpulab.map, fn, xs)")
    return result, recording


def _synchronize(stream: int) -> None:
    import cupy

    cupy.cuda.runtime.streamSynchronize(stream)


def _range_of(address: int, kernel: str, name: str) -> tuple[int, int, bool]:
    """``(base, size, host)`` of the allocation ``address`` points into, as the driver knows it."""
    from cuda.bindings import driver

    attributes = driver.CUpointer_attribute
    found = []
    for attribute in (attributes.CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, attributes.CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                      attributes.CU_POINTER_ATTRIBUTE_MEMORY_TYPE):
        status, value = driver.cuPointerGetAttribute(attribute, address)
        if status != driver.CUresult.CUDA_SUCCESS:
            raise ProfilerError(f"{kernel}'s parameter {name} points at 0x{address:x}, which the CUDA driver "
                                f"knows no allocation of ({status.name}): gpulab can replay launches on memory "
                                "allocated through CUDA (CuPy, cudaMalloc, pinned host memory) only")
        found.append(value)
    base, size, kind = found
    return int(base), int(size), int(kind) == int(driver.CUmemorytype.CU_MEMORYTYPE_HOST)

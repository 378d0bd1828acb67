"""Devices: ``host`` and every ``cuda:N``, and which one is current."""

from __future__ import annotations

import functools
import os
import platform
import re
import warnings
from dataclasses import dataclass

from .errors import ArgumentError, DeviceError, HostFallbackWarning

HOST = "host"


@dataclass(frozen=True)
class Device:
    """One place to run: the host (reference backend) or a CUDA GPU.

    Attributes
    ----------
    name : str
        ``"host"`` or ``"cuda:N"``.
    description : str
        The GPU's name, or the host's processor.
    compute_capability : tuple of int or None
        ``(major, minor)``; ``None`` for the host.
    memory_bytes : int or None
        Total device memory.
    multiprocessors : int or None
        Number of SMs.
    """

    name: str
    description: str
    compute_capability: tuple[int, int] | None = None
    memory_bytes: int | None = None
    multiprocessors: int | None = None

    @property
    def is_gpu(self) -> bool:
        """Whether this is a CUDA device."""
        return self.compute_capability is not None

    @functools.cached_property
    def ordinal(self) -> int | None:
        """The CUDA ordinal N of ``cuda:N``."""
        return int(self.name.split(":")[1]) if self.is_gpu else None

    def __str__(self) -> str:
        if not self.is_gpu:
            return f"{self.name}: {self.description}"
        major, minor = self.compute_capability
        return (f"{self.name}: {self.description}, compute capability {major}.{minor}, "
                f"{self.memory_bytes / 2**30:.0f} GiB, {self.multiprocessors} SMs")


def free_host_bytes() -> int | None:
    """Memory the host can give without swapping (Linux's MemAvailable; free pages elsewhere; None if unknown)."""
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def require_host_memory(nbytes: int, what: str) -> None:
    """Refuse to store ``nbytes`` on the host when they are more than it has free.

    Raises
    ------
    ArgumentError
        Saying what (``what``) needs how much, and how much is free.
    """
    from .cache.info import format_bytes

    free = free_host_bytes()
    if free is not None and nbytes > free:
        raise ArgumentError(f"{what} needs about {format_bytes(nbytes)} of host memory, but "
                            f"{format_bytes(free)} are free: use fewer items")


def _host() -> Device:
    return Device(HOST, f"{platform.processor() or platform.machine()} ({os.cpu_count()} cores), reference backend")


@functools.lru_cache(maxsize=1)
def _gpus() -> tuple[Device, ...]:
    try:
        from cuda.bindings import driver
    except ImportError:
        return ()
    try:
        (status,) = driver.cuInit(0)
    except Exception:  # no driver library at all
        return ()
    if status != driver.CUresult.CUDA_SUCCESS:
        return ()
    _, count = driver.cuDeviceGetCount()
    found = []
    attribute = driver.CUdevice_attribute
    for ordinal in range(count):
        _, handle = driver.cuDeviceGet(ordinal)
        _, raw_name = driver.cuDeviceGetName(64, handle)
        _, memory = driver.cuDeviceTotalMem(handle)
        _, major = driver.cuDeviceGetAttribute(attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, handle)
        _, minor = driver.cuDeviceGetAttribute(attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, handle)
        _, sms = driver.cuDeviceGetAttribute(attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, handle)
        name = raw_name.split(b"\x00")[0].decode()
        found.append(Device(f"cuda:{ordinal}", name, (major, minor), memory, sms))
    return tuple(found)


def gpu_count() -> int:
    """How many CUDA GPUs this machine has (asked of the driver once)."""
    return len(_gpus())


def devices() -> list[Device]:
    """List ``host`` and every CUDA device."""
    return [_host(), *_gpus()]


def device(name: str | Device | None = None) -> Device:
    """Return the :class:`Device` named ``name`` (the current one for ``None``).

    Raises
    ------
    DeviceError
        When there is no such device; the message lists those there are.
    """
    if isinstance(name, Device):
        return name
    if name is None:
        return current_device()
    name = str(name).strip().lower()
    if name == "cuda":
        name = "cuda:0"
    for candidate in devices():
        if candidate.name == name:
            return candidate
    names = ", ".join(d.name for d in devices())
    if not re.fullmatch(r"cuda:\d+", name):
        raise DeviceError(f"unknown device {name!r}: name one as 'host' or 'cuda:N' (devices here: {names})")
    if not _gpus():
        raise DeviceError(f"{name} is not available: this machine has no CUDA GPU (devices: {names}). "
                          "Use device='host', or compile with an explicit target such as target='sm_90'")
    raise DeviceError(f"{name} is out of range: this machine has {len(_gpus())} CUDA GPU(s) "
                      f"(devices: {names}); pick one of those")


_current: Device | None = None


def current_device() -> Device:
    """The device primitives run on by default: the first GPU, else the host."""
    if _current is not None:
        return _current
    gpus = _gpus()
    return gpus[0] if gpus else _host()


_said_no_gpu = False


def say_no_gpu(stacklevel: int) -> None:
    """Say once per process that there is no CUDA GPU, so device work stays on the host."""
    global _said_no_gpu
    if not _said_no_gpu:
        _said_no_gpu = True
        warnings.warn("no CUDA GPU here: gpulab keeps arrays on the host and runs primitives on the host "
                      "reference backend (pass device='host' to say so and silence this)", HostFallbackWarning,
                      stacklevel=stacklevel + 1)


def current() -> str:
    """Name of the current device (``"host"`` on a machine with no GPU)."""
    return current_device().name


class use:
    """Make ``name`` the current device: as a call (a setter) or as a context manager.

    Examples
    --------
    >>> gpulab.use("host")              # from now on           # doctest: +SKIP
    >>> with gpulab.use("cuda:1"):      # for this block only   # doctest: +SKIP
    ...     gpulab.reduce(add, xs, 0)
    """

    def __init__(self, name: str | Device):
        global _current
        self.device = device(name)
        self._previous = _current
        _current = self.device

    def __enter__(self) -> Device:
        return self.device

    def __exit__(self, *exc_info):
        global _current
        _current = self._previous

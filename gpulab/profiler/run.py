"""``gpulab.profile``: run a call once, replay its gpulab launches under Nsight Compute in a child process, and
read back what the GPU measured (docs/profiling.md).

What is missing is said before anything runs, each with what to do: a GPU, ``ncu``, the driver's permission
for this user to read the GPU's counters.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ..device import devices
from ..errors import ProfilerError
from . import ncu
from .record import record
from .report import kernel_reports
from .result import LaunchProfile, Profile

PROFILE_SECONDS = 600
"""The longest ncu may take over one profile (its replays of every launch included)."""

PARAMS = Path("/proc/driver/nvidia/params")
PERMISSION_URL = "https://developer.nvidia.com/ERR_NVGPUCTRPERM"
NO_PERMISSION = (
    "the NVIDIA driver lets only administrators read the GPU's performance counters "
    "(RmProfilingAdminOnly is 1), and this process is not root. Either run as root, or allow every user: as root, "
    "`echo 'options nvidia NVreg_RestrictProfilingToAdminUsers=0' > /etc/modprobe.d/nvidia-profiling.conf`, then "
    f"reload the driver or reboot (in a container, the host's driver decides). See {PERMISSION_URL}")
NO_NCU = (
    "gpulab measures kernels with Nsight Compute's command line, ncu, which is not installed here (no pip "
    "package carries it). Install it with the CUDA toolkit (it is in the toolkit's bin folder, e.g. "
    "/usr/local/cuda/bin/ncu) or alone as NVIDIA Nsight Compute (on NVIDIA's CUDA apt repository the package is "
    "named like nsight-compute-2025.3.1), then put it on PATH or set GPULAB_NCU=/path/to/ncu")
NO_GPU = ("gpulab.profile measures a kernel on an NVIDIA GPU, and this machine has none (gpulab.devices() lists "
          "the host only); the estimated costs need no GPU: gpulab.compile(...) and its view")


def require_gpu() -> None:
    """Raise :class:`ProfilerError` when there is no GPU to measure on."""
    if not any(d.is_gpu for d in devices()):
        raise ProfilerError(NO_GPU)


def require_ncu() -> str:
    """The ``ncu`` to run (see :func:`gpulab.profiler.ncu.find`); :class:`ProfilerError` when there is none."""
    found = ncu.find()
    if found is None:
        raise ProfilerError(NO_NCU)
    return found


def require_permission(params: str | None = None, root: bool | None = None) -> None:
    """Raise :class:`ProfilerError` when the driver keeps the counters from this (non-root) user.

    Parameters
    ----------
    params : str, optional
        The driver's parameters (``/proc/driver/nvidia/params``; read when not given; unknown when unreadable).
    root : bool, optional
        Whether this process runs as root (asked of the system when not given).
    """
    if params is None:
        try:
            params = PARAMS.read_text()
        except OSError:
            return  # not Linux's driver, or not readable: ncu will say
    if root is None:
        root = os.geteuid() == 0
    for line in params.splitlines():
        name, _, value = line.partition(":")
        if name.strip() == "RmProfilingAdminOnly" and value.strip() == "1" and not root:
            raise ProfilerError(NO_PERMISSION)


def missing() -> str | None:
    """What this machine lacks to measure a kernel (a GPU, ``ncu``, the permission), or ``None`` when it has it all."""
    try:
        require_gpu()
        require_ncu()
        require_permission()
    except ProfilerError as exc:
        return str(exc)
    return None


def failure(output: str) -> str:
    """What ncu's output says went wrong, in words that say what to do."""
    if "ERR_NVGPUCTRPERM" in output:
        return NO_PERMISSION
    errors = [line for line in output.splitlines() if "==ERROR==" in line or "Error" in line or "error" in line]
    said = "\n".join(errors[-6:]) or output.strip()[-1200:]
    return f"Nsight Compute could not profile the launches:\n{said}"


def profile(call, *args, **kwargs) -> Profile:
    """Run ``call(*args, **kwargs)`` once and measure the gpulab kernels it launches.

    Each launch is recorded with the memory it reads and replayed in a child process under Nsight Compute
    (``ncu``), which samples where the warps stall and why, and counts per SASS instruction what it
    executed and the memory it moved; gpulab puts that on the build's lines.

    Parameters
    ----------
    call : callable
        A ``make_*`` object (``gpulab.profile(plan, xs)``), a primitive (``gpulab.profile(gpulab.map, fn,
        xs)``), or any function that calls gpulab on a GPU.
    *args, **kwargs
        What to call it with.

    Returns
    -------
    Profile
        The call's result (``.result``), and per launch the measured counters, on the build's lines.

    Raises
    ------
    ProfilerError
        With no GPU, no ``ncu``, no permission to read the GPU's counters, or when the profiler fails; the
        message says what to do.
    """
    require_gpu()
    tool = require_ncu()
    require_permission()
    started = time.perf_counter()
    result, recording = record(call, args, kwargs)
    with tempfile.TemporaryDirectory(prefix="gpulab-profile-") as folder:
        recording.write(Path(folder))
        report = str(Path(folder) / "report")
        program = [sys.executable, "-m", "gpulab.profiler.replay", folder]
        command = ncu.profile_command(tool, report, program, launches=len(recording.launches))
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=PROFILE_SECONDS, env=_child_env())
        except subprocess.TimeoutExpired:
            raise ProfilerError(f"Nsight Compute took over {PROFILE_SECONDS} s; profile fewer items") from None
        if done.returncode != 0 or not Path(report + ".ncu-rep").exists():
            raise ProfilerError(failure(done.stdout + done.stderr))
        pages = ncu.pages(tool, report + ".ncu-rep")
    reports = kernel_reports(pages)
    if len(reports) != len(recording.launches):
        raise ProfilerError(f"the call made {len(recording.launches)} launches, but Nsight Compute profiled "
                            f"{len(reports)}: {failure(done.stdout + done.stderr)}")
    launches = [LaunchProfile(launch.build, launch.kernel, launch.grid, launch.block, found)
                for launch, found in zip(recording.launches, reports)]
    return Profile(result, launches, time.perf_counter() - started, pages,
                   recording.launches[0].device.description)


def _child_env() -> dict:
    """The environment of the replay: this one, with the folder gpulab is imported from first on the path."""
    env = dict(os.environ)
    here = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (here, env.get("PYTHONPATH"))))
    return env

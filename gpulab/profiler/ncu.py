"""Nsight Compute's command line (``ncu``): where it is, how gpulab runs it, and the pages it reads back.

gpulab reads a report through the CLI's CSV pages (docs/profiling.md says why):

- the **source page** (``--page source --csv --print-source sass``): per SASS
  instruction its address, text, warp-stall samples (all, and not issued) by
  reason, instructions executed, L1 requests and L2 sectors, shared-memory
  conflicts; one block per profiled kernel, each opened by a ``"Kernel Name"`` row;
- the **raw page** (``--page raw --csv --print-units base``): every metric of
  every profiled kernel by its metric name, one row per kernel.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess

from ..errors import ProfilerError

SECTIONS = ("SourceCounters", "WarpStateStats", "MemoryWorkloadAnalysis", "Occupancy", "SpeedOfLight",
            "LaunchStats")
"""The report sections gpulab asks for: per-instruction counters and stall samples, the stall reasons, memory
throughput and cache hit rates, achieved occupancy, the kernel's duration, its launch."""

EXPORT_SECONDS = 120
"""The longest one page of a report may take to print."""

_PLACES = ("/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/*/ncu", "/usr/local/cuda-*/bin/ncu")


def find() -> str | None:
    """The ``ncu`` to run: ``$GPULAB_NCU``, else the one on ``PATH``, else a CUDA toolkit's or Nsight Compute's
    usual install folders; ``None`` when there is none."""
    chosen = os.environ.get("GPULAB_NCU")
    if chosen:
        return chosen if os.access(chosen, os.X_OK) else None
    found = shutil.which("ncu")
    if found:
        return found
    for pattern in _PLACES:
        for path in sorted(glob.glob(pattern), reverse=True):  # the newest version folder first
            if os.access(path, os.X_OK):
                return path
    return None


def profile_command(ncu: str, report: str, program: list[str], *, kernels: str | None = None,
                    launches: int | None = None) -> list[str]:
    """The command line that runs ``program`` under ``ncu`` and writes ``report`` (``.ncu-rep`` is added).

    Parameters
    ----------
    kernels : str, optional
        A regular expression of the kernel names to profile (all by default).
    launches : int, optional
        Profile at most this many launches.
    """
    command = [ncu, "--target-processes", "application-only", "--import-source", "no", "--print-summary", "none",
               "--force-overwrite", "--export", report]
    for section in SECTIONS:
        command += ["--section", section]
    if kernels:
        command += ["--kernel-name", f"regex:{kernels}"]
    if launches:
        command += ["--launch-count", str(launches)]
    return command + list(program)


def page_commands(ncu: str, report: str) -> dict[str, list[str]]:
    """The commands that print each page gpulab reads of ``report``, by page name (``source``, ``raw``)."""
    base = [ncu, "--import", report, "--csv"]
    return {"source": [*base, "--page", "source", "--print-source", "sass"],
            "raw": [*base, "--page", "raw", "--print-units", "base"]}


def pages(ncu: str, report: str) -> dict[str, str]:
    """The pages gpulab reads of ``report``, as text, by page name.

    Raises
    ------
    ProfilerError
        When ``ncu`` cannot read the report.
    """
    found = {}
    for name, command in page_commands(ncu, report).items():
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=EXPORT_SECONDS)
        except subprocess.TimeoutExpired:
            raise ProfilerError(f"ncu took over {EXPORT_SECONDS} s to print the {name} page of {report}") from None
        if done.returncode != 0:
            raise ProfilerError(f"ncu could not print the {name} page of {report}: "
                                f"{(done.stderr or done.stdout).strip()[-800:]}")
        found[name] = done.stdout
    return found

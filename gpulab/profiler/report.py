"""Nsight Compute's pages (:mod:`gpulab.profiler.ncu`) read into data: per kernel, its SASS instructions with
their counters and warp-stall samples by reason, and its metrics by name.

The source page names its columns as the Nsight Compute UI does; :data:`COLUMNS` is the one place that says
which column is which counter. Stall reasons are the page's ``stall_*`` columns (all samples; the
``(Not Issued)`` copies are left out), named by :data:`REASONS`.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field

from ..errors import ProfilerError

COLUMNS = {
    "samples": "Warp Stall Sampling (All Samples)",
    "not_issued": "Warp Stall Sampling (Not-issued Samples)",
    "executed": "Instructions Executed",
    "thread_executed": "Thread Instructions Executed",
    "sectors": "L2 Theoretical Sectors Global",
    "ideal_sectors": "L2 Theoretical Sectors Global Ideal",
    "excessive_sectors": "L2 Theoretical Sectors Global Excessive",
    "shared_ways": "L1 Conflicts Shared N-Way",
}
"""Counter -> the source page's column of it. ``shared_ways`` is a shared-memory instruction's passes per
execution (its N-way; a 128-bit access needs 4 without a conflict, one of 32 bits or less 1)."""

REASONS = {
    "long_sb": ("long scoreboard", "waiting on global or local memory (an L1TEX load)"),
    "lg": ("LG throttle", "the queue of global and local memory instructions is full"),
    "barrier": ("barrier", "waiting at a block-wide barrier for the block's other warps"),
    "membar": ("memory barrier", "waiting at a memory fence"),
    "short_sb": ("short scoreboard", "waiting on shared memory or a special-function result (MUFU)"),
    "mio": ("MIO throttle", "the queue of shared-memory and special-function instructions is full"),
    "wait": ("wait", "a fixed-latency dependency on the instruction before"),
    "math": ("math pipe throttle", "the arithmetic pipe is busy (e.g. FP64 at its rate)"),
    "tex": ("TEX throttle", "the texture and load unit's queue is full"),
    "drain": ("drain", "waiting for the warp's memory stores to drain at its exit"),
    "imc": ("constant cache miss", "waiting on the immediate constant cache"),
    "branch_resolving": ("branch resolving", "waiting for a branch target to be computed"),
    "dispatch": ("dispatch stall", "the dispatcher held the instruction back"),
    "no_inst": ("no instruction", "waiting for instructions (an instruction cache miss)"),
    "sleep": ("sleeping", "asleep (nanosleep or a yield)"),
    "misc": ("misc", "another reason"),
    "not_selected": ("not selected", "ready, but another warp was issued"),
    "selected": ("selected", "issuing an instruction"),
}
"""Stall reason (the source page's ``stall_<reason>`` column) -> (label, what the warp was doing)."""

GROUPS = {"memory": ("long_sb", "lg", "drain", "tex", "imc"), "sync": ("barrier", "membar", "sleep"),
          "pipe": ("short_sb", "mio", "wait", "math", "branch_resolving", "dispatch"),
          "issue": ("selected", "not_selected", "no_inst", "misc")}
"""Reasons by what the view colours them as: memory, synchronisation, the pipes, issuing."""


@dataclass
class Instruction:
    """One SASS instruction of a profiled kernel.

    Attributes
    ----------
    address : int
        Where it was in the GPU's memory.
    text : str
        The instruction as the page prints it.
    counters : dict of str to int
        See :data:`COLUMNS` (a counter the page did not give is 0), but ``shared_ways``.
    reasons : dict of str to int
        Stall samples by reason (those that are not 0).
    space : str
        The memory it accesses (``global``, ``local``, ``shared``...), or ``""``.
    access_bytes : int
        Bytes a thread accesses (0 when it accesses no memory).
    shared_ways : float
        A shared-memory access's passes per execution (its N-way), 0 for other instructions.
    """

    address: int
    text: str
    counters: dict[str, int]
    reasons: dict[str, int]
    space: str = ""
    access_bytes: int = 0
    shared_ways: float = 0.0

    @property
    def opcode(self) -> str:
        """The opcode with its modifiers (``LDG.E.128``), without a guard."""
        words = self.text.split()
        if words and words[0].startswith("@"):
            words = words[1:]
        return words[0].rstrip(";") if words else ""


@dataclass
class KernelReport:
    """One profiled launch: its kernel's name, its instructions in address order, its metrics by name."""

    name: str
    instructions: list[Instruction]
    metrics: dict[str, float] = field(default_factory=dict)

    @property
    def samples(self) -> int:
        """Every warp-stall sample of the launch."""
        return sum(i.counters["samples"] for i in self.instructions)


def _number(text: str) -> float | None:
    text = text.strip().replace(",", "")
    if text in ("", "-", "n/a"):
        return None
    try:
        return float(text)
    except ValueError:
        return None


def _int(text: str | None) -> int:
    found = _number(text) if text is not None else None
    return round(found) if found is not None else 0


def parse_source(text: str) -> list[tuple[str, list[Instruction]]]:
    """The source page (``--page source --csv --print-source sass``): per profiled kernel, in the report's order,
    its name and its instructions.

    Raises
    ------
    ProfilerError
        When the page is not the source page of SASS (no ``Address`` and ``Source`` columns).
    """
    kernels: list[tuple[str, list[Instruction]]] = []
    header: list[str] | None = None
    for row in csv.reader(io.StringIO(text)):
        if not row:
            continue
        if row[0] == "Kernel Name":
            kernels.append((row[1] if len(row) > 1 else "", []))
            header = None
            continue
        if header is None:
            if not kernels or "Address" not in row or "Source" not in row:
                raise ProfilerError(f"ncu's source page has no SASS table where gpulab expects it: {row[:4]}")
            header = row
            continue
        if len(row) != len(header):
            continue  # a trailing line that is not an instruction
        cells = dict(zip(header, row))
        reasons = {column[6:]: _int(value) for column, value in cells.items()
                   if column.startswith("stall_") and not column.endswith("(Not Issued)") and _int(value)}
        size = _int(cells.get("Access Size"))
        kernels[-1][1].append(Instruction(
            int(cells["Address"], 16), " ".join(cells["Source"].split()),
            {counter: _int(cells.get(column)) for counter, column in COLUMNS.items() if counter != "shared_ways"},
            reasons, shared_ways=_number(cells.get(COLUMNS["shared_ways"]) or "") or 0.0,
            space=(cells.get("Address Space") or "").strip().strip("-").lower(), access_bytes=size // 8))
    return kernels


def parse_raw(text: str) -> list[dict[str, float]]:
    """The raw page (``--page raw --csv --print-units base``): per profiled kernel, its numeric metrics by name."""
    rows = list(csv.reader(io.StringIO(text)))
    rows = [row for row in rows if row]
    if not rows:
        return []
    header, found = rows[0], []
    for row in rows[1:]:
        if len(row) != len(header) or row[0] == "" or _number(row[0]) is None:
            continue  # the units row
        found.append({name: value for name, value in ((n, _number(v)) for n, v in zip(header, row))
                      if value is not None})
    return found


def kernel_reports(pages: dict[str, str]) -> list[KernelReport]:
    """Each profiled launch of a report, from its source and raw pages.

    Raises
    ------
    ProfilerError
        When the two pages disagree on how many kernels there were.
    """
    sources = parse_source(pages["source"])
    metrics = parse_raw(pages.get("raw", ""))
    if metrics and len(metrics) != len(sources):
        raise ProfilerError(f"ncu's pages disagree: {len(sources)} kernels on the source page, {len(metrics)} on "
                            "the raw page")
    return [KernelReport(name, instructions, metrics[number] if metrics else {})
            for number, (name, instructions) in enumerate(sources)]

"""Register pressure: live registers at each instruction, the peak per Python line, and what it does to occupancy."""

from __future__ import annotations

from dataclasses import dataclass

from ..build import Build
from ..occupancy import Occupancy, occupancy
from .model import analyse


MAX_REGISTERS = 255  # per thread, every supported target


@dataclass(frozen=True)
class Pressure:
    """Registers of one kernel.

    Attributes
    ----------
    kernel : str
    registers : int
        Registers per thread ptxas allocated (what occupancy depends on).
    peak_live : int
        The most general-purpose registers live at one instruction.
    peak_line : int or None
        0-based line of the SASS pane where that peak is.
    peak_python_line, peak_cuda_line : int or None
        The source lines of that instruction.
    python_peaks : dict of int to int
        Python line (as its file or cell numbers it, as every line here) -> the most registers live at its
        instructions.
    busiest_python_line : int or None
        The Python line with the most registers live (the peak itself may be in template code).
    occupancy : Occupancy
        Theoretical occupancy now.
    fewer : (int, Occupancy) or None
        The most registers that would give more resident blocks, and that occupancy.
    more : (int, Occupancy) or None
        The fewest registers that would give fewer resident blocks, and that occupancy.
    """

    kernel: str
    registers: int
    peak_live: int
    peak_line: int | None
    peak_python_line: int | None
    peak_cuda_line: int | None
    python_peaks: dict[int, int]
    busiest_python_line: int | None
    occupancy: Occupancy
    fewer: tuple[int, Occupancy] | None
    more: tuple[int, Occupancy] | None

    def summary(self) -> str:
        """``"26 registers: 100% occupancy; at 33 it would drop to 75%"``, and where the peak is."""
        head = f"{self.registers} registers: {_percent(self.occupancy)} occupancy"
        if self.occupancy.limited_by == "registers" and self.fewer:
            head += f" (limited by registers); at {self.fewer[0]} it would rise to {_percent(self.fewer[1])}"
        elif self.more:
            head += f"; at {self.more[0]} it would drop to {_percent(self.more[1])}"
        where = f"Python line {self.peak_python_line}" if self.peak_python_line else (
            f"kernel.cu line {self.peak_cuda_line}" if self.peak_cuda_line else "no source line")
        return f"{head}. Peak {self.peak_live} live at {where}."

    def as_dict(self) -> dict:
        """The pressure as the view's bundle carries it (see docs/bundle.md)."""
        step = lambda found: None if found is None else {"registers": found[0], **found[1].as_dict()}  # noqa: E731
        return {"kernel": self.kernel, "registers": self.registers, "peak_live": self.peak_live,
                "peak_sass_line": self.peak_line, "peak_python_line": self.peak_python_line,
                "peak_cuda_line": self.peak_cuda_line,
                "python_peaks": {str(k): v for k, v in self.python_peaks.items()},
                "busiest_python_line": self.busiest_python_line,
                "occupancy": self.occupancy.as_dict(),
                "fewer": step(self.fewer), "more": step(self.more), "summary": self.summary()}


def _percent(found: Occupancy) -> str:
    return f"{found.fraction:.0%}" if abs(found.fraction * 100 - round(found.fraction * 100)) < 1e-9 \
        else f"{found.fraction:.1%}"


def register_steps(target, block_threads: int, registers: int, shared_bytes: int):
    """The neighbouring occupancy steps: ``(fewer, more)`` as in :class:`Pressure`."""
    now = occupancy(target, block_threads, registers, shared_bytes)
    at = lambda r: occupancy(target, block_threads, r, shared_bytes)  # noqa: E731
    more = next(((r, at(r)) for r in range(registers + 1, MAX_REGISTERS + 1)
                 if at(r).blocks_per_sm < now.blocks_per_sm), None)
    fewer = next(((r, at(r)) for r in range(registers - 1, 0, -1) if at(r).blocks_per_sm > now.blocks_per_sm), None)
    return now, fewer, more


def pressure(build: Build) -> dict[str, Pressure]:
    """Each kernel's :class:`Pressure` (``nvdisasm --life-range-mode count``, ptxas' register count)."""
    found = analyse(build)
    result = {}
    for kernel in build.kernels:
        rows = [r for r in found.kernel_rows(kernel) if r.live is not None]
        resources = build.resources[kernel]
        now, fewer, more = register_steps(build.target, build.geometry.block_threads, resources.registers,
                                          resources.shared_bytes)
        peaks: dict[int, int] = {}
        for row in rows:
            if row.python_line is not None:
                peaks[row.python_line] = max(peaks.get(row.python_line, 0), row.live)
        top = max(rows, key=lambda r: r.live, default=None)
        result[kernel] = Pressure(
            kernel, resources.registers, top.live if top else 0, top.instruction.line if top else None,
            top.python_line if top else None, top.cuda_line if top else None, dict(sorted(peaks.items())),
            max(peaks, key=peaks.get, default=None), now, fewer, more)
    return result

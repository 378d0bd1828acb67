"""Measured counters on the build's lines: each profiled SASS instruction matched to the build's listing, then
summed per SASS, CUDA and Python line through the build's line map (:mod:`gpulab.compiler.analysis.attribution`).

The report gives absolute addresses. Its instructions come in runs of consecutive addresses, one per function
(the kernel, and any function it calls); each run is matched to the cubin's function whose opcodes it spells
from the function's start, so that an instruction's place is its address less its run's first. Every opcode
must be the listing's at that place (a report of another build would not be), else
:class:`~gpulab.errors.ProfilerError`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ..compiler.analysis.model import Row, analyse
from ..errors import ProfilerError
from .report import KernelReport

INSTRUCTION_BYTES = 16  # every SASS instruction of the supported targets (sm_70 and later)


@dataclass
class Measure:
    """What was measured on one line (or one SASS instruction, or a bucket of them).

    Attributes
    ----------
    counters : Counter
        Summed counters: ``samples`` and ``not_issued`` (warp-stall samples), ``executed`` and
        ``thread_executed`` (instructions), ``requests`` (warp-level global memory instructions executed: each
        one request), ``sectors``, ``ideal_sectors`` and ``excessive_sectors`` (L2 sectors those requests
        touched, would have touched with consecutive addresses, and touched beyond that), ``shared_executed``,
        ``shared_passes_needed`` and ``shared_conflicts`` (shared-memory instructions executed, the passes
        their width needs, and the passes they took beyond that: bank conflicts).
    reasons : Counter
        Stall samples by reason.
    local_bytes : int
        Bytes its local-memory instructions moved (thread instructions executed x access size).
    """

    counters: Counter = field(default_factory=Counter)
    reasons: Counter = field(default_factory=Counter)
    local_bytes: int = 0

    @property
    def samples(self) -> int:
        """Warp-stall samples (all of them: a warp issuing is a sample too)."""
        return self.counters["samples"]

    @property
    def top_reason(self) -> str | None:
        """The stall reason with the most samples."""
        return self.reasons.most_common(1)[0][0] if self.reasons else None

    @property
    def sectors_per_request(self) -> float | None:
        """L2 sectors each global memory request touched, on average (``None`` when it made none)."""
        requests = self.counters["requests"]
        return self.counters["sectors"] / requests if requests else None

    @property
    def ideal_sectors_per_request(self) -> float | None:
        """The sectors each request would touch were its threads' addresses consecutive."""
        requests = self.counters["requests"]
        return self.counters["ideal_sectors"] / requests if requests else None

    def add(self, other: Measure) -> None:
        self.counters.update(other.counters)
        self.reasons.update(other.reasons)
        self.local_bytes += other.local_bytes

    def as_dict(self) -> dict:
        """As the view's bundle carries it (docs/bundle.md, ``measured``)."""
        return {"samples": self.samples, "reasons": dict(self.reasons.most_common()),
                "executed": self.counters["executed"], "requests": self.counters["requests"],
                "sectors": self.counters["sectors"], "ideal_sectors": self.counters["ideal_sectors"],
                "shared_conflicts": self.counters["shared_conflicts"], "local_bytes": self.local_bytes}


@dataclass
class MeasuredRow:
    """One SASS instruction of the build with what was measured on it, and the load it waited on (the latest
    load writing a register it reads), if any."""

    row: Row
    measure: Measure
    waits_on: Row | None = None


_LOADS = {"LDG", "LDL", "LD", "ATOMG", "ATOM", "LDGSTS", "TEX", "TLD", "TLD4", "SULD"}
"""Instructions whose results a long-scoreboard stall waits for (L1TEX: global, local, texture and surface)."""


def _measure(instruction) -> Measure:
    found = Measure(Counter({k: v for k, v in instruction.counters.items() if v}), Counter(instruction.reasons))
    executed = instruction.counters["executed"]
    if instruction.space == "global":
        found.counters["requests"] += executed
    elif instruction.space == "local":
        found.local_bytes = instruction.counters["thread_executed"] * instruction.access_bytes
    elif instruction.space == "shared" and executed:
        needed = max(1, instruction.access_bytes // 4)  # passes a warp's access needs: 128 bytes a pass
        found.counters["shared_executed"] += executed
        found.counters["shared_passes_needed"] += needed * executed
        found.counters["shared_conflicts"] += round(max(0.0, instruction.shared_ways - needed) * executed)
    return found


def _load_producers(rows: list[Row]) -> dict[int, Row]:
    """Per instruction (its index in ``rows``, one function in program order), the latest load that wrote a
    register it reads, as :mod:`~gpulab.compiler.analysis.dataflow` reads registers (the last write before it)."""
    from ..compiler.analysis.dataflow import access

    last: dict[str, int] = {}
    found = {}
    for index, row in enumerate(rows):
        read = access(row.instruction)
        loads = [last[r] for r in (*read.values, *read.addresses) if r in last
                 and rows[last[r]].instruction.stem in _LOADS]
        if loads:
            found[index] = rows[max(loads)]
        for register in read.writes:
            last[register] = index
    return found


def _same_opcode(ours: str, theirs: str) -> bool:
    return ours == theirs or ours.split(".", 1)[0] == theirs.split(".", 1)[0] == "NOP"


def match(build, report: KernelReport) -> list[MeasuredRow]:
    """Each instruction of ``report`` (one launch of a kernel of ``build``) with the build's row of it.

    Raises
    ------
    ProfilerError
        When the report's kernel is not one of the build's, or its instructions are not the build's.
    """
    rows = analyse(build).rows
    functions: dict[str, list[Row]] = {}
    for row in rows:
        functions.setdefault(row.instruction.function, []).append(row)
    if report.name not in functions:
        raise ProfilerError(f"the profile is of kernel {report.name}, which build {build.key[:10]} does not have")
    found = []
    for function, run in _runs(report, report.name, functions):
        listing = functions[function]
        producers = _load_producers(listing)
        found += [MeasuredRow(row, _measure(instruction), producers.get(index))
                  for index, (row, instruction) in enumerate(zip(listing, run))]
    return found


def _runs(report: KernelReport, kernel: str, functions: dict[str, list[Row]]):
    """``(function, instructions)`` per run of consecutive addresses of the report, each matched to the function
    of the cubin whose opcodes it spells from its start (the kernel's own first)."""
    runs, current = [], []
    for instruction in report.instructions:
        if current and instruction.address != current[-1].address + INSTRUCTION_BYTES:
            runs.append(current)
            current = []
        current.append(instruction)
    if current:
        runs.append(current)
    order = [kernel, *(name for name in functions if name != kernel)]
    named = []
    for run in runs:
        opcodes = [i.opcode for i in run]
        owner = next((name for name in order if len(functions[name]) >= len(opcodes) and all(
            _same_opcode(row.instruction.opcode, opcode) for row, opcode in zip(functions[name], opcodes))), None)
        if owner is None:
            raise ProfilerError(f"{len(run)} profiled instructions of {kernel} at 0x{run[0].address:x} match no "
                                "function of the build: the profile is of another build")
        named.append((owner, run))
    return named


def place(row: Row) -> int | str:
    """Where an instruction belongs for the measured sums: its Python line, else ``"inlined"`` (inlined with the
    operator, no Python line) or ``"template"`` (the rest; see :mod:`gpulab.compiler.analysis.attribution`)."""
    if row.python_line is not None:
        return row.python_line
    return "inlined" if row.role == "inlined" else "template"


@dataclass
class LineMeasures:
    """One launch's (or several's) measures on the build's lines.

    Attributes
    ----------
    python : dict of int to Measure
        Python line (as its file or cell numbers it) -> its instructions' measure.
    inlined : Measure
        Instructions with no Python line, inlined with the operator (argument loads, result stores, the loop
        around the call).
    template : Measure
        The rest: gpulab's template.
    cuda : dict of int to Measure
        ``kernel.cu`` line -> its instructions' measure.
    bucket_cuda : dict of str to dict of int to Measure
        ``"inlined"`` and ``"template"`` -> ``kernel.cu`` line -> the measure of that bucket's instructions there.
    waits : dict
        Place (:func:`place`) -> Counter of the loads its long-scoreboard samples waited on, by the load's place
        and ``kernel.cu`` line.
    sass : dict of int to Measure
        Shown SASS line (0-based) -> its instruction's measure.
    total : Measure
        Every instruction's.
    rows : list of MeasuredRow
    """

    python: dict[int, Measure] = field(default_factory=dict)
    inlined: Measure = field(default_factory=Measure)
    template: Measure = field(default_factory=Measure)
    cuda: dict[int, Measure] = field(default_factory=dict)
    bucket_cuda: dict[str, dict[int, Measure]] = field(default_factory=lambda: {"inlined": {}, "template": {}})
    waits: dict = field(default_factory=dict)
    sass: dict[int, Measure] = field(default_factory=dict)
    total: Measure = field(default_factory=Measure)
    rows: list[MeasuredRow] = field(default_factory=list)

    def at(self, where: int | str) -> Measure:
        """The measure of a place (:func:`place`)."""
        if where == "inlined":
            return self.inlined
        if where == "template":
            return self.template
        return self.python.setdefault(where, Measure())

    def add(self, measured: list[MeasuredRow]) -> None:
        for item in measured:
            row, measure = item.row, item.measure
            where = place(row)
            self.rows.append(item)
            self.total.add(measure)
            self.sass.setdefault(row.instruction.line, Measure()).add(measure)
            self.at(where).add(measure)
            if row.cuda_line is not None:
                self.cuda.setdefault(row.cuda_line, Measure()).add(measure)
                if where in self.bucket_cuda:
                    self.bucket_cuda[where].setdefault(row.cuda_line, Measure()).add(measure)
            waiting = measure.reasons.get("long_sb", 0)
            if waiting and item.waits_on is not None:
                self.waits.setdefault(where, Counter())[place(item.waits_on), item.waits_on.cuda_line] += waiting


def line_measures(build, reports: list[KernelReport]) -> LineMeasures:
    """The measures of ``reports`` (launches of ``build``'s kernels) on its lines."""
    found = LineMeasures()
    for report in reports:
        found.add(match(build, report))
    return found

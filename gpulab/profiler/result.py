"""What ``gpulab.profile`` returns: the call's result and, per launch, what the GPU measured, on the build's lines.

A :class:`Profile` shows itself (:mod:`gpulab.shown`) as the build's live view with the measured column
(``docs/bundle.md``, section "Measured") and the verdict in its header; ``lines()`` and ``kernels()`` are the
same as tables.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..compiler.bundle import bundle_of
from ..display.table import Table, format_seconds
from ..shown import Shown
from .diagnose import measured_diagnostics
from .lines import LineMeasures, Measure, line_measures
from .report import GROUPS, REASONS, KernelReport
from .saved import read, save

VERSION = 1

KERNEL_METRICS = (
    ("duration", "gpu__time_duration.sum", "duration"),
    ("dram_bytes_per_second", "dram__bytes.sum.per_second", "DRAM throughput"),
    ("memory_throughput", "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
     "memory throughput (% of peak)"),
    ("achieved_occupancy", "sm__warps_active.avg.pct_of_peak_sustained_active", "achieved occupancy"),
    ("l1_hit_rate", "l1tex__t_sector_hit_rate.pct", "L1 hit rate"),
    ("l2_hit_rate", "lts__t_sector_hit_rate.pct", "L2 hit rate"),
)
"""(field, the raw page's metric, label) of each kernel-wide figure gpulab shows."""


def _metric_text(field: str, value: float) -> str:
    if field == "duration":
        return format_seconds(value * 1e-9)
    if field == "dram_bytes_per_second":
        return f"{value / 1e9:,.0f} GB/s"
    return f"{value:.1f}%"


@dataclass
class LaunchProfile:
    """One profiled launch: its build and kernel, its grid and block, and the report of it."""

    build: object
    kernel: str
    grid: int
    block: int
    report: KernelReport

    def metrics(self) -> dict[str, float]:
        """The kernel-wide figures (:data:`KERNEL_METRICS`) the report has, by field."""
        found = self.report.metrics
        return {name: found[metric] for name, metric, _ in KERNEL_METRICS if metric in found}


class Profile(Shown):
    """A call measured on the GPU (what :func:`gpulab.profile` returns); in a notebook, its build's live view with
    the measured column.

    Attributes
    ----------
    result : object
        What the call returned.
    launches : list of LaunchProfile
        Each gpulab launch of the call, in order.
    seconds : float
        The profiled call's wall time: the call, its recording, Nsight Compute's replays and reading the report.
    pages : dict of str to str
        The report's pages as Nsight Compute printed them (:mod:`gpulab.profiler.ncu`).
    device : str
        The GPU it ran on.
    """

    def __init__(self, result, launches: list[LaunchProfile], seconds: float, pages: dict[str, str], device: str):
        self.result = result
        self.launches = launches
        self.seconds = seconds
        self.pages = pages
        self.device = device

    def save(self, folder):
        """Write this profile into ``folder``, to read again anywhere with :func:`gpulab.profiler.load`."""
        return save(self, folder)

    @property
    def builds(self) -> list:
        """The builds the call ran, in the order of their first launch."""
        found = {}
        for launch in self.launches:
            found.setdefault(launch.build.key, launch.build)
        return list(found.values())

    @property
    def build(self):
        """The build of the call's first launch (the one a primitive's call runs)."""
        return self.launches[0].build

    def measures(self, build=None) -> LineMeasures:
        """What was measured on ``build``'s lines (the first build by default), all its launches summed."""
        build = build or self.build
        return line_measures(build, [launch.report for launch in self.launches if launch.build.key == build.key])

    @property
    def verdict(self) -> str:
        """One line: where most stall samples are and why."""
        return verdict(self.build, self.measures())

    @property
    def diagnostics(self):
        """The build's diagnostics with what was measured behind them, and those only a measurement finds."""
        return measured_diagnostics(self.build, self.measures())

    def lines(self, build=None) -> Table:
        """The Python lines of ``build`` with their stall samples, top reason, instructions and memory sectors."""
        build = build or self.build
        found = self.measures(build)
        total = found.total.samples or 1
        rows = [[line, build.python_text(line).strip(), *_cells(measure, total)]
                for line, measure in sorted(found.python.items())]
        for label, measure in (("(inlined)", found.inlined), ("(template)", found.template)):
            if measure.counters:
                rows.append(["", label, *_cells(measure, total)])
        return Table(["line", "code", "stall samples", "share", "top stall reason", "instructions executed",
                      "sectors / request"], rows, f"{build.primitive}({build.name}): {self.verdict}")

    def kernels(self) -> Table:
        """Each launch with its grid and the kernel-wide figures: duration, throughput, occupancy, hit rates."""
        rows = []
        for launch in self.launches:
            found = launch.metrics()
            rows.append([launch.kernel, f"{launch.grid} x {launch.block}",
                         *(_metric_text(name, found[name]) if name in found else "-" for name, _, _ in KERNEL_METRICS)])
        return Table(["kernel", "grid x block", *(label for _, _, label in KERNEL_METRICS)], rows,
                     f"measured on {self.device or 'a GPU'} in {format_seconds(self.seconds)} "
                     "(the call, the profiler's replays and the report)")

    def bundle(self, build=None, panes=None) -> dict:
        """The view's bundle of ``build`` (the first by default) with its ``measured`` section."""
        build = build or self.build
        options = {} if panes is None else {"panes": panes}
        return bundle_of(build, measured=self.measured(build), **options)

    def measured(self, build=None) -> dict:
        """The bundle's ``measured`` section of ``build`` (docs/bundle.md)."""
        build = build or self.build
        found = self.measures(build)
        total = found.total.samples
        used = [reason for reason, _ in found.total.reasons.most_common()]
        line = verdict_line(build, found)
        group = {reason: name for name, members in GROUPS.items() for reason in members}
        launches = [launch for launch in self.launches if launch.build.key == build.key]
        return {
            "version": VERSION,
            "device": self.device,
            "verdict": verdict(build, found),
            "verdict_line": line,
            "verdict_key": build.python_key(line) if line is not None else None,
            "reasons": [{"id": r, "label": REASONS.get(r, (r, ""))[0], "description": REASONS.get(r, ("", r))[1],
                         "group": group.get(r, "issue")} for r in used],
            "total": found.total.as_dict(),
            "python": [{"line": at, "key": build.python_key(at), "share": m.samples / total if total else 0,
                        **m.as_dict()} for at, m in sorted(found.python.items())],
            "inlined": found.inlined.as_dict(),
            "template": found.template.as_dict(),
            "cuda": [{"line": at, "share": m.samples / total if total else 0, **m.as_dict()}
                     for at, m in sorted(found.cuda.items())],
            "sass": {str(line): [m.samples, dict(m.reasons.most_common())] for line, m in sorted(found.sass.items())
                     if m.samples},
            "ptx": _ptx_samples(build, found),
            "kernels": [{"kernel": launch.kernel, "grid": launch.grid, "block": launch.block,
                         "metrics": [{"field": name, "label": label, "value": launch.metrics()[name],
                                      "text": _metric_text(name, launch.metrics()[name])}
                                     for name, _, label in KERNEL_METRICS if name in launch.metrics()]}
                        for launch in launches],
            "diagnostics": [{**d.as_dict(), "key": build.python_key(d.python_line) if d.python_line else None}
                            for d in measured_diagnostics(build, found)],
        }

    def __repr__(self) -> str:
        return f"{self.verdict}\n\n{self.kernels()!r}\n\n{self.lines()!r}"


def load(folder) -> Profile:
    """The profile saved in ``folder`` by :meth:`Profile.save` (its ``result`` is ``None``: the call's output is
    not kept).

    Raises
    ------
    ProfilerError
        When the folder holds no profile, or one this gpulab cannot read.
    """
    saved = read(folder)
    return Profile(None, [LaunchProfile(*launch) for launch in saved.launches], saved.seconds, saved.pages,
                   saved.device)


def _ptx_samples(build, found: LineMeasures) -> dict[str, int]:
    """Per PTX pane line (0-based), the samples of the SASS instructions of the same source location (the same
    keys in the line map: the PTX has no address of its own to sample), for lines whose location has samples."""
    line_map = build.line_map
    by_keys: dict[tuple, int] = {}
    for line, measure in found.sass.items():
        keys = line_map.sass.get(line)
        if keys and measure.samples:
            by_keys[keys] = by_keys.get(keys, 0) + measure.samples
    return {str(line): by_keys[keys] for line, keys in sorted(line_map.ptx.items()) if keys in by_keys}


def _cells(measure: Measure, total: int) -> list:
    reason = measure.top_reason
    per_request = measure.sectors_per_request
    return [measure.samples, f"{measure.samples / total:.0%}", REASONS.get(reason, (reason or "-",))[0],
            measure.counters["executed"], f"{per_request:.1f}" if per_request is not None else "-"]


def verdict(build, found: LineMeasures) -> str:
    """``"72% of stall samples on line 4 (`x[i - 1]`): long scoreboard, waiting on global or local memory"``."""
    return _verdict(build, found)[0]


def verdict_line(build, found: LineMeasures) -> int | None:
    """The Python line the verdict names (as its file or cell numbers it), or ``None`` when it names the template
    or nothing."""
    return _verdict(build, found)[1]


def _verdict(build, found: LineMeasures) -> tuple[str, int | None]:
    total = found.total.samples
    if not total:
        return "no stall samples: the kernel ran too briefly to sample; profile more items", None
    places = [*found.python, "inlined", "template"]
    where = max(places, key=lambda at: found.at(at).samples)
    measure = found.at(where)
    label, doing = REASONS.get(measure.top_reason, (measure.top_reason, ""))
    text = f"{measure.samples / total:.0%} of stall samples on {describe(build, found, where)}: {label}, {doing}"
    waited = found.waits.get(where)
    if measure.top_reason == "long_sb" and waited:
        (source, cuda_line), _ = waited.most_common(1)[0]
        text += ("; on its own loads" if source == where and isinstance(where, int)
                 else f"; on the loads of {describe(build, found, source, cuda_line)}")
    return text.rstrip(", "), where if isinstance(where, int) else None


def describe(build, found: LineMeasures, where, cuda_line: int | None = None) -> str:
    """A place (:func:`gpulab.profiler.lines.place`) in words: ``line 3 (`z = math.exp(y)`)``, or the template's
    code with its ``kernel.cu`` line (``cuda_line``, else the one of that code with the most samples)."""
    if isinstance(where, int):
        return f"line {where} (`{build.python_text(where).strip()}`)"
    what = "gpulab's template" if where == "template" else "the template's code inlined around your function"
    if cuda_line is None:
        lines = found.bucket_cuda.get(where) or {}
        cuda_line = max(lines, key=lambda line: lines[line].samples, default=None)
    source = build.source.splitlines()
    if cuda_line is not None and 0 < cuda_line <= len(source):
        what += f" (kernel.cu line {cuda_line}, `{source[cuda_line - 1].strip()}`)"
    return what

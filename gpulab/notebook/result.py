"""What one ``%%gpukernel`` cell makes: its build(s), run check and benchmark, as one object that displays itself."""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from typing import Callable

from IPython.display import display

from ..bench import BenchResult, bench
from ..compiler.analysis.diff import BuildDiff
from ..compiler.analysis.diff import diff as build_diff
from ..compiler.build import Build
from ..compiler.bundle import PANES
from ..compiler.pipeline import compile as compile_build
from ..compiler.target import Target
from ..device import Device
from ..display.table import Table
from ..errors import ProfilerError
from ..kernel import Kernel
from ..options import BuildOptions
from ..profiler.result import Profile
from .checks import COMPARE_SIZE, compare_seconds, compare_table, run_check
from .formatters import live_view
from .measure import profile_cell


@dataclass
class KernelResult:
    """The outputs of one ``%%gpukernel`` cell (``%%gpukernel -o`` returns it, as ``%timeit -o`` does).

    Attributes
    ----------
    build : Build
        The build the cell asked for.
    compare : Build or None
        With ``--compare``: the same function linked the other way.
    compare_table : Table or None
        With ``--compare``: the two builds side by side (timed on a GPU).
    run_check : Table or None
        With ``--run``: the result checked against the host reference.
    bench : BenchResult or None
        With ``--bench``: the timings (``bench.plot()`` draws them).
    diff : BuildDiff or None
        With ``--diff`` or ``--diff-target``: this build's SASS aligned with the other's.
    profile : Profile or None
        With ``--profile``: what the GPU measured (``profile.lines()``, ``profile.kernels()``); the view shows it.
    profile_error : str or None
        With ``--profile``, when nothing could be measured: why, and what to do.
    panes : tuple of str
        The panes the view shows.
    """

    build: Build
    compare: Build | None = None
    compare_table: Table | None = None
    run_check: Table | None = None
    bench: BenchResult | None = None
    diff: BuildDiff | None = None
    profile: Profile | None = None
    profile_error: str | None = None
    panes: tuple[str, ...] = PANES

    def view(self):
        """The build's live view (with the compared build behind a toggle, and what was measured on its lines):
        see :func:`formatters.live_view`."""
        measured = None
        if self.profile is not None and self.profile.build.key == self.build.key:
            measured = self.profile.measured(self.build)
        return live_view(self.build, panes=self.panes, compare=self.compare, measured=measured)

    def measured_parts(self) -> list:
        """With ``--profile``: the launches' figures, and the profiled build's own view when it is not the one shown
        (a ``--target`` other than the GPU's)."""
        if self.profile is None:
            return []
        parts = [self.profile.kernels()]
        if self.profile.build.key != self.build.key:
            parts.append(self.profile)
        return parts

    def parts(self) -> list:
        """What the cell shows, in order: compare table, view, measured figures, diff, run check, bench table (its
        plot follows it)."""
        return [part for part in (self.compare_table, self.view(), *self.measured_parts(), self.diff, self.run_check,
                                  self.bench) if part is not None]

    def _ipython_display_(self) -> None:
        for part in self.parts():
            display(part)
        if self.bench is not None:
            display(self.bench.plot())

    def __repr__(self) -> str:
        return "\n\n".join(repr(part) for part in self.parts())


def run_cell(kernel: Kernel, primitive: str, *, target: Target, device: Device, options: BuildOptions,
             arguments: dict | None = None, panes=PANES, compare: bool = False, run: int | None = None,
             bench_sizes=None, initial=None, diff: dict | None = None, profile: int | None = None,
             associative: bool = False, show: Callable[[object], None] = lambda part: None) -> KernelResult:
    """Build ``primitive(kernel)``, and compare, run and time it as a cell asks; ``show`` each part when it is ready.

    Parameters
    ----------
    kernel : Kernel
        The cell's function.
    primitive : str
        What to wrap it in.
    target : Target
        What to compile for.
    device : Device
        Where ``run`` and ``bench_sizes`` run.
    options : BuildOptions
        The cell's build options; every build, run and timing uses them (the run check checks bounds always).
    arguments : dict, optional
        The primitive's own call arguments (``bins``, ``range`` of a histogram), which its runs take.
    panes : sequence of str
        The panes the view shows.
    compare : bool
        Also build the function linked the other way (timed on a GPU).
    run : int, optional
        Run on this many random items and check against the host.
    bench_sizes : sequence of int, optional
        Time the device and the host at these sizes.
    initial : optional
        The reduce or scan initial value.
    diff : dict, optional
        What differs in a second build, whose SASS is aligned with this one's (:func:`gpulab.diff`):
        ``target`` (a Target) or build options by name (``lto``, ``fma``).
    profile : int, optional
        Measure the kernel on this many random items under the GPU's profiler (:func:`gpulab.profile`); when
        that cannot be done, the estimated view stays and why is printed (``profile_error``).
    associative : bool
        The cell's word that the operator is associative: its builds are not probed for a counterexample.
    show : callable
        Called with each part as soon as it is made (``display`` shows them as they come).
    """
    result = KernelResult(compile_build(primitive, kernel, target=target, options=options, associative=associative),
                          panes=tuple(panes))
    arguments = arguments or {}
    if compare:
        result.compare = compile_build(primitive, kernel, target=target, options=options, lto=not options.lto,
                                       associative=associative)
        seconds = None
        if device.is_gpu:
            seconds = compare_seconds(kernel, primitive, device, max(run or 0, COMPARE_SIZE), initial=initial,
                                      options=options, **arguments)
        result.compare_table = compare_table(result.build, result.compare, seconds)
        show(result.compare_table)
    if profile:
        try:
            result.profile = profile_cell(kernel, primitive, profile, device, options, initial, **arguments)
        except ProfilerError as exc:
            result.profile_error = f"--profile: nothing was measured: {exc}"
            print(result.profile_error, file=sys.stderr)
    show(result.view())
    for part in result.measured_parts():
        show(part)
    if diff:
        changed = {name: value for name, value in diff.items() if name != "target"}
        other = compile_build(primitive, kernel, target=diff.get("target", target), options=options,
                              associative=associative, **changed)
        result.diff = build_diff(result.build, other)
        show(result.diff)
    if run:
        result.run_check = run_check(kernel, primitive, run, device, initial, replace(options, boundscheck=True),
                                     **arguments)
        show(result.run_check)
    if bench_sizes:
        names = ["host"] if not device.is_gpu else ["host", device.name]
        result.bench = bench(kernel, primitive, bench_sizes, devices=names, initial=initial, options=options,
                             **arguments)
        show(result.bench)
        show(result.bench.plot())
    return result

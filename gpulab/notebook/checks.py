"""What ``%%gpukernel --run`` and ``--compare`` show: a run checked against the host, and two builds side by side."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from .. import registry
from ..bench import bench, default_initial, random_inputs, require_memory
from ..compiler.analysis.calls import CALL_KINDS
from ..compiler.build import Build
from ..compiler.bundle import call_kinds
from ..device import Device
from ..display.table import Table, format_seconds
from ..host import compare, float64_reference
from ..host.run import WIDER
from ..kernel import Kernel
from ..options import BuildOptions
from ..primitives import call
from ..runtime.arrays import to_host
from ..types import element_type

# Items timed per build by --compare on a GPU (or --run's size, if larger): enough that the
# kernel, not the per-call cost of a launch (~10-20 us), decides the time.
COMPARE_SIZE = 2**24


def _preview(values) -> str:
    array = np.asarray(values)
    if array.ndim == 0:
        return str(array[()])
    text = np.array2string(array, threshold=6, edgeitems=3, max_line_width=10**6, precision=6)
    return f"{text} ({array.size:,} items)"


def run_check(kernel: Kernel, primitive: str, n: int, device: Device, initial=None,
              options: BuildOptions = BuildOptions(), seed: int = 0, **arguments) -> Table:
    """Run ``primitive(kernel)`` built with ``options`` on ``n`` random items on ``device`` and check it against
    the host backend (``arguments``: the primitive's own call arguments, such as ``bins=``).

    ``arguments`` are the primitive's own (``bins=`` for a histogram).

    Returns
    -------
    Table
        The result, the host reference's result and whether they agree
        (exactly, or by how much they differ); without a GPU, that nothing
        was checked, since both ran the host backend.
    """
    record = registry.primitive(primitive)
    require_memory(kernel, primitive, n, device)
    inputs = random_inputs(kernel, primitive, n, np.random.default_rng(seed))
    initial = default_initial(primitive, kernel, initial)
    on_device = inputs
    if device.is_gpu:
        import cupy

        with cupy.cuda.Device(device.ordinal):
            on_device = [cupy.asarray(x) for x in inputs]
    got = call(primitive, kernel, on_device, initial=initial, device=device.name, options=options, **arguments)
    want = call(primitive, kernel, inputs, initial=initial, device="host", options=options, **arguments)
    rows, runs = [], None
    if record.keyed:  # (the runs' keys, their folds): the same runs first, then their folds
        (run_keys, got), (host_keys, want) = (to_host(got[0]), got[1]), want
        rows.append(["run keys", _preview(run_keys), _preview(host_keys)])
        runs = compare(run_keys, host_keys, element_type(host_keys.dtype))
    got, want = to_host(got), np.asarray(want)
    reference = None
    if want.dtype.name in WIDER:
        reference = float64_reference(primitive, kernel, *record.call_arguments(inputs, initial),
                                      **options.host_options(record), **arguments)
        reference = reference[1] if record.keyed else reference
    check = runs if runs is not None and not runs.exact else compare(got, want, element_type(want.dtype), reference)
    verdict = _verdict(check) if device.is_gpu else "not checked: no device ran it"
    rows += [["result", _preview(got), _preview(want)], ["check", verdict, ""]]
    if check.float64_rel_error is not None:
        rows.append(["rel. error vs float64", f"{check.float64_rel_error:.3g}", f"{check.host_float64_rel_error:.3g}"])
    caption = f"{primitive}({kernel.name}) of {n:,} random {inputs[record.operand].dtype} items"
    if not device.is_gpu:
        caption += " (no GPU: both columns ran the host backend)"
    return Table(["", device.name, "host reference"], rows, caption)


def _verdict(check) -> str:
    if check.exact:
        return "exact"
    if check.ulps is None:
        return check.message
    return f"max abs error {check.max_abs_error:.3g}, max rel error {check.max_rel_error:.3g}, {check.ulps} ulps"


def compare_table(build: Build, other: Build, seconds: dict | None = None) -> Table:
    """The LTO and PTX-linked builds side by side: operator CALLs, SASS size, registers, spills, time.

    The two are one kernel text linked two ways, so every difference is the link's.

    Parameters
    ----------
    build, other : Build
        The same function linked both ways (in either order).
    seconds : dict, optional
        ``{"lto": s, "ptx": s, "where": "n=..., cuda:0"}`` measured on a GPU.
    """
    lto, ptx = (build, other) if build.options.lto else (other, build)
    counts = [{k["kind"]: k["count"] for k in call_kinds(b)} for b in (lto, ptx)]
    rows = [["CALLs in the SASS", lto.sass_calls, ptx.sass_calls]]
    for kind, label in CALL_KINDS.items():  # each kind of call either build has, named
        if any(kind in c for c in counts):
            rows.append([f"  {label}", *(c.get(kind, 0) for c in counts)])
    rows.append(["SASS instructions", lto.sass_instructions, ptx.sass_instructions])
    for kernel in lto.resources:
        rows.append([f"registers {kernel}", lto.resources[kernel].registers,
                     ptx.resources[kernel].registers if kernel in ptx.resources else "-"])
        rows.append([f"spill bytes {kernel}", _spills(lto.resources.get(kernel)), _spills(ptx.resources.get(kernel))])
    if seconds:
        rows.append([f"time ({seconds['where']})", format_seconds(seconds["lto"]), format_seconds(seconds["ptx"])])
    return Table(["", "LTO", "PTX link"], rows, f"{build.primitive}({build.name}) on {build.target}: LTO vs PTX link")


def _spills(resources) -> str:
    """Spill stores / loads in bytes (``?`` where the linker did not say)."""
    if resources is None or resources.spill_stores is None:
        return "?"
    return f"{resources.spill_stores} / {resources.spill_loads}"


def compare_seconds(kernel: Kernel, primitive: str, device: Device, n: int, *, initial=None,
                    options: BuildOptions = BuildOptions(), **arguments) -> dict:
    """Time ``options``' build linked with LTO and linked PTX on ``device`` at ``n`` items:
    ``{"lto": s, "ptx": s, "where": ...}`` (``arguments``: the primitive's own, such as ``bins=``)."""
    seconds = {}
    for key, lto in (("lto", True), ("ptx", False)):
        result = bench(kernel, primitive, [n], devices=[device.name], initial=initial, progress=False,
                       options=replace(options, lto=lto), **arguments)
        seconds[key] = result.rows[0]["seconds"]
    seconds["where"] = f"n={n:,}, {device.name}"
    return seconds

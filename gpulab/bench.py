"""Time a primitive over a sweep of sizes, on the host reference and on GPUs.

Device calls are timed with CUDA events on CuPy's current stream: warm-up
calls first, then the median of the repeats. Inputs rotate among enough
copies that one pass over them is larger than the L2 cache, so no call
reads data the previous one left in L2. Host calls are timed with
``time.perf_counter``. Effective bandwidth counts the bytes a primitive
must move: map reads its inputs and writes its output, reduce reads,
scan reads and writes, filter reads and writes the items it keeps.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from . import registry
from .cache.info import format_bytes
from .device import Device, current_device, free_host_bytes
from .device import device as find_device
from .display.table import Table, format_seconds
from .errors import ArgumentError
from .kernel import Kernel, as_kernel
from .options import BuildOptions, build_options, check_flags
from .registry import Primitive
from .types import element_type

__all__ = ["BenchResult", "bench", "item_count", "random_array", "random_inputs", "require_memory"]

FALLBACK_L2_BYTES = 64 * 2**20
COPY_BYTES = 256 * 2**20  # the device-to-device copy that measures the roofline


# ---------------------------------------------------------------- inputs


def item_count(value, what: str = "a size") -> int:
    """``value`` (an int, or a float such as ``1e6``) as a whole, positive number of items.

    Raises
    ------
    ArgumentError
        For ``inf``, ``nan``, fractions, zero, negatives and non-numbers, naming ``what`` and the value.
    """
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ArgumentError(f"{what} must be a count (such as 1e6), not {value!r}") from None
    if not math.isfinite(number) or number < 1 or number != int(number):
        raise ArgumentError(f"{what} must be a whole, positive, finite count (such as 1e6), not {value!r}")
    return int(value) if isinstance(value, int) else int(number)


def require_memory(kernel: Kernel, primitive: str, n: int, device: Device) -> None:
    """Refuse ``n`` random items of ``primitive(kernel)``'s inputs that would not fit, before any is made.

    The host makes the inputs (drawing float64 random numbers first) and a
    result; a GPU holds copies of the inputs and a result.

    Raises
    ------
    ArgumentError
        Saying how much memory ``n`` items need and how much is free.
    """
    args = kernel.signature().args
    inputs = args if registry.primitive(primitive).elementwise else args[:1]
    per_item = sum(t.itemsize for t in inputs) + max(t.itemsize for t in inputs)
    names = ", ".join(t.name for t in inputs)
    for where, need, free in (("host", n * (per_item + 16), free_host_bytes()),
                              (device.name, n * per_item, _free_device_bytes(device))):
        if free is not None and need > free:
            raise ArgumentError(f"{n:,} items ({names}) need about {format_bytes(need)} of {where} memory for the "
                                f"inputs and the result, but {format_bytes(free)} are free: use fewer items")


def _free_device_bytes(device: Device) -> int | None:
    if not device.is_gpu:
        return None
    import cupy

    with cupy.cuda.Device(device.ordinal):
        free, _ = cupy.cuda.runtime.memGetInfo()
    return free + cupy.get_default_memory_pool().free_bytes()


def random_array(element, n: int, rng: np.random.Generator) -> np.ndarray:
    """Return ``n`` random items of an element type.

    Floats and complex parts are uniform in [-1, 1), signed integers in
    [-100, 100], unsigned ones in [0, 100], so sums stay far from overflow.

    Parameters
    ----------
    element : ElementType, dtype or str
        The element type (records are filled field by field).
    n : int
        How many items.
    rng : numpy.random.Generator
        Where the randomness comes from.
    """
    dtype = element_type(element).dtype
    if dtype.fields is not None:
        out = np.empty(n, dtype=dtype)
        for name in dtype.names:
            out[name] = random_array(dtype.fields[name][0], n, rng)
        return out
    if dtype.kind == "b":
        return rng.integers(0, 2, n).astype(dtype)
    if dtype.kind in "iu":
        return rng.integers(0 if dtype.kind == "u" else -100, 100, n, endpoint=True).astype(dtype)
    if dtype.kind == "c":
        return (rng.uniform(-1, 1, n) + 1j * rng.uniform(-1, 1, n)).astype(dtype)
    return rng.uniform(-1, 1, n).astype(dtype)


def _kernel_of(fn, dtype) -> Kernel:
    """The kernel with its parameter types: declared, or all ``dtype``."""
    kernel = as_kernel(fn)
    if dtype is None:
        return kernel
    return Kernel(kernel.pyfunc, types=[dtype] * len(kernel.param_names), constants=kernel.constants)


def random_inputs(kernel: Kernel, primitive: str, n: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Random arrays of ``n`` items for a call of ``primitive(kernel)``: one per parameter for map, else one, or
    what the primitive's record makes (a segmented reduce's offsets, a reduce_by_key's keys)."""
    args = kernel.signature().args
    record = registry.primitive(primitive)
    make = record.random_arguments()
    if make is not None:
        return make(args, n, rng, lambda element, count: random_array(element, count, rng))
    return [random_array(t, n, rng) for t in (args if record.elementwise else args[:1])]


def default_initial(primitive: str, kernel: Kernel, initial):
    """``initial``, or zero of the element type where the primitive needs one and none is given."""
    if registry.primitive(primitive).initial == "required" and initial is None:
        return np.zeros((), dtype=kernel.signature().args[0].dtype)[()]
    return initial


def _moved_bytes(record: Primitive, inputs, result) -> int:
    """Bytes a call must move: its reads, and its result (or results) where it is written."""
    reads = sum(x.nbytes for x in inputs)
    written = sum(int(part.nbytes) for part in (result if isinstance(result, tuple) else (result,)))
    return reads + (written if record.writes_result else 0)


# ---------------------------------------------------------------- host timing


def _host_call(record: Primitive, kernel: Kernel, initial, options: BuildOptions, arguments: dict):
    run, host_options = record.host_runner(), {**options.host_options(record), **arguments}
    return lambda xs: run(kernel, *record.call_arguments(xs, initial), **host_options)


def _time_host(call, inputs, repeats: int, warmup: int, max_seconds: float):
    """Median seconds of ``call(inputs)``, the samples taken and the last result."""
    began = time.perf_counter()
    result = None
    for _ in range(warmup):
        result = call(inputs)
        if time.perf_counter() - began > max_seconds:
            break
    samples = []
    began = time.perf_counter()
    while len(samples) < repeats and (not samples or time.perf_counter() - began < max_seconds):
        start = time.perf_counter()
        result = call(inputs)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples), len(samples), result


# ---------------------------------------------------------------- device timing


def l2_bytes(gpu: Device) -> int:
    """The L2 cache size of ``gpu`` in bytes (64 MiB when it cannot be queried)."""
    import cupy

    try:
        size = cupy.cuda.runtime.deviceGetAttribute(cupy.cuda.runtime.cudaDevAttrL2CacheSize, gpu.ordinal)
    except cupy.cuda.runtime.CUDARuntimeError:
        return FALLBACK_L2_BYTES
    return int(size) or FALLBACK_L2_BYTES


def copy_gb_per_s(gpu: Device, repeats: int = 10) -> float:
    """Measured device-to-device copy bandwidth of ``gpu`` (bytes read plus written, GB/s)."""
    import cupy

    with cupy.cuda.Device(gpu.ordinal):
        nbytes = min(COPY_BYTES, (gpu.memory_bytes or COPY_BYTES * 8) // 8)
        source, destination = cupy.empty(nbytes, np.uint8), cupy.empty(nbytes, np.uint8)
        seconds, _, _ = _time_device(lambda xs: destination.data.copy_from_device_async(xs[0].data, nbytes),
                                     [[source]], repeats, 2)
        return 2 * nbytes / seconds / 1e9


def _device_call(record: Primitive, kernel: Kernel, example, gpu: Device, initial, options: BuildOptions,
                 arguments: dict):
    """A reused plan for ``example``'s arrays, and a call of it on other arrays (its output as it returns it)."""
    from .primitives import make_plan

    plan = make_plan(record, kernel, example, gpu, options, **arguments)
    return plan, lambda xs: plan(*record.call_arguments(xs, initial))


def _time_device(call, copies, repeats: int, warmup: int):
    """Median event-timed seconds of ``call``, rotating over ``copies`` of the inputs."""
    import cupy

    for i in range(warmup):
        result = call(copies[i % len(copies)])
    cupy.cuda.get_current_stream().synchronize()
    events = [(cupy.cuda.Event(), cupy.cuda.Event()) for _ in range(repeats)]
    for i, (start, end) in enumerate(events):
        start.record()
        result = call(copies[(warmup + i) % len(copies)])
        end.record()
    events[-1][1].synchronize()
    samples = [cupy.cuda.get_elapsed_time(start, end) / 1e3 for start, end in events]
    return statistics.median(samples), repeats, result


def _time_gpu(record: Primitive, kernel, inputs, gpu: Device, initial, repeats, warmup, options, arguments):
    """Median seconds, samples and bytes moved for one size on ``gpu``."""
    import cupy

    with cupy.cuda.Device(gpu.ordinal):
        example = [cupy.asarray(x) for x in inputs]
        plan, call = _device_call(record, kernel, example, gpu, initial, options, arguments)
        per_copy = max(1, sum(x.nbytes for x in inputs))
        count = min(warmup + repeats, l2_bytes(gpu) // per_copy + 2)
        copies = [example] + [[x.copy() for x in example] for _ in range(count - 1)]
        seconds, samples, output = _time_device(call, copies, repeats, warmup)
        return seconds, samples, _moved_bytes(record, inputs, plan.finish(output))


# ---------------------------------------------------------------- progress


class _Progress:
    """One line of progress: an ipywidgets bar in a Jupyter kernel, else a rewritten line on a terminal."""

    def __init__(self, total: int, label: str, enabled: bool):
        self.total, self.label, self.done = total, label, 0
        self.bar = self.handle = self.text = None
        if not enabled:
            return
        from IPython import get_ipython

        if getattr(get_ipython(), "kernel", None) is not None:
            import ipywidgets
            from IPython.display import display

            self.bar = ipywidgets.IntProgress(value=0, max=total, description=label,
                                              style={"description_width": "initial"})
            self.handle = display(self.bar, display_id=True)
        elif sys.stderr.isatty():
            self.text = sys.stderr

    def step(self, what: str) -> None:
        """Say that ``what`` starts."""
        if self.bar is not None:
            self.bar.description = f"{self.label}: {what}"
        elif self.text is not None:
            self.text.write(f"\r{self.label}: {self.done + 1}/{self.total} {what}\033[K")
            self.text.flush()

    def advance(self) -> None:
        """Count one measurement done."""
        self.done += 1
        if self.bar is not None:
            self.bar.value = self.done

    def close(self) -> None:
        """Remove the bar (leaving an empty output), or clear the line."""
        if self.bar is not None:
            self.bar.close()
            self.handle.update({"text/plain": ""}, raw=True)
        elif self.text is not None:
            self.text.write("\r\033[K")
            self.text.flush()


# ---------------------------------------------------------------- result


@dataclass
class BenchResult:
    """Timings of one primitive over sizes and devices.

    Attributes
    ----------
    name : str
        The function's name.
    primitive : str
        ``map``, ``reduce``, ``scan`` or ``filter``.
    dtype : str
        The element type of the (first) input.
    rows : list of dict
        One per device and size: ``device``, ``primitive``, ``size``,
        ``seconds`` (median), ``bytes``, ``gb_per_s``, ``repeats``.
    copy_gb_per_s : dict of str to float
        Each measured GPU's device-to-device copy bandwidth (the roofline).
    descriptions : dict of str to str
        Each device's description (its GPU name).
    """

    name: str
    primitive: str
    dtype: str
    rows: list[dict] = field(default_factory=list)
    copy_gb_per_s: dict[str, float] = field(default_factory=dict)
    descriptions: dict[str, str] = field(default_factory=dict)

    def devices(self) -> list[str]:
        """Device names in the order they were measured."""
        return list(dict.fromkeys(row["device"] for row in self.rows))

    def series(self, device: str) -> list[dict]:
        """The rows of one device, by size."""
        return sorted((row for row in self.rows if row["device"] == device), key=lambda row: row["size"])

    def to_json(self) -> str:
        """Return the result as a JSON document."""
        return json.dumps({"name": self.name, "primitive": self.primitive, "dtype": self.dtype,
                           "rows": self.rows, "copy_gb_per_s": self.copy_gb_per_s,
                           "descriptions": self.descriptions}, indent=1)

    def table(self) -> Table:
        """The rows as a :class:`Table`."""
        rows = [[row["device"], f"{row['size']:,}", format_seconds(row["seconds"]),
                 _format_rate(row["gb_per_s"]), row["repeats"]] for row in self.rows]
        caption = f"{self.primitive}({self.name}) on {self.dtype}"
        for device, bandwidth in self.copy_gb_per_s.items():
            caption += f"; {device} copy {bandwidth:.0f} GB/s"
        return Table(["device", "size", "median time", "GB/s", "repeats"], rows, caption)

    def plot(self):
        """Return a matplotlib Figure: time and effective bandwidth against size (see :mod:`gpulab.plot`)."""
        from .plot import plot_bench

        return plot_bench(self)

    def _repr_html_(self) -> str:
        return self.table()._repr_html_()

    def __repr__(self) -> str:
        return repr(self.table())


def _format_rate(gb_per_s: float) -> str:
    return f"{gb_per_s:,.0f}" if gb_per_s >= 100 else f"{gb_per_s:.3g}"


# ---------------------------------------------------------------- bench


def bench(fn, primitive: str, sizes, devices=None, dtype=None, repeats: int = 20, warmup: int = 3,
          initial=None, *, seed: int = 0, max_seconds: float = 2.0, progress: bool = True,
          options: BuildOptions | None = None, **given) -> BenchResult:
    """Time ``primitive(fn)`` on every device over ``sizes``.

    Parameters
    ----------
    fn : function or Kernel
        The function, annotated or typed by ``dtype``.
    primitive : str
        A name of :data:`gpulab.registry.PRIMITIVES` (``map``, ``reduce``, ``scan``, ``filter``).
    sizes : sequence of int or float
        Numbers of items (``1e6`` is accepted).
    devices : sequence of str, optional
        ``"host"`` and ``"cuda:N"``; default the host plus the current
        device when it is a GPU.
    dtype : element type, optional
        Type of every parameter when ``fn`` has no annotations.
    repeats, warmup : int
        Timed and untimed calls per size and device.
    initial : scalar, optional
        Reduce's initial value (zero by default) or scan's.
    seed : int
        Of the random inputs.
    max_seconds : float
        Host calls stop repeating once this much time was spent on one size.
    progress : bool
        Show one line of progress (a bar in a Jupyter kernel).
    options : BuildOptions, optional
        Build options made earlier; those ``given`` by name change them.
    **given
        Build options (:class:`gpulab.BuildOptions`: ``lto``, ``fma``, ``exclusive`` for scan...), the host
        taking those that change what a call computes (``exclusive``); and the primitive's own call arguments
        (``bins=`` for a histogram), which the device and the host take.

    Returns
    -------
    BenchResult

    Raises
    ------
    ArgumentError
        For an unknown option or a value of the wrong kind.
    """
    record = registry.primitive(primitive)
    arguments, given = record.own_arguments(given)
    options = build_options(record, options, **given)
    check_flags(progress=progress)
    kernel = _kernel_of(fn, dtype)
    targets = [find_device(d) for d in devices] if devices else _default_devices()
    counts = sorted({item_count(size, "each of sizes") for size in sizes})
    for target in targets if counts else ():
        require_memory(kernel, primitive, counts[-1], target)
    initial = default_initial(primitive, kernel, initial)
    rng = np.random.default_rng(seed)
    result = BenchResult(kernel.name, primitive, kernel.signature().args[0].name,
                         descriptions={d.name: d.description for d in targets})
    bar = _Progress(len(counts) * len(targets), f"bench {primitive}({kernel.name})", progress)
    try:
        for gpu in (d for d in targets if d.is_gpu):
            bar.step(f"{gpu.name} copy bandwidth")
            result.copy_gb_per_s[gpu.name] = copy_gb_per_s(gpu)
        for n in counts:
            inputs = random_inputs(kernel, primitive, n, rng)
            for target in targets:
                bar.step(f"{target.name} n={n:,}")
                if target.is_gpu:
                    seconds, samples, moved = _time_gpu(record, kernel, inputs, target, initial, repeats, warmup,
                                                        options, arguments)
                else:
                    call = _host_call(record, kernel, initial, options, arguments)
                    seconds, samples, out = _time_host(call, inputs, repeats, warmup, max_seconds)
                    moved = _moved_bytes(record, inputs, out if isinstance(out, tuple) else np.asarray(out))
                result.rows.append({"device": target.name, "primitive": primitive, "size": n, "seconds": seconds,
                                    "bytes": moved, "gb_per_s": moved / seconds / 1e9, "repeats": samples})
                bar.advance()
    finally:
        bar.close()
    return result


def _default_devices() -> list[Device]:
    current = current_device()
    return [find_device("host"), current] if current.is_gpu else [find_device("host")]

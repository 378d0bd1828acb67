"""Plots of benchmark results: time and effective bandwidth against size.

Figures are made without pyplot, so they never join pyplot's global state
and show once, as a PNG, wherever IPython displays them.
"""

from __future__ import annotations

import io
import math

from matplotlib.figure import Figure
from matplotlib.ticker import EngFormatter, FuncFormatter, LogLocator, MaxNLocator, NullFormatter

__all__ = ["BenchFigure", "plot_bench"]

HOST_COLOUR = "#7f7f7f"
GPU_COLOURS = ("#1f77b4", "#2ca02c", "#9467bd", "#d62728", "#ff7f0e", "#17becf")


class BenchFigure(Figure):
    """A matplotlib Figure that IPython displays as a PNG with no pyplot backend set up."""

    def _repr_png_(self) -> bytes:
        buffer = io.BytesIO()
        self.savefig(buffer, format="png", dpi=100)
        return buffer.getvalue()


def _label(result, device: str) -> str:
    description = result.descriptions.get(device, "")
    return device if device == "host" or not description else f"{device} ({description})"


def _colours(devices) -> dict[str, str]:
    gpus = iter(GPU_COLOURS * (1 + len(devices) // len(GPU_COLOURS)))
    return {device: HOST_COLOUR if device == "host" else next(gpus) for device in devices}


def plot_bench(result) -> BenchFigure:
    """Plot a :class:`gpulab.bench.BenchResult`.

    Parameters
    ----------
    result : BenchResult
        What :func:`gpulab.bench` returned.

    Returns
    -------
    BenchFigure
        Two log-log axes, time per call and effective GB/s against the
        number of items, one line per device; each measured GPU's
        device-to-device copy bandwidth is a dashed roofline, and the
        speedup of each GPU over the host is written at the largest size
        both ran.
    """
    figure = BenchFigure(figsize=(11, 4.2), layout="constrained")
    time_axes, bandwidth_axes = figure.subplots(1, 2)
    colours = _colours(result.devices())
    for device, colour in colours.items():
        rows = result.series(device)
        sizes = [row["size"] for row in rows]
        style = {"color": colour, "marker": "o", "markersize": 4, "label": _label(result, device)}
        time_axes.plot(sizes, [row["seconds"] for row in rows], **style)
        bandwidth_axes.plot(sizes, [row["gb_per_s"] for row in rows], **style)
    for device, bandwidth in result.copy_gb_per_s.items():
        bandwidth_axes.axhline(bandwidth, color=colours.get(device, GPU_COLOURS[0]), linestyle="--", linewidth=1,
                               label=f"{device} copy {bandwidth:,.0f} GB/s")
    _annotate_speedups(time_axes, result, colours)
    title = f"{result.primitive}({result.name}), {result.dtype}"
    for axes, ylabel, what in ((time_axes, "median time per call (s)", "time"),
                               (bandwidth_axes, "effective bandwidth (GB/s)", "effective bandwidth")):
        axes.set_xscale("log")
        axes.set_yscale("log")
        axes.set_xlabel("items")
        axes.set_ylabel(ylabel)
        axes.set_title(f"{title}: {what}", fontsize=10)
        axes.grid(True, which="both", alpha=0.25)
        axes.legend(fontsize=8)
        _readable_log_ticks(axes.xaxis, EngFormatter(sep=""))  # 1k, 10k, 1M
    _readable_log_ticks(time_axes.yaxis, EngFormatter(unit="s"))  # 60 µs, 1 ms
    _readable_log_ticks(bandwidth_axes.yaxis, FuncFormatter(lambda value, _: f"{value:,.4g}"))  # 0.1, 1, 4,000
    return figure


def _readable_log_ticks(axis, formatter) -> None:
    """Labels in plain units, as many as fit: at powers of ten over more than 2 decades, else at 1, 2 and 5
    times them, and at round steps on an axis shorter than a decade.

    Matplotlib's default labels the minor ticks of a short log axis in
    scientific notation (``6×10⁻⁵``, ``2×10⁻⁴``, ...), where they crowd.
    """
    low, high = axis.get_view_interval()
    decades = math.log10(high / low) if low > 0 and high > low else 0.0
    if decades < 1:  # between two powers of ten a log locator may find one tick or none
        axis.set_major_locator(MaxNLocator(nbins=5, steps=[1, 2, 2.5, 5, 10]))
    else:
        axis.set_major_locator(LogLocator(base=10, subs=(1.0,) if decades > 2 else (1.0, 2.0, 5.0), numticks=12))
    axis.set_major_formatter(formatter)
    axis.set_minor_formatter(NullFormatter())


def _annotate_speedups(axes, result, colours) -> None:
    host = {row["size"]: row["seconds"] for row in result.series("host")}
    for device in result.devices():
        if device == "host":
            continue
        shared = [row for row in result.series(device) if row["size"] in host]
        if not shared:
            continue
        last = shared[-1]
        size, fast, slow = last["size"], last["seconds"], host[last["size"]]
        axes.annotate("", xy=(size, slow), xytext=(size, fast),
                      arrowprops={"arrowstyle": "<->", "color": colours[device], "shrinkA": 4, "shrinkB": 4})
        speedup = f"{slow / fast:,.0f}" if slow / fast >= 100 else f"{slow / fast:.3g}"
        axes.annotate(f"{speedup}× host", (size, (fast * slow) ** 0.5), xytext=(-6, 0), textcoords="offset points",
                      ha="right", va="center", fontsize=9, color=colours[device])

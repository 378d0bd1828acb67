"""Plots of benchmark results: time and effective bandwidth against size.

Figures are made without pyplot, so they never join pyplot's global state
and show once, as a PNG, wherever IPython displays them.
"""

from __future__ import annotations

import io

from matplotlib.figure import Figure

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
    return figure


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

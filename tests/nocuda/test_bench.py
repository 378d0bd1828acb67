"""gpulab.bench: rows, bytes moved, JSON, the table and the plot (the host on CI, a GPU where there is one)."""

import json

import numpy as np
import pytest
from matplotlib.figure import Figure

import gpulab
from gpulab.bench import bench, random_array
from gpulab.display.table import Table
from gpulab.device import current


def add(a: gpulab.f32, b: gpulab.f32) -> gpulab.f32:
    return a + b


def multiply_add(x, y):
    return x * y + 1.0


def positive(x: gpulab.f32) -> bool:
    return x > 0


def test_reduce_rows_and_json():
    result = bench(add, "reduce", [1000, 10], devices=["host"], repeats=5, warmup=1)
    assert [(row["device"], row["primitive"], row["size"]) for row in result.rows] == [
        ("host", "reduce", 10), ("host", "reduce", 1000)]
    for row in result.rows:
        assert set(row) == {"device", "primitive", "size", "seconds", "bytes", "gb_per_s", "repeats"}
        assert row["bytes"] == 4 * row["size"]  # reduce reads every item once
        assert row["seconds"] > 0 and row["gb_per_s"] == pytest.approx(row["bytes"] / row["seconds"] / 1e9)
        assert 1 <= row["repeats"] <= 5
    document = json.loads(result.to_json())
    assert document["rows"] == result.rows and document["primitive"] == "reduce" and document["dtype"] == "float32"
    assert "<table" in result._repr_html_() and "reduce(add) on float32" in repr(result)


def test_bytes_moved_by_map_scan_and_filter():
    (mapped,) = bench(multiply_add, "map", [100], devices=["host"], dtype=np.float64, repeats=2).rows
    assert mapped["bytes"] == 3 * 8 * 100  # two inputs read, one output written
    (scanned,) = bench(add, "scan", [100], devices=["host"], repeats=2).rows
    assert scanned["bytes"] == 2 * 4 * 100
    (filtered,) = bench(positive, "filter", [1000], devices=["host"], repeats=2, seed=7).rows
    kept = int((random_array(np.float32, 1000, np.random.default_rng(7)) > 0).sum())
    assert filtered["bytes"] == 4 * 1000 + 4 * kept


def test_plot_has_a_line_per_backend_on_log_axes(tmp_path):
    figure = bench(add, "reduce", [10, 1000, 100000], devices=["host"], repeats=3).plot()
    assert isinstance(figure, Figure)
    time_axes, bandwidth_axes = figure.axes
    assert time_axes.get_xlabel() == bandwidth_axes.get_xlabel() == "items"
    assert time_axes.get_ylabel() == "median time per call (s)"
    assert bandwidth_axes.get_ylabel() == "effective bandwidth (GB/s)"
    for axes in (time_axes, bandwidth_axes):
        assert axes.get_xscale() == axes.get_yscale() == "log"
        (line,) = axes.get_lines()
        assert line.get_label() == "host" and list(line.get_xdata()) == [10, 1000, 100000]
    png = figure._repr_png_()
    assert png.startswith(b"\x89PNG")
    (tmp_path / "bench.png").write_bytes(png)


def _labels(axis, renderer) -> list:
    """The tick labels an axis shows (text, box in pixels), bottom to top or left to right."""
    low, high = sorted(axis.get_view_interval())
    ticks = sorted((tick for tick in axis.get_major_ticks()
                    if tick.label1.get_visible() and tick.label1.get_text() and low <= tick.get_loc() <= high),
                   key=lambda tick: tick.get_loc())
    return [(tick.label1.get_text(), tick.label1.get_window_extent(renderer)) for tick in ticks]


@pytest.mark.parametrize("sizes", [[1000, 10**4, 10**5, 10**6], [10**4, 2 * 10**4], [10, 10**3, 10**5, 10**7]],
                         ids=["four-decades", "short", "six-decades"])
def test_plot_tick_labels_are_plain_units_and_never_overlap(sizes):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    figure = bench(add, "map", sizes, devices=["host"], repeats=2).plot()
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    renderer = canvas.get_renderer()
    time_axes, bandwidth_axes = figure.axes
    for axes in figure.axes:
        for axis in (axes.xaxis, axes.yaxis):
            labels = _labels(axis, renderer)
            assert len(labels) >= 2, [text for text, _ in labels]
            assert not [(a[0], b[0]) for a, b in zip(labels, labels[1:]) if a[1].overlaps(b[1])], labels
            assert not any("10^" in text or "times" in text or "$" in text for text, _ in labels), labels
        assert all(text[-1] in "0kMG" for text, _ in _labels(axes.xaxis, renderer))  # 1k, 10k, 1M
    assert all(text.endswith("s") for text, _ in _labels(time_axes.yaxis, renderer))  # 60 µs, 1 ms
    assert all(text.replace(",", "").replace(".", "").isdigit() for text, _ in _labels(bandwidth_axes.yaxis, renderer))


@pytest.mark.parametrize("low, high", [(95e-6, 130e-6), (6e-5, 4e-4), (2e-5, 1e-3), (1e-6, 2.0)])
def test_a_time_axis_of_any_length_has_two_or_more_plain_labels(low, high):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.ticker import EngFormatter

    from gpulab.plot import _readable_log_ticks

    figure = Figure(figsize=(5, 4))
    axes = figure.subplots()
    axes.plot([1, 2], [low, high])
    axes.set_yscale("log")
    axes.set_ylim(low, high)
    _readable_log_ticks(axes.yaxis, EngFormatter(unit="s"))
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    labels = _labels(axes.yaxis, canvas.get_renderer())
    assert len(labels) >= 2 and all(text.endswith("s") for text, _ in labels), labels
    assert not [(a[0], b[0]) for a, b in zip(labels, labels[1:]) if a[1].overlaps(b[1])], labels


def test_random_arrays_of_every_kind():
    rng = np.random.default_rng(0)
    record = np.dtype([("x", np.float32), ("n", np.int16), ("flag", np.bool_)])
    for dtype in (np.float32, np.float16, np.int8, np.uint32, np.bool_, np.complex64, record):
        values = random_array(dtype, 50, rng)
        assert values.dtype == np.dtype(dtype) and values.shape == (50,)
    assert random_array(np.uint8, 1000, rng).max() <= 100 and random_array(np.int64, 1000, rng).min() >= -100


def test_table_text_and_escaped_html():
    table = Table(["name", "value"], [["<b>", 1], ["long name", 22]], "caption")
    assert repr(table).splitlines() == ["caption", "name       value", "---------  -----", "<b>            1",
                                        "long name     22"]
    assert "&lt;b&gt;" in table._repr_html_() and "<b>" not in table._repr_html_()


def test_unknown_primitive():
    with pytest.raises(ValueError, match="unknown primitive"):
        bench(add, "no_such_primitive", [10], devices=["host"])


@pytest.mark.gpu
def test_device_and_host_with_the_copy_roofline():
    result = bench(add, "reduce", [1e3, 1e6], repeats=5)
    gpu = current()
    assert [row["device"] for row in result.rows] == ["host", gpu, "host", gpu]
    assert result.copy_gb_per_s[gpu] > 10
    figure = result.plot()
    dashed = [line for line in figure.axes[1].get_lines() if line.get_linestyle() == "--"]
    assert len(dashed) == 1 and "copy" in dashed[0].get_label()
    assert any("× host" in text.get_text() for text in figure.axes[0].texts)

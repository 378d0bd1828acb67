"""The HTML build view (what nbviewer, VS Code and a notebook without the extension show) in Chromium.

Where its script runs (a trusted notebook, VS Code), the gaps between panes
are splitters: dragging one shares the width of the two panes beside it, as
the extension's splitters do.
"""

from __future__ import annotations

import contextlib

import pytest

import gpulab
from gpulab.compiler.bundle import bundle_of
from gpulab.display.html import render_html

pytestmark = pytest.mark.browser


def saxpy(x: gpulab.f32, y: gpulab.f32) -> gpulab.f32:
    return 2 * x + y


@contextlib.contextmanager
def html_view(browser, width: int):
    """A page of ``width`` px showing saxpy's HTML view; yields the page and its panes."""
    html = render_html(bundle_of(gpulab.compile("map", saxpy, target="sm_90")))
    page = browser.new_page(viewport={"width": width, "height": 900})
    try:
        page.set_content(f"<!doctype html><html><body>{html}</body></html>")
        yield page, page.locator(".gl-pane")
    finally:
        page.close()


def cursor_at(page, x: float, y: float) -> str:
    return page.evaluate("([x, y]) => getComputedStyle(document.elementFromPoint(x, y)).cursor", [x, y])


def test_dragging_the_gap_between_two_panes_resizes_them(browser):
    with html_view(browser, 1920) as (page, panes):
        before = [panes.nth(i).bounding_box() for i in range(panes.count())]
        assert len(before) == 4 and len({round(box["y"]) for box in before}) == 1  # one row at 1920 px
        python, cuda = before[0], before[1]
        gap = (python["x"] + python["width"] + cuda["x"]) / 2
        y = python["y"] + 100
        page.mouse.move(gap, y)
        assert cursor_at(page, gap, y) == "col-resize"
        page.mouse.down()
        page.mouse.move(gap + 200, y, steps=5)
        page.mouse.up()
        after = [panes.nth(i).bounding_box() for i in range(panes.count())]
        assert after[0]["width"] == pytest.approx(python["width"] + 200, abs=2)
        assert after[1]["width"] == pytest.approx(cuda["width"] - 200, abs=2)  # its neighbour makes room
        assert [round(a["width"]) for a in after[2:]] == [round(b["width"]) for b in before[2:]]
        # A drag inside a pane selects its text as ever: it resizes nothing.
        inside = after[2]["x"] + 50
        page.mouse.move(inside, y)
        page.mouse.down()
        page.mouse.move(inside + 150, y, steps=5)
        page.mouse.up()
        assert [panes.nth(i).bounding_box()["width"] for i in range(4)] == [box["width"] for box in after]


def test_the_gap_between_two_rows_is_no_splitter(browser):
    with html_view(browser, 1280) as (page, panes):
        boxes = [panes.nth(i).bounding_box() for i in range(panes.count())]
        assert len({round(box["y"]) for box in boxes}) == 2  # two panes a row at 1280 px
        x = boxes[0]["x"] + 50
        y = (boxes[0]["y"] + boxes[0]["height"] + boxes[2]["y"]) / 2
        page.mouse.move(x, y)
        assert cursor_at(page, x, y) != "col-resize"
        page.mouse.down()
        page.mouse.move(x + 150, y, steps=5)
        page.mouse.up()
        assert [panes.nth(i).bounding_box() for i in range(4)] == boxes

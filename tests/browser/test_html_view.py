"""The HTML build view (what nbviewer, VS Code and a notebook without the extension show) in Chromium.

Where its script runs (a trusted notebook, VS Code), the gaps between panes
are splitters: dragging one shares the width of the two panes beside it, as
the extension's splitters do.

The why-is-it-slow test checks the cost bars, the live-register strip, the
header's diagnostic (hovering it lights its line) and the guide's opcode
lines, and takes screenshots in the light and dark scheme at 1280 and 1920
px, into its tmp folder; with ``GPULAB_UPDATE_SCREENSHOT=1`` into
``docs/img/why-html-{width}-{theme}.png`` (the README shows them).
"""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path

import pytest

import gpulab
from gpulab.compiler.bundle import bundle_of
from gpulab.display.html import render_html

pytestmark = pytest.mark.browser

IMAGES = Path(__file__).resolve().parents[2] / "docs" / "img"


def saxpy(x: gpulab.f32, y: gpulab.f32) -> gpulab.f32:
    return 2 * x + y


def promoted(a: gpulab.f32, b: gpulab.f32) -> gpulab.f32:
    return a * 0.75 + b


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


def text_box(locator) -> dict:
    """Where the text of ``locator`` is drawn (its element may be wider: a line is as wide as the longest)."""
    return locator.evaluate("""e => { const r = document.createRange(); r.selectNodeContents(e);
        const b = r.getBoundingClientRect(); return {x: b.x, y: b.y, width: b.width, height: b.height}; }""")


def cursor_at(page, x: float, y: float) -> str:
    return page.evaluate("([x, y]) => getComputedStyle(document.elementFromPoint(x, y)).cursor", [x, y])


def test_dragging_the_gap_between_two_panes_resizes_them(browser):
    with html_view(browser, 1920) as (page, panes):
        before = [panes.nth(i).bounding_box() for i in range(panes.count())]
        assert len(before) == 4 and len({round(box["y"]) for box in before}) == 1  # one row at 1920 px
        python, cuda = before[0], before[1]
        gap = (python["x"] + python["width"] + cuda["x"]) / 2
        y = python["y"] + 10
        page.mouse.move(gap, y)
        assert cursor_at(page, gap, y) == "col-resize"
        page.mouse.down()
        page.mouse.move(gap + 200, y, steps=5)
        page.mouse.up()
        after = [panes.nth(i).bounding_box() for i in range(panes.count())]
        assert after[0]["width"] == pytest.approx(python["width"] + 200, abs=2)
        assert after[1]["width"] == pytest.approx(cuda["width"] - 200, abs=2)  # its neighbour makes room
        assert [round(a["width"]) for a in after[2:]] == [round(b["width"]) for b in before[2:]]
        # Below the short Python pane the gap is still a splitter: it is the row's.
        low = after[1]["y"] + after[1]["height"] - 20
        gap = (after[0]["x"] + after[0]["width"] + after[1]["x"]) / 2
        assert low > after[0]["y"] + after[0]["height"] and cursor_at(page, gap, low) == "col-resize"
        # A drag inside a pane selects its text as ever: it resizes nothing.
        inside = after[2]["x"] + 50
        page.mouse.move(inside, y + 60)
        page.mouse.down()
        page.mouse.move(inside + 150, y + 60, steps=5)
        page.mouse.up()
        assert [panes.nth(i).bounding_box()["width"] for i in range(4)] == [box["width"] for box in after]


def test_the_gap_between_two_rows_is_no_splitter(browser):
    with html_view(browser, 1280) as (page, panes):
        for pane in ("cuda", "ptx"):  # the first view shows Python and SASS: all four are two a row
            page.locator(f"label[for$='-{pane}']").click()
        boxes = [panes.nth(i).bounding_box() for i in range(panes.count())]
        assert len({round(box["y"]) for box in boxes}) == 2  # two panes a row at 1280 px
        x = boxes[0]["x"] + 50
        y = (max(boxes[0]["y"] + boxes[0]["height"], boxes[1]["y"] + boxes[1]["height"]) + boxes[2]["y"]) / 2
        page.mouse.move(x, y)
        assert cursor_at(page, x, y) != "col-resize"
        page.mouse.down()
        page.mouse.move(x + 150, y, steps=5)
        page.mouse.up()
        assert [panes.nth(i).bounding_box() for i in range(4)] == boxes


@pytest.mark.parametrize("width", [900, 1280])
def test_the_first_view_is_python_and_sass_side_by_side(browser, width):
    """In a column of GitHub's or nbviewer's width: Python and SASS in one row, the others a click away;
    a click on the return line scrolls its SASS lines into view, whole."""
    with html_view(browser, width) as (page, panes):
        shown = page.locator(".gl-pane:visible")
        assert shown.evaluate_all("ps => ps.map(p => p.dataset.pane)") == ["python", "sass"]
        boxes = [shown.nth(i).bounding_box() for i in range(2)]
        assert round(boxes[0]["y"]) == round(boxes[1]["y"]) and min(b["width"] for b in boxes) >= 300, boxes
        python = page.locator(".gl-pane[data-pane='python']")
        assert python.bounding_box()["height"] < 120  # two lines and a title, not a pane's full height
        python.locator(".gl-l", has_text="return").click()
        lit = page.locator(".gl-pane[data-pane='sass'] .gl-l.gl-hot").first
        scroller = page.locator(".gl-pane[data-pane='sass'] .gl-sc").bounding_box()
        text = text_box(lit.locator(".gl-c"))
        assert scroller["y"] <= text["y"] and text["y"] + text["height"] <= scroller["y"] + scroller["height"]
        assert text["x"] + text["width"] <= scroller["x"] + scroller["width"] + 1, (text, scroller)
        page.locator("label[for$='-cuda']").click()  # one click away
        assert shown.evaluate_all("ps => ps.map(p => p.dataset.pane)") == ["python", "cuda", "sass"]


def test_why_is_it_slow_in_the_html_view(browser, tmp_path):
    from playwright.sync_api import expect

    html = render_html(bundle_of(gpulab.compile("map", promoted, target="sm_90")))
    folder = IMAGES if os.environ.get("GPULAB_UPDATE_SCREENSHOT") == "1" else tmp_path
    for theme in ("light", "dark"):
        for width in (1280, 1920):
            page = browser.new_page(viewport={"width": width, "height": 900}, color_scheme=theme,
                                    device_scale_factor=1)
            try:
                page.set_content(f"<!doctype html><html><body>{html}</body></html>")
                # A cost bar on the def line and on the return line, which names its FP64 work.
                python = page.locator(".gl-pane[data-pane='python']")
                expect(python.locator(".gl-g[title]")).to_have_count(2)
                ret = python.locator(".gl-l", has_text="return")
                assert "FP64" in (ret.locator(".gl-g").get_attribute("title") or "")
                # The SASS pane's strip has one peak, named in the pane's title.
                sass = page.locator(".gl-pane[data-pane='sass']")
                expect(sass.locator(".gl-pt")).to_contain_text(re.compile(r"peak \d+ live at line \d+"))
                peak = sass.locator(".gl-p.gl-peak")
                expect(peak).to_have_count(1)
                assert "registers live (the peak)" in (peak.get_attribute("title") or "")
                # A SASS opcode carries the guide's line.
                dfma = sass.locator(".gl-op", has_text="DFMA").first
                assert (dfma.get_attribute("title") or "").startswith("DFMA (FP64): ")
                # The hint is written once; the script titles a later opcode of the same hint on hover.
                number = dfma.get_attribute("data-h")
                repeated = sass.locator(f'.gl-op[data-h="{number}"]').nth(1)
                assert repeated.get_attribute("title") is None
                repeated.scroll_into_view_if_needed()
                repeated.hover()
                expect(repeated).to_have_attribute("title", dfma.get_attribute("title"))
                # The header: registers and occupancy, and the float64 diagnostic with its fix; hovering it
                # lights the return line.
                expect(page.locator(".gl-h")).to_contain_text("% occupancy")
                diagnostic = page.locator(".gl-dw", has_text="computes in float64")
                expect(diagnostic).to_contain_text("Fix: write f32(0.75)")
                peak.scroll_into_view_if_needed()  # the SASS pane shows the peak in the screenshot
                page.evaluate("() => window.scrollTo(0, 0)")
                diagnostic.hover()
                expect(ret).to_have_class(re.compile(r"(^|\s)gl-hot(\s|$)"))
                path = folder / f"why-html-{width}-{theme}.png"
                page.locator(".gpulab-build").screenshot(path=str(path), animations="disabled")
                print(f"screenshot: {path}")
            finally:
                page.close()

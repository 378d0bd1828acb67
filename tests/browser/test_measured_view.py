"""The measured column of the HTML view in Chromium, from a profile recorded on an H100 (the golden measured
bundle, extension/test/golden-measured-bundle.json, made by tests/golden/golden_measured_bundle.py): no GPU needed.

Beside each Python line that has samples, a bar of segments coloured by stall reason, as wide as its share of
the line with the most, its title naming the top reason; a mark per sampled SASS instruction; the verdict in the
header, lighting its line on hover. Screenshots in the light and dark scheme at 1280 and 1920 px go to the test's
tmp folder; with ``GPULAB_UPDATE_SCREENSHOT=1`` to ``docs/img/measured-html-{width}-{theme}.png``.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from gpulab.display.html import render_html

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "extension" / "test" / "golden-measured-bundle.json"
IMAGES = ROOT / "docs" / "img"


def test_the_measured_column_in_the_html_view(browser, tmp_path):
    from playwright.sync_api import expect

    bundle = json.loads(GOLDEN.read_text())
    measured = bundle["measured"]
    rows = [row for row in measured["python"] if row["samples"]]
    top = max(rows, key=lambda row: row["samples"])
    top_label = next(r["label"] for r in measured["reasons"] if r["id"] == max(top["reasons"], key=top["reasons"].get))
    html = render_html(bundle)
    folder = IMAGES if os.environ.get("GPULAB_UPDATE_SCREENSHOT") == "1" else tmp_path
    for theme in ("light", "dark"):
        for width in (1280, 1920):
            page = browser.new_page(viewport={"width": width, "height": 900}, color_scheme=theme,
                                    device_scale_factor=1)
            try:
                page.set_content(f"<!doctype html><html><body>{html}</body></html>")
                python = page.locator(".gl-pane[data-pane='python']")
                bars = python.locator(".gl-m[title]")
                expect(bars).to_have_count(len(rows))
                line = python.locator(".gl-l").nth(int(top["key"][3:]) - 1)
                bar = line.locator(".gl-m")
                assert f"top: {top_label}" in (bar.get_attribute("title") or "")
                widest = bar.locator("span").bounding_box()["width"]
                assert all(b.locator("span").bounding_box()["width"] <= widest + 0.5 for b in bars.all())
                segments = bar.locator("i")
                expect(segments).to_have_count(len(top["reasons"]))
                colour = segments.first.evaluate("e => getComputedStyle(e).backgroundColor")
                assert colour not in ("rgba(0, 0, 0, 0)", "transparent")
                # Beside the estimated cost bar, on the same line.
                assert line.locator(".gl-g").bounding_box()["x"] < bar.bounding_box()["x"]
                sass = page.locator(".gl-pane[data-pane='sass']")
                expect(sass.locator(".gl-ms[title]")).to_have_count(len(measured["sass"]))
                verdict = page.locator(".gl-verdict")
                expect(verdict).to_contain_text(bundle["header"]["measured"]["verdict"])
                expect(page.locator(".gl-legend")).to_contain_text(top_label)
                if measured["verdict_key"]:
                    verdict.hover()
                    expect(python.locator(".gl-l").nth(int(measured["verdict_key"][3:]) - 1)).to_have_class(
                        re.compile(r"(^|\s)gl-hot(\s|$)"))
                path = folder / f"measured-html-{width}-{theme}.png"
                page.locator(".gpulab-build").screenshot(path=str(path), animations="disabled")
                print(f"screenshot: {path}")
            finally:
                page.close()


def test_the_measured_column_in_jupyterlab(browser, lab_server, tmp_path):
    """A recorded profile shown in JupyterLab (``gpulab.profiler.load(...)`` as a cell's value; a loaded build has
    no spec to rebuild from, so its view has no build bar): the view carries the measured column and the verdict, at 1280 and 1920 px in the light and dark theme; with
    ``GPULAB_UPDATE_SCREENSHOT=1`` into ``docs/img/measured-lab-{width}-{theme}.png``."""
    from playwright.sync_api import expect
    from test_live_view import OUTPUT_MS, THEMES, UI_MS, WIDTHS, open_and_run, write_notebook

    expect.set_options(timeout=UI_MS)
    profile = ROOT / "tests" / "golden" / "profiles" / "map-exp64"
    name = write_notebook(lab_server.root, "measured.ipynb",
                          ["import gpulab", f"gpulab.profiler.load({str(profile)!r})"])
    lab_server.start_kernel(name)
    bundle = json.loads(GOLDEN.read_text())
    measured = bundle["measured"]
    folder = IMAGES if os.environ.get("GPULAB_UPDATE_SCREENSHOT") == "1" else tmp_path
    context = browser.new_context(viewport={"width": 1920, "height": 1080}, device_scale_factor=1)
    page = context.new_page()
    try:
        open_and_run(page, lab_server, name, "lab/tree")
        view = page.locator(".jp-OutputArea-output .gpulab-build").first
        python = view.locator(".gpulab-pane[data-pane='python']")
        expect(python.locator(".gpulab-measured[title]").first).to_be_visible(timeout=OUTPUT_MS)
        expect(python.locator(".gpulab-measured[title]")).to_have_count(
            len([row for row in measured["python"] if row["samples"]]))
        verdict = view.locator(".gpulab-verdict")
        expect(verdict).to_contain_text(bundle["header"]["measured"]["verdict"])
        row = python.locator(".gpulab-line").nth(int(measured["verdict_key"][3:]) - 1)
        assert "top: long scoreboard" in (row.locator(".gpulab-measured").get_attribute("title") or "")
        for theme, label in THEMES.items():
            page.evaluate("name => window.jupyterapp.commands.execute('apputils:change-theme', {theme: name})", label)
            expect(page.locator(f"body[data-jp-theme-light='{str(theme == 'light').lower()}']")).to_have_count(1)
            for width, height in WIDTHS.items():
                page.set_viewport_size({"width": width, "height": height})
                page.wait_for_timeout(300)
                view.scroll_into_view_if_needed()
                verdict.hover()  # lights the verdict's line
                expect(row).to_have_class(re.compile(r"(^|\s)gpulab-active(\s|$)"))
                path = folder / f"measured-lab-{width}-{theme}.png"
                page.screenshot(path=str(path), animations="disabled")
                print(f"screenshot: {path}")
                page.mouse.move(0, 0)
        page.evaluate("() => window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Light'})")
    except BaseException:
        page.screenshot(path=str(tmp_path / "failure.png"), full_page=True)
        print(f"failure screenshot: {tmp_path / 'failure.png'}")
        raise
    finally:
        context.close()

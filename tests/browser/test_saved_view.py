"""A build's output saved by JupyterLab still shows the view when reopened, and nbconvert's HTML shows the fallback.

JupyterLab runs ``%%gpukernel reduce`` (the live view) and saves the notebook. Reopened while its
kernel still runs, the output is the live view again (the kernel holds its model); reopened after
that kernel is shut down (the lab starts a new one, which holds no model), it is the view drawn
from the saved build bundle, without the build bar, its lines still linked. Either way one view.
``jupyter nbconvert --to html`` of the saved file shows the HTML fallback, in Chromium.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import nbformat
import pytest

from test_live_view import OUTPUT_MS, PAGE_LOAD_MS, UI_MS, open_and_run, write_notebook

pytestmark = pytest.mark.browser

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


def _reopen(page, lab_server, name: str):
    from playwright.sync_api import expect

    page.goto(f"{lab_server.url}/lab/tree/{name}?reset&token={lab_server.token}", timeout=PAGE_LOAD_MS)
    expect(page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").first).to_be_attached(
        timeout=PAGE_LOAD_MS)
    return page.locator(".gpulab-output-switch").first  # the output's renderer (plugin.ts): live or saved


def _linked(view) -> None:
    from playwright.sync_api import expect

    view.locator(".gpulab-pane[data-pane='python'] .gpulab-line", has_text="return a + b").hover()
    expect(view.locator(".gpulab-pane[data-pane='sass'] .gpulab-line.gpulab-linked").first).to_be_visible()


def test_a_saved_output_shows_the_view_when_reopened_and_in_nbconvert_html(browser, lab_server, tmp_path):
    from playwright.sync_api import expect

    expect.set_options(timeout=UI_MS)
    name = write_notebook(lab_server.root, "saved.ipynb")
    lab_server.start_kernel(name)
    context = browser.new_context(viewport={"width": 1600, "height": 1000}, device_scale_factor=1)
    page = context.new_page()
    try:
        open_and_run(page, lab_server, name, "lab/tree")
        output = page.locator(".gpulab-output-switch").first
        expect(output.locator(".gpulab-controls")).to_be_visible(timeout=OUTPUT_MS)
        expect(output).to_have_attribute("data-view", "live")
        expect(page.locator(".jp-CodeCell .jp-InputPrompt", has_text="[*]")).to_have_count(0, timeout=OUTPUT_MS)
        page.keyboard.press("Control+s")
        expect(page.locator(".jp-mod-dirty")).to_have_count(0)
        saved = nbformat.read(lab_server.root / name, as_version=4)
        data = next(o.data for c in saved.cells for o in c.outputs if "application/vnd.gpulab.build+json" in o.get("data", {}))
        assert WIDGET_MIME in data and "text/html" in data  # all of them, each frontend picks one

        # Reopened while the kernel that made it still runs: the live view.
        output = _reopen(page, lab_server, name)
        expect(output).to_have_attribute("data-view", "live", timeout=OUTPUT_MS)
        expect(output.locator(".gpulab-controls")).to_be_visible()
        expect(output.locator(".gpulab-build")).to_have_count(1)
        _linked(output.locator(".gpulab-build"))

        # Its kernel shut down, reopened (the lab starts a new kernel): the saved view.
        sessions = json.loads(lab_server.api("GET", "/api/sessions"))
        for session in sessions:
            lab_server.api("DELETE", f"/api/sessions/{session['id']}", timeout=30)
        output = _reopen(page, lab_server, name)
        expect(output).to_have_attribute("data-view", "saved", timeout=OUTPUT_MS)
        expect(output.locator(".gpulab-build")).to_have_count(1)
        expect(output.locator(".gpulab-controls")).to_have_count(0)
        expect(page.locator("text=Error displaying widget")).to_have_count(0)
        _linked(output.locator(".gpulab-build"))
    except BaseException:
        page.screenshot(path=str(tmp_path / "failure.png"), full_page=True)
        raise
    finally:
        context.close()

    # nbconvert's HTML: the fallback, its panes coloured and linked by its script.
    converted = subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "html", "--output-dir",
                                str(tmp_path), str(lab_server.root / name)], capture_output=True, text=True, timeout=300)
    assert converted.returncode == 0, converted.stderr[-2000:]
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    try:
        page.goto((tmp_path / "saved.html").as_uri())
        views = page.locator(".gpulab-build")
        expect(views).to_have_count(1)
        expect(views.locator(".gl-pane[data-pane='sass']")).to_be_visible()
        ret = views.locator(".gl-pane[data-pane='python'] .gl-l", has_text="return")
        ret.hover()
        expect(views.locator(".gl-pane[data-pane='sass'] .gl-l.gl-hot").first).to_be_attached()
        assert not re.search(r"Error displaying widget|model not found", page.content())
    finally:
        page.close()

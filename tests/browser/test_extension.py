"""The gpulab JupyterLab extension in a real browser: a notebook runs ``%%gpukernel`` and shows its build view.

JupyterLab (this venv's) serves a notebook; headless Chromium runs all its
cells. No GPU is needed: ``--target sm_90`` compiles for an explicit target.
The test checks the four panes, the hover linking Python -> SASS, and that
user text (a ``<script>`` in the function) is shown as text, never run.

It saves a screenshot of the output area into the test's tmp folder; with
``GPULAB_UPDATE_SCREENSHOT=1`` it writes ``docs/img/extension.png`` (used by
the README) instead. It is not written on every run, since it changes on
every run (the timings in its header).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import nbformat
import pytest

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]
SCREENSHOT = REPO / "docs" / "img" / "extension.png"
SCRIPT = '<script>alert("x")</script>'
CELLS = [
    "import numpy as np",
    "%load_ext gpulab",
    "%%gpukernel reduce --target sm_90\n"
    "def add(a: np.float32, b: np.float32) -> np.float32:\n"
    f"    # {SCRIPT}\n"
    "    return a + b",
]
PANES = ["python", "cuda", "ptx", "sass"]
# Time limits (ms) of each wait in the page.
PAGE_LOAD_MS = 60_000  # JupyterLab loads, the notebook opens and its kernel is idle
OUTPUT_MS = 60_000  # the cells run: kernel start, numba import, the build
UI_MS = 10_000  # a click, a hover, a class change
STARTED_MS = 15_000  # Run All Cells: the first cell is queued or has run


def _notebook(root: Path) -> str:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in CELLS]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    name = "gpulab_view.ipynb"
    nbformat.write(nb, root / name)
    return name


def _class(name: str) -> re.Pattern:
    """Matches a class attribute that holds class ``name``."""
    return re.compile(rf"(^|\s){re.escape(name)}(\s|$)")


def _outputs_text(page) -> str:
    return "\n---\n".join(page.locator(".jp-OutputArea").all_inner_texts())


def _run_all_cells(page, notebook, attempts: int = 3) -> None:
    """Run > Run All Cells, again if no cell started: a click in the moment the kernel connects can be lost."""
    from playwright.sync_api import expect

    first_prompt = notebook.locator(".jp-Cell .jp-InputPrompt").first
    for attempt in range(attempts):
        page.get_by_role("menuitem", name="Run", exact=True).click()
        page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
        try:
            expect(first_prompt).to_have_text(re.compile(r"\[(\*|\d+)\]"), timeout=STARTED_MS)
            return
        except AssertionError:
            if attempt == attempts - 1:
                raise


def test_build_view_in_jupyterlab(browser, lab_server, tmp_path):
    from playwright.sync_api import expect

    expect.set_options(timeout=UI_MS)
    name = _notebook(lab_server.root)
    context = browser.new_context(viewport={"width": 1920, "height": 1080}, device_scale_factor=1)
    context.set_default_timeout(UI_MS)
    page = context.new_page()
    dialogs: list[str] = []

    def on_dialog(dialog):
        dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    page.on("dialog", on_dialog)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.goto(f"{lab_server.url}/lab/tree/{name}?token={lab_server.token}", timeout=PAGE_LOAD_MS)
        notebook = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")
        expect(notebook.locator(".jp-Cell")).to_have_count(len(CELLS), timeout=PAGE_LOAD_MS)
        expect(notebook.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']")).to_have_count(
            1, timeout=PAGE_LOAD_MS)

        # More room for the panes: fold the file browser away.
        page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab.lm-mod-current").click()
        expect(page.locator("#jp-left-stack")).to_be_hidden()

        _run_all_cells(page, notebook)

        view = notebook.locator(".gpulab-build")
        try:
            expect(view).to_have_count(1, timeout=OUTPUT_MS)
        except AssertionError as exc:
            raise AssertionError(f"no build view; outputs:\n{_outputs_text(page)}\n"
                                 f"server log:\n{lab_server.log_tail()}") from exc

        # The four panes render, in order, each with lines.
        for pane in PANES:
            expect(view.locator(f".gpulab-pane[data-pane='{pane}']")).to_be_visible()
            expect(view.locator(f".gpulab-pane[data-pane='{pane}'] .gpulab-line").first).to_be_visible()
        assert view.locator(".gpulab-pane").evaluate_all("ps => ps.map(p => p.dataset.pane)") == PANES
        stderr = notebook.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
        assert stderr.count() == 0, _outputs_text(page)

        # The <script> of the user's comment is text in the Python pane, and nothing ran it.
        python = view.locator(".gpulab-pane[data-pane='python']")
        script_line = python.locator(".gpulab-line", has_text=SCRIPT)
        expect(script_line).to_have_count(1)
        expect(script_line).to_be_visible()
        assert SCRIPT in python.inner_text()
        injected = page.evaluate(
            """() => [...document.querySelectorAll('script')].filter(s => s.textContent.includes('alert("x")'))
                   .length""")
        assert injected == 0, "a <script> element holding the user's text is in the DOM"
        assert view.locator("script").count() == 0

        # Hovering the body line `return a + b` highlights its SASS instructions.
        line = python.locator(".gpulab-line", has_text="return a + b")
        expect(line).to_have_count(1)
        line.scroll_into_view_if_needed()
        line.hover()
        expect(line).to_have_class(_class("gpulab-active"))
        expect(view).to_have_class(_class("gpulab-selecting"))
        own_keys = (line.get_attribute("data-keys") or "").split()
        key = own_keys[0] if own_keys else ""
        assert key.startswith("py:"), own_keys
        assert any(k.startswith("cu:") for k in own_keys), "a Python line also names the CUDA lines it was inlined at"
        linked = view.locator(".gpulab-pane[data-pane='sass'] .gpulab-line.gpulab-linked")
        expect(linked.first).to_be_visible()
        linked_keys = linked.evaluate_all("ls => ls.map(l => l.dataset.keys.split(' '))")
        assert any(key in keys for keys in linked_keys), (key, linked_keys[:5])
        assert all(set(own_keys) & set(keys) for keys in linked_keys), (own_keys, linked_keys[:5])
        expect(view.locator(".gpulab-pane[data-pane='cuda'] .gpulab-line.gpulab-linked").first).to_be_visible()

        # Pin the first of those SASS lines (a click): the Python line and its CUDA C++ and PTX
        # lines light up, and stay lit for the screenshot whatever the mouse does.
        first = linked.first.get_attribute("data-line")
        sass_line = view.locator(f".gpulab-pane[data-pane='sass'] .gpulab-line[data-line='{first}']")
        sass_line.click()
        expect(view).to_have_class(_class("gpulab-has-pin"))
        expect(sass_line).to_have_class(_class("gpulab-pinned"))
        expect(line).to_have_class(_class("gpulab-linked"))
        for pane in ("cuda", "ptx"):
            expect(view.locator(f".gpulab-pane[data-pane='{pane}'] .gpulab-line.gpulab-linked").first).to_be_visible()
        page.mouse.move(0, 0)

        output = notebook.locator(".jp-OutputArea-output:has(.gpulab-build)")
        output.scroll_into_view_if_needed()
        box = output.bounding_box()
        assert box and box["height"] > 200, box
        viewport = page.viewport_size
        pad = 6
        clip = {"x": max(0, box["x"] - pad), "y": max(0, box["y"] - pad)}
        clip["width"] = min(viewport["width"], box["x"] + box["width"] + pad) - clip["x"]
        clip["height"] = min(viewport["height"], box["y"] + box["height"] + pad) - clip["y"]
        target = SCREENSHOT if os.environ.get("GPULAB_UPDATE_SCREENSHOT") == "1" else tmp_path / "extension.png"
        target.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(target), clip=clip, animations="disabled")
        print(f"screenshot: {target}")

        assert dialogs == [], f"dialogs fired: {dialogs}"
        assert not any('alert("x")' in e for e in errors), errors
    except BaseException:
        try:
            page.screenshot(path=str(tmp_path / "failure.png"), full_page=True, timeout=UI_MS)
            print(f"failure screenshot: {tmp_path / 'failure.png'}")
        except Exception:
            pass
        raise
    finally:
        context.close()

"""The live view (the anywidget of gpulab/notebook/live.py) in JupyterLab 4 and Notebook 7, in headless Chromium.

A notebook runs ``%%gpukernel reduce``; its output is the live view (the build bar shows: only the
widget has a kernel to ask). At 1280 and 1920 px, in the light and the dark theme: hovering the
return line lights its SASS lines, a pane toggle shows a pane, a splitter drag shares the width of
the two panes beside it. Then the build bar rebuilds for another target and back (the second from
the build cache), with LTO off, and opens the SASS diff. Screenshots go to the test's tmp folder,
with ``GPULAB_UPDATE_SCREENSHOT=1`` to ``docs/img/live-{frontend}-{width}-{theme}.png``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import nbformat
import pytest

pytestmark = pytest.mark.browser

IMAGES = Path(__file__).resolve().parents[2] / "docs" / "img"
CELLS = ["import gpulab\n%load_ext gpulab",
         "%%gpukernel reduce --target sm_90\ndef add(a: gpulab.f32, b: gpulab.f32) -> gpulab.f32:\n    return a + b"]
PAGE_LOAD_MS = 90_000
OUTPUT_MS = 180_000  # the kernel starts, gpulab imports, the reduce builds (on 2 busy cores)
REBUILD_MS = 180_000
UI_MS = 10_000
WIDTHS = {1280: 800, 1920: 1080}
THEMES = {"light": "JupyterLab Light", "dark": "JupyterLab Dark"}


def _class(name: str) -> re.Pattern:
    return re.compile(rf"(^|\s){re.escape(name)}(\s|$)")


def write_notebook(root: Path, name: str, cells=CELLS) -> str:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nbformat.write(nb, root / name)
    return name


def open_and_run(page, server, name: str, path: str):
    """Open notebook ``name`` at ``path`` (``lab/tree`` or ``notebooks``) and run all its cells."""
    from playwright.sync_api import expect

    page.goto(f"{server.url}/{path}/{name}?reset&token={server.token}", timeout=PAGE_LOAD_MS)
    expect(page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").first).to_be_attached(
        timeout=PAGE_LOAD_MS)
    try:  # the lab at times asks for the kernel the notebook names, though its session is made
        page.locator(".jp-Dialog").get_by_role("button", name="Select").click(timeout=3_000)
    except Exception:
        pass
    page.wait_for_function("() => window.jupyterapp", timeout=PAGE_LOAD_MS)
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")


def check_view(page, view, width: int, body: str = "return a + b") -> None:
    """Hover linking (from the Python line holding ``body``), a pane toggle and a splitter drag in ``view``."""
    from playwright.sync_api import expect

    python = view.locator(".gpulab-pane[data-pane='python']")
    line = python.locator(".gpulab-line", has_text=body)
    line.hover()
    expect(line).to_have_class(_class("gpulab-active"))
    lit = view.locator(".gpulab-pane[data-pane='sass'] .gpulab-line.gpulab-linked").first
    expect(lit).to_be_visible()
    page.mouse.move(0, 0)
    # A pane toggle: CUDA C++ shows, then hides again.
    toggle = view.locator(".gpulab-pane-toggle[data-pane='cuda']")
    cuda = view.locator(".gpulab-pane[data-pane='cuda']")
    shown = toggle.get_attribute("aria-pressed") == "true"
    toggle.click()
    expect(cuda).to_be_visible() if not shown else expect(cuda).to_be_hidden()
    toggle.click()
    expect(cuda).to_be_visible() if shown else expect(cuda).to_be_hidden()
    # A splitter drag: the pane left of it grows by what the pane right of it gives.
    splitter = view.locator(".gpulab-splitter:visible").first
    panes = view.locator(".gpulab-pane:visible")
    before = [panes.nth(0).bounding_box()["width"], panes.nth(1).bounding_box()["width"]]
    box = splitter.bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + 20
    for dx in (80, -80):  # and back: the next check starts from the same widths
        page.mouse.move(x, y)
        page.mouse.down()
        page.mouse.move(x + dx, y, steps=4)
        page.mouse.up()
        after = [panes.nth(0).bounding_box()["width"], panes.nth(1).bounding_box()["width"]]
        assert after[0] == pytest.approx(before[0] + dx, abs=3) and after[1] == pytest.approx(before[1] - dx, abs=3), (
            width, before, after)
        before, x = after, x + dx


def shoot_and_check(page, view, folder: Path, name: str, body: str = "return a + b") -> None:
    """At each width: a screenshot of the page (the return line hovered) as ``{name}-{width}``, then :func:`check_view`."""
    for width, height in WIDTHS.items():
        page.set_viewport_size({"width": width, "height": height})
        page.wait_for_timeout(300)
        view.scroll_into_view_if_needed()
        view.locator(".gpulab-pane[data-pane='python'] .gpulab-line", has_text=body).hover()
        path = folder / f"{name.format(width=width)}.png"
        page.screenshot(path=str(path), animations="disabled")
        print(f"screenshot: {path}")
        page.mouse.move(0, 0)
        check_view(page, view, width, body)


def check_rebuilds(page, view) -> None:
    """The build bar rebuilds for sm_80 and back, with LTO off and on, and opens the SASS diff."""
    from playwright.sync_api import expect

    target = view.locator("[data-field='target']")
    view.locator("select.gpulab-target").select_option("sm_80")
    expect(target).to_have_text("sm_80", timeout=REBUILD_MS)
    expect(view.locator(".gpulab-status")).to_have_text("")
    view.locator("select.gpulab-target").select_option("sm_90")  # from the build cache
    expect(target).to_have_text("sm_90", timeout=UI_MS * 3)
    lto = view.locator("button.gpulab-option[data-field='lto']")
    expect(lto).to_have_attribute("aria-pressed", "true")
    lto.click()
    expect(view).to_have_attribute("data-lto", "off", timeout=REBUILD_MS)
    expect(view.locator("[data-field='sass_calls']")).not_to_have_text(re.compile(r"^0 CALL"))
    view.locator("button.gpulab-option[data-field='lto']").click()
    expect(view).to_have_attribute("data-lto", "on", timeout=UI_MS * 3)
    view.locator("select.gpulab-diff-picker").select_option("fma")
    expect(view.locator(".gpulab-diff-pane .gpulab-pane-title")).to_have_text("fma vs no fma", timeout=REBUILD_MS)
    expect(view.locator(".gpulab-diff-text")).to_contain_text("SASS instructions")
    view.locator(".gpulab-diff-close").click()
    expect(view.locator(".gpulab-diff-pane")).to_have_count(0, timeout=UI_MS * 3)


@pytest.mark.parametrize("frontend", ["lab", "notebook"])
def test_the_live_view(browser, request, tmp_path, frontend):
    from playwright.sync_api import expect

    expect.set_options(timeout=UI_MS)
    server = request.getfixturevalue("lab_server" if frontend == "lab" else "notebook_server")
    name = write_notebook(server.root, f"live_{frontend}.ipynb")
    server.start_kernel(name)
    folder = IMAGES if os.environ.get("GPULAB_UPDATE_SCREENSHOT") == "1" else tmp_path
    errors: list[str] = []
    context = browser.new_context(viewport={"width": 1920, "height": 1080}, device_scale_factor=1)
    page = context.new_page()
    page.on("pageerror", lambda exc: errors.append(f"{exc}\n{exc.stack}"))
    try:
        open_and_run(page, server, name, "lab/tree" if frontend == "lab" else "notebooks")
        output = page.locator(".jp-OutputArea-output:has(.gpulab-build)").first
        view = output.locator(".gpulab-build")
        expect(view.locator(".gpulab-controls")).to_be_visible(timeout=OUTPUT_MS)  # the live view: it has a kernel
        expect(output.locator(".gpulab-build")).to_have_count(1)  # one view, not the widget and the saved one
        check_rebuilds(page, view)
        for theme, label in THEMES.items():
            page.evaluate("name => window.jupyterapp.commands.execute('apputils:change-theme', {theme: name})", label)
            expect(page.locator(f"body[data-jp-theme-light='{str(theme == 'light').lower()}']")).to_have_count(1)
            shoot_and_check(page, view, folder, f"live-{frontend}-{{width}}-{theme}")
        page.evaluate("() => window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Light'})")
    except BaseException:
        page.screenshot(path=str(tmp_path / "failure.png"), full_page=True)
        print(f"failure screenshot: {tmp_path / 'failure.png'}")
        raise
    finally:
        context.close()
    # Notebook 7 (7.6.5) raises this in its own shortcut settings (notebook_core) as a page loads, with the
    # extension of before the live view too: not gpulab's code.
    errors = [e for e in errors if not (frontend == "notebook" and "reading 'schema'" in e and "notebook_core" in e)]
    assert not errors, errors

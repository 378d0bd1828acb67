"""The live view in marimo: ``notebooks/marimo/first-kernel.py`` served by ``marimo run``, in headless Chromium.

``gpulab.compile(...)`` as a cell's value shows the live view (``Build._display_`` returns the
widget; marimo draws anywidgets itself). marimo defines no JupyterLab theme variables: the view
takes its colours from its own palette, light or dark as marimo is (the user config's theme). At
1280 and 1920 px, in both: hover linking, a pane toggle, a splitter drag; and the build bar
rebuilds. Screenshots with ``GPULAB_UPDATE_SCREENSHOT=1`` to ``docs/img/live-marimo-{width}-{theme}.png``.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

from test_live_view import IMAGES, OUTPUT_MS, UI_MS, check_rebuilds, shoot_and_check

pytestmark = pytest.mark.browser
pytest.importorskip("marimo")

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "marimo" / "first-kernel.py"
START_S = 90


@contextmanager
def marimo_run(tmp_path: Path, cache: Path, theme: str):
    """``marimo run`` of the example on a free port, with ``theme`` in a fresh user config; stopped in any case."""
    config = tmp_path / f"config-{theme}"
    (config / "marimo").mkdir(parents=True)
    (config / "marimo" / "marimo.toml").write_text(f'[display]\ntheme = "{theme}"\n')
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "XDG_CONFIG_HOME": str(config), "GPULAB_CACHE_DIR": str(cache)}
    marimo = Path(sys.executable).parent / "marimo"
    log = open(tmp_path / f"marimo-{theme}.log", "wb")
    process = subprocess.Popen([str(marimo), "run", str(NOTEBOOK), "--headless", "--no-token", "--host", "127.0.0.1",
                                "--port", str(port)], env=env, stdout=log, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + START_S
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2)
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError((tmp_path / f"marimo-{theme}.log").read_text()[-3000:])
                time.sleep(0.5)
        yield f"http://127.0.0.1:{port}/"
    finally:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if process.poll() is not None:
                break
            os.killpg(process.pid, sig)
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                pass
        log.close()


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_the_live_view_in_marimo(browser, fresh_cache, tmp_path, theme):
    from playwright.sync_api import expect

    expect.set_options(timeout=UI_MS)
    folder = IMAGES if os.environ.get("GPULAB_UPDATE_SCREENSHOT") == "1" else tmp_path
    errors: list[str] = []
    with marimo_run(tmp_path, fresh_cache, theme) as url:
        context = browser.new_context(viewport={"width": 1920, "height": 1080}, device_scale_factor=1)
        page = context.new_page()
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        try:
            page.goto(url, timeout=OUTPUT_MS)
            view = page.locator(".gpulab-build")
            expect(view.locator(".gpulab-controls")).to_be_visible(timeout=OUTPUT_MS)
            expect(view).to_have_count(1)
            # No JupyterLab theme here: the view's own palette, as dark or light as marimo is.
            expect(view).to_have_class(re.compile(r"(^|\s)gpulab-standalone(\s|$)"))
            expect(view).to_have_attribute("data-gpulab-theme", theme)
            background = view.evaluate("e => getComputedStyle(e).backgroundColor")
            assert background == ("rgb(13, 17, 23)" if theme == "dark" else "rgb(255, 255, 255)"), background
            if theme == "light":
                check_rebuilds(page, view)
            shoot_and_check(page, view, folder, f"live-marimo-{{width}}-{theme}", body="return a * x + y")
        except BaseException:
            page.screenshot(path=str(tmp_path / "failure.png"), full_page=True)
            print(f"failure screenshot: {tmp_path / 'failure.png'}")
            raise
        finally:
            context.close()
    assert not errors, errors

"""Fixtures of the browser tests: a JupyterLab server of this venv, and headless Chromium (Playwright).

Nothing of the user's Jupyter setup leaks in: the server gets fresh config,
data, runtime, settings, workspaces and IPython folders (the venv's
``share/jupyter``, where the gpulab extension is, is still on the path; the
checkout's own build of the extension, where it has one, comes first). The
server and every process it started (the kernel) are stopped however the
test ends.

Outside CI (``CI=true``) the tests are skipped when ``/usr/bin/chromium`` or
the ``playwright`` package is missing; in CI they must run. Playwright never
downloads a browser here: it drives Debian's Chromium.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
REPO = Path(__file__).resolve().parents[2]
# The checkout's own build of the extension (npm --prefix extension run build:prod), when it has one.
BUILT_EXTENSION = REPO / "gpulab" / "labextension"
IN_CI = os.environ.get("CI", "").lower() == "true"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-quic",
]
SERVER_START_S = 60  # until the server answers /api/status
KERNEL_START_S = 60  # for the REST call that starts a kernel
SERVER_STOP_S = 10  # for each of: the shutdown request, SIGTERM, SIGKILL


def _missing(reason: str):
    """Skip with ``reason`` outside CI; in CI a browser test must run, so fail."""
    if IN_CI:
        pytest.fail(f"{reason} (CI=true: the browser tests must run; .ci/run installs Chromium)", pytrace=False)
    pytest.skip(reason)


@dataclass
class LabServer:
    url: str  # http://127.0.0.1:PORT (no trailing slash)
    token: str
    root: Path  # the server's root_dir: notebooks go here
    log: Path  # the server's stdout and stderr

    def api(self, method: str, path: str, timeout: float = 5.0, body: dict | None = None) -> bytes:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"{self.url}{path}", method=method, data=data,
                                         headers={"Authorization": f"token {self.token}",
                                                  "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.read()

    def start_kernel(self, notebook: str, name: str = "python3") -> None:
        """Start kernel ``name`` in a session for ``notebook`` (relative to ``root``).

        The lab then opens the notebook on that session: it never asks which
        kernel to start (it did at times when the page made the session).
        """
        self.api("POST", "/api/sessions", timeout=KERNEL_START_S, body={
            "path": notebook, "name": Path(notebook).name, "type": "notebook", "kernel": {"name": name}})

    def log_tail(self, chars: int = 4000) -> str:
        try:
            return self.log.read_text(errors="replace")[-chars:]
        except OSError:
            return ""


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _environment(home: Path, cache_dir: Path, runtime: Path) -> dict:
    env = dict(os.environ)
    for name in list(env):  # nothing of the user's Jupyter or IPython setup
        if name.startswith(("JUPYTER", "JPY_", "IPYTHON")):
            del env[name]
    for name, sub in (("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_DATA_DIR", "data"),
                      ("JUPYTERLAB_SETTINGS_DIR", "lab-settings"), ("JUPYTERLAB_WORKSPACES_DIR", "lab-workspaces"),
                      ("IPYTHONDIR", "ipython")):
        folder = home / sub
        folder.mkdir(parents=True, exist_ok=True)
        env[name] = str(folder)
    if (BUILT_EXTENSION / "package.json").exists():  # the extension of the tree under test, before the venv's
        (home / "path" / "labextensions").mkdir(parents=True, exist_ok=True)
        (home / "path" / "labextensions" / "gpulab").symlink_to(BUILT_EXTENSION)
        env["JUPYTER_PATH"] = str(home / "path")  # first of all the data paths, the venv's included
    env["JUPYTER_RUNTIME_DIR"] = str(runtime)
    env["JUPYTER_PLATFORM_DIRS"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    env["GPULAB_CACHE_DIR"] = str(cache_dir)  # the test session's own build cache
    # The kernel ("python -m ipykernel_launcher") must be this venv's Python.
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    # No prompts and no fetching of news or update checks in the page.
    settings = home / "lab-settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True, exist_ok=True)
    (settings / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    return env


def _descendants(pid: int) -> list:
    try:
        import psutil

        return psutil.Process(pid).children(recursive=True)
    except Exception:  # psutil comes with ipykernel; without it the shutdown request still stops the kernel
        return []


def _stop(process: subprocess.Popen, server: LabServer | None) -> None:
    """Stop the server and everything it started: shutdown request, then SIGTERM, then SIGKILL, each by id."""
    children = _descendants(process.pid)
    if process.poll() is None and server is not None:
        try:
            server.api("POST", "/api/shutdown", timeout=SERVER_STOP_S)  # also shuts the kernels down
        except (OSError, urllib.error.URLError):
            pass
        try:
            process.wait(SERVER_STOP_S)
        except subprocess.TimeoutExpired:
            pass
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if process.poll() is not None:
            break
        try:
            os.killpg(process.pid, sig)  # the server runs in a session (process group) of its own
        except ProcessLookupError:
            break
        try:
            process.wait(SERVER_STOP_S)
        except subprocess.TimeoutExpired:
            pass
    # Kernels run in sessions of their own: stop any that outlived the server, each by its id.
    for child in children:
        try:
            if child.is_running():
                child.terminate()
                child.wait(SERVER_STOP_S)
        except Exception:
            try:
                child.kill()
            except Exception:
                pass


def _start(tmp: Path, cache_dir: Path, runtime: Path, app: str = "lab") -> tuple[subprocess.Popen, LabServer]:
    """Start ``jupyter lab`` (``app="lab"``, JupyterLab 4) or ``jupyter notebook`` (Notebook 7)."""
    root = tmp / "root"
    root.mkdir(parents=True, exist_ok=True)
    token = secrets.token_hex(24)
    port = _free_port()
    server = LabServer(f"http://127.0.0.1:{port}", token, root, tmp / f"jupyter-{app}.log")
    jupyter = Path(sys.executable).parent / "jupyter"
    application = "LabApp" if app == "lab" else "JupyterNotebookApp"
    command = [
        str(jupyter), app, "--no-browser",
        "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
        f"--ServerApp.token={token}", f"--ServerApp.root_dir={root}",
        "--ServerApp.allow_root=True",  # CI runs as root
        # Kernels talk over Unix sockets in `runtime`, not TCP ports the launcher picks and frees first:
        # another process taking one in between killed a kernel as it started (a CI run), losing the cells.
        "--KernelManager.transport=ipc",
        f"--{application}.expose_app_in_browser=True",  # window.jupyterapp: the tests switch themes through its commands
    ]
    if app == "lab":  # Notebook 7 has neither (an unknown trait stops its extension from loading)
        command += ["--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate", "--LabApp.news_url=None"]
    with open(server.log, "ab") as log:
        process = subprocess.Popen(command, cwd=root, env=_environment(tmp / "home", cache_dir, runtime),
                                   stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    return process, server


def _wait_ready(process: subprocess.Popen, server: LabServer) -> bool:
    """True once /api/status answers; False when the server exited (e.g. the port was taken)."""
    deadline = time.monotonic() + SERVER_START_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return False
        try:
            json.loads(server.api("GET", "/api/status", timeout=2))
            return True
        except (OSError, urllib.error.URLError, ValueError):
            time.sleep(0.25)
    raise TimeoutError(f"JupyterLab did not answer within {SERVER_START_S} s:\n{server.log_tail()}")


@pytest.fixture(scope="module")
def lab_server(tmp_path_factory, fresh_cache):
    """A JupyterLab server on 127.0.0.1, a random free port and a random token; stopped in any case.

    One server serves every test of a module (starting one costs seconds of CI).
    """
    tmp_path = tmp_path_factory.mktemp("lab")
    runtime = Path(tempfile.mkdtemp(prefix="gpulab-kernels-"))  # short: a Unix socket's path has at most 107 bytes
    try:
        yield from _serve(tmp_path, fresh_cache, runtime)
    finally:
        shutil.rmtree(runtime, ignore_errors=True)


@pytest.fixture(scope="module")
def notebook_server(tmp_path_factory, fresh_cache):
    """A Notebook 7 server (``jupyter notebook``), as :func:`lab_server`."""
    tmp_path = tmp_path_factory.mktemp("notebook")
    runtime = Path(tempfile.mkdtemp(prefix="gpulab-kernels-"))
    try:
        yield from _serve(tmp_path, fresh_cache, runtime, app="notebook")
    finally:
        shutil.rmtree(runtime, ignore_errors=True)


def _serve(tmp_path: Path, cache_dir: Path, runtime: Path, app: str = "lab"):
    for attempt in range(3):  # another process may take the free port before the server binds it
        process, server = _start(tmp_path / f"{app}{attempt}", cache_dir, runtime, app)
        try:
            if _wait_ready(process, server):
                break
        except BaseException:
            _stop(process, server)
            raise
        _stop(process, server)
    else:
        pytest.fail(f"JupyterLab did not start:\n{server.log_tail()}", pytrace=False)
    try:
        yield server
    finally:
        _stop(process, server)


@pytest.fixture(scope="module")
def browser():
    """Headless Debian Chromium driven by Playwright (sync API); closed in any case."""
    if not CHROMIUM.exists():
        _missing(f"{CHROMIUM} is missing (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("the playwright package is missing (pip install -e '.[test]', as make test does)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS,
                                             timeout=30_000)
        try:
            yield browser
        finally:
            browser.close()

"""The live view's widget protocol in a real kernel, as any widget manager (VS Code's, Colab's) speaks it.

No JupyterLab and no gpulab extension: a jupyter_client talks to an ipykernel of this interpreter.
Displaying a build opens a ``jupyter.widget`` comm whose state carries anywidget's ES module (a loader
of the view shared by the kernel's views, in one model opened once) and the bundle; the display data
names that model and carries the saved renderings too. A custom
message from the "frontend" rebuilds with LTO off; the kernel answers with state updates (busy, the
new bundle); the same message back is served from the build cache.
"""

from __future__ import annotations

import json
import os
import queue
import sys
import time

import pytest

pytest.importorskip("ipykernel")
pytest.importorskip("anywidget")


BUILD = """
import gpulab
def add(a: gpulab.f32, b: gpulab.f32) -> gpulab.f32:
    return a + b
gpulab.compile("reduce", add, target="sm_90")
"""
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
TIMEOUT = 300


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    env = {**os.environ, "GPULAB_CACHE_DIR": str(tmp_path_factory.mktemp("cache"))}
    manager, client = _start(env, tmp_path_factory)
    try:
        yield client
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def _start(env, tmp_path_factory):
    """An ipykernel of this interpreter, and a client with its channels started."""
    from jupyter_client.kernelspec import KernelSpec, KernelSpecManager
    from jupyter_client.manager import KernelManager

    class ThisInterpreter(KernelSpecManager):
        def get_kernel_spec(self, kernel_name):
            return KernelSpec(argv=[sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                              display_name="this", language="python")

    manager = KernelManager(kernel_name="python3", kernel_spec_manager=ThisInterpreter(), transport="ipc",
                            ip=str(tmp_path_factory.mktemp("ipc") / "kernel"))
    manager.start_kernel(env=env, cwd=str(tmp_path_factory.mktemp("k")))
    client = manager.client()
    client.start_channels()
    client.wait_for_ready(timeout=60)
    return manager, client


def iopub_until(client, done, timeout=TIMEOUT) -> list[dict]:
    """IOPub messages until ``done(message)`` holds."""
    found, deadline = [], time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            message = client.get_iopub_msg(timeout=1)
        except queue.Empty:
            continue
        found.append(message)
        if done(message):
            return found
    raise TimeoutError(f"no such message in {timeout} s; got {[m['msg_type'] for m in found]}")


def idle(message) -> bool:
    return message["msg_type"] == "status" and message["content"]["execution_state"] == "idle"


def state_updates(messages, comm_id) -> list[dict]:
    return [m["content"]["data"]["state"] for m in messages
            if m["msg_type"] == "comm_msg" and m["content"]["comm_id"] == comm_id
            and m["content"]["data"].get("method") == "update"]


def test_a_build_is_a_widget_any_manager_can_draw_and_it_rebuilds(kernel):
    kernel.execute(BUILD)
    messages = iopub_until(kernel, idle)
    errors = [m["content"] for m in messages if m["msg_type"] == "error"]
    assert not errors, errors
    opened = [m for m in messages if m["msg_type"] == "comm_open" and m["content"]["target_name"] == "jupyter.widget"
              and "bundle" in m["content"]["data"]["state"]]
    assert len(opened) == 1
    state, comm_id = opened[0]["content"]["data"]["state"], opened[0]["content"]["comm_id"]
    # The state is all a widget manager needs: anywidget's module (a loader), the shared module's model and
    # the bundle.
    assert "export" in state["_esm"] and len(state["_esm"]) < 4096 and "_css" not in state
    shared = shared_module(messages, state)
    assert "export" in shared["source"] and "gpulab-build" in shared["source"] and len(shared["source"]) > 100_000
    assert ".gpulab-build" in shared["style"] and "--gl-bg" in shared["style"] and len(shared["digest"]) == 16
    assert state["bundle"]["primitive"] == "reduce" and state["bundle"]["lto"] is True
    assert state["controls"]["targets"] and [t["field"] for t in state["controls"]["toggles"]] == [
        "lto", "fma", "boundscheck"]
    # The display names the model, and carries the saved renderings for frontends without it.
    shown = [m["content"]["data"] for m in messages if m["msg_type"] == "execute_result"]
    assert len(shown) == 1
    data = shown[0]
    assert data[WIDGET_MIME]["model_id"] == comm_id
    assert data["application/vnd.gpulab.build+json"]["key"] == state["bundle"]["key"]
    assert 'class="gpulab-build"' in data["text/html"] and data["text/plain"].startswith("gpulab build: add")

    def ask(content):
        message = kernel.session.msg("comm_msg", {"comm_id": comm_id, "data": {"method": "custom", "content": content}})
        kernel.shell_channel.send(message)
        return iopub_until(kernel, lambda m: idle(m) and m["parent_header"].get("msg_id") == message["header"]["msg_id"])

    updates = state_updates(ask({"kind": "rebuild", "change": {"lto": False}}), comm_id)
    busy = [u["busy"] for u in updates if "busy" in u]
    assert busy[0] is True and busy[-1] is False
    rebuilt = [u["bundle"] for u in updates if "bundle" in u]
    assert rebuilt and rebuilt[-1]["lto"] is False and rebuilt[-1]["stats"]["sass_calls"] > 0
    assert not any(u.get("error") for u in updates)
    back = [u["bundle"] for u in state_updates(ask({"kind": "rebuild", "change": {"lto": True}}), comm_id)
            if "bundle" in u]
    assert back[-1]["key"] == state["bundle"]["key"]  # the first build, from the build cache
    assert "from memory" in back[-1]["header"]["build"]
    # A request the view cannot make gets gpulab's words, not a traceback.
    errors = [u["error"] for u in state_updates(ask({"kind": "rebuild", "change": {"target": "sm_1"}}), comm_id)
              if u.get("error")]
    assert errors and "sm_1" in errors[-1]
    errors = [u["error"] for u in state_updates(ask({"kind": "diff", "id": "target"}), comm_id) if u.get("error")]
    assert errors and "not 'target'" in errors[-1]
    diff = {}
    for update in state_updates(ask({"kind": "diff", "id": "fma"}), comm_id):
        diff.update(update)
    assert "SASS instructions" in diff["diff_text"] and diff["diff_title"] == "fma vs no fma"


def shared_module(messages, state) -> dict:
    """The state of the module model a view's state names, opened among ``messages``."""
    assert state["module"].startswith("IPY_MODEL_")
    found = [m["content"]["data"]["state"] for m in messages if m["msg_type"] == "comm_open"
             and m["content"]["comm_id"] == state["module"].removeprefix("IPY_MODEL_")]
    assert len(found) == 1
    return found[0]


def test_the_views_of_a_kernel_share_one_module(kernel):
    """A second view sends no module of its own: it names the one the first view opened."""
    kernel.execute(BUILD)
    first = iopub_until(kernel, idle)
    kernel.execute(BUILD.replace("sm_90", "sm_80"))
    second = iopub_until(kernel, idle)

    def opened(messages):
        return [m["content"]["data"]["state"] for m in messages if m["msg_type"] == "comm_open"]

    views = [s for s in opened(first) + opened(second) if "bundle" in s]
    assert len(views) == 2 and views[0]["module"] == views[1]["module"]
    assert len([s for s in opened(first) if "source" in s]) <= 1  # none when an earlier test's view opened it
    assert not [s for s in opened(second) if "source" in s]
    assert all(len(json.dumps(s)) < len(json.dumps(s["bundle"])) + 8192 for s in views)


PROTOCOLS = """
import json, gpulab
from IPython import get_ipython
from gpulab.notebook.live import BuildWidget
def add(a: gpulab.f32, b: gpulab.f32) -> gpulab.f32:
    return a + b
build = gpulab.compile("reduce", add, target="sm_90")
print(json.dumps({
    "ipython": get_ipython() is not None,
    "mimebundle": sorted(build._repr_mimebundle_()),
    "marimo": type(build._display_()).__name__,
    "costs": gpulab.line_costs(build)._display_()._mime_()[0],
    "costs_bundle": sorted(gpulab.line_costs(build)._repr_mimebundle_()),
}))
"""


def test_builds_and_their_tables_show_themselves_with_no_formatter_registered(tmp_path):
    """In plain Python (no IPython, so no formatter of its): the protocols marimo and Jupyter read."""
    import json
    import subprocess

    script = tmp_path / "protocols.py"  # a file: gpulab reads the kernel's source
    script.write_text(PROTOCOLS)
    found = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=TIMEOUT,
                           env={**os.environ, "GPULAB_CACHE_DIR": str(tmp_path / "cache")})
    assert found.returncode == 0, found.stderr[-3000:]
    shown = json.loads(found.stdout.strip().splitlines()[-1])
    assert shown == {"ipython": False,
                     "mimebundle": ["application/vnd.gpulab.build+json", WIDGET_MIME, "text/html", "text/plain"],
                     "marimo": "BuildWidget", "costs": "text/html", "costs_bundle": ["text/html", "text/plain"]}


UNBUILT = """
import gpulab
from gpulab.notebook import formatters, live

def add(a: gpulab.f32, b: gpulab.f32) -> gpulab.f32:
    return a + b

build = gpulab.compile("reduce", add, target="sm_90")
widget = live.BuildWidget(build)  # made directly, it says what to do
shown = formatters.live_view(build)
print(type(shown).__name__, sorted(formatters.build_mimebundle(build)), "not built" in widget._esm)
"""


def test_a_checkout_whose_view_was_never_built_shows_the_static_view(tmp_path, source_checkout):
    """gpulab on ``PYTHONPATH`` from a source checkout (no install built the view, as on the GPU machines): it
    imports, and a build shows its static view, no error."""
    import subprocess

    script = tmp_path / "unbuilt.py"  # a file: gpulab reads the kernel's source
    script.write_text(UNBUILT)
    env = {**os.environ, "PYTHONPATH": str(source_checkout.parent), "GPULAB_CACHE_DIR": str(tmp_path / "cache")}
    found = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=TIMEOUT, env=env,
                           cwd=tmp_path)
    assert found.returncode == 0, found.stderr[-3000:]
    assert found.stdout.split()[0] == "BuildView" and "'text/html'" in found.stdout
    assert found.stdout.strip().endswith("True")
    assert WIDGET_MIME not in found.stdout

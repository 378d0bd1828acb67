"""A class on one machine: a real JupyterHub, three learners, notebook 01 from the shared cache, private caches kept apart.

The hub runs ``deploy/jupyterhub/jupyterhub_config.py`` (the local-process
spawner: each server runs as its learner's system account) with the dummy
authenticator and its ports on 127.0.0.1, from a fresh learners'
environment (``classroom_env``); configurable-http-proxy comes from npm,
pinned by deploy/jupyterhub/package-lock.json (the test runs ``npm ci
--prefix deploy/jupyterhub`` when it is missing). The test creates three
system users, warms a shared cache from notebook 01 as root, starts the three servers through the
hub's REST API, and runs notebook 01 in each through the Jupyter server's
sessions and kernel-channel API (as JupyterLab does): every view must come
from the shared cache with no build. Then each learner builds a kernel of
their own, and each tries to read, list and write the others' private
caches and to plant an entry in the shared one: all refused by the
operating system. The hub, the servers and the users are removed on success
and on failure. Needs root (``useradd``), as CI has; skips without it
outside CI, before any environment is made.

With ``GPULAB_CLASSROOM_REPORT=FILE`` the figures measured (per-learner
memory, RSS and PSS; seconds to the first view, with and without the shared
cache) are written to FILE as JSON.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import time
import uuid
from pathlib import Path
from urllib.parse import quote

import pytest
from learnerenv import ROOT, need, run

pytestmark = pytest.mark.slow

tornado_httpclient = pytest.importorskip("tornado.httpclient")
from tornado.websocket import websocket_connect  # noqa: E402

CONFIG = ROOT / "deploy" / "jupyterhub" / "jupyterhub_config.py"
PROXY = ROOT / "deploy" / "jupyterhub" / "node_modules" / ".bin"  # npm ci --prefix deploy/jupyterhub
FIRST = ROOT / "notebooks" / "01-first-kernel.ipynb"
LEARNERS = 3
START_TIMEOUT_S = 180
CELL_TIMEOUT_S = 300
REPORT = ("import json, os, gpulab\n"
          "info = gpulab.cache_info()\n"
          "print(json.dumps({'builds': info.builds, 'private': str(info.directory),\n"
          "                  'layers': {l.name: [l.hits, l.misses, l.rejected] for l in info.layers},\n"
          "                  'shared_state': [l.state for l in info.shared]}))")
# Before gpulab is imported: no shared layer and an empty private cache, as a class without a warmed cache starts.
COLD = ("import os, tempfile\n"
        "os.environ['GPULAB_SHARED_CACHE_DIR'] = ''\n"
        "os.environ['GPULAB_CACHE_DIR'] = tempfile.mkdtemp(dir=os.path.expanduser('~'))")  # userdel removes it
OWN_KERNEL = ("import gpulab\n"
              "def mine(x: gpulab.f32) -> gpulab.f32:\n"
              "    return x * gpulab.f32({factor})\n"
              "gpulab.compile('map', mine, target='sm_90')\n"
              "print(gpulab.cache_info().builds)")
PROBE = """import json, os
def attempt(action):
    try:
        action()
        return "allowed"
    except PermissionError:
        return "denied"
def write(path):
    with open(path, "wb") as f:
        f.write(b"forged")
found = {{
    "list": attempt(lambda: os.listdir({victim!r})),
    "read": attempt(lambda: open({entry!r}, "rb").read()),
    "write": attempt(lambda: write({victim!r} + "/planted.gpulab")),
    "plant_shared": attempt(lambda: write({shared!r} + "/planted.gpulab")),
}}
print(json.dumps(found))"""


def proxy_folder() -> Path:
    """The folder of configurable-http-proxy: the project's pinned install (``npm ci`` here, once), else PATH's.

    Skips (fails in CI) when there is neither, nor npm to install it with.
    """
    if not (PROXY / "configurable-http-proxy").exists() and shutil.which("npm"):
        run(["npm", "ci", "--prefix", PROXY.parents[1], "--no-audit", "--no-fund"], timeout=300)
    if (PROXY / "configurable-http-proxy").exists():
        return PROXY
    found = shutil.which("configurable-http-proxy")
    if found is None:
        need("no configurable-http-proxy, and no npm to install it with (npm ci --prefix deploy/jupyterhub)")
    return Path(found).parent


@pytest.fixture(scope="session")
def class_machine() -> Path:
    """Checked before the learners' environment is made: root (to create users) and the proxy; the proxy's folder."""
    if os.geteuid() != 0 or shutil.which("useradd") is None:
        need("a class of system users needs root and useradd (CI runs as root)")
    return proxy_folder()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# ---------------------------------------------------------------- system users


@contextlib.contextmanager
def system_users(count: int):
    """Create ``count`` system users with home folders; remove them, and any process of theirs, afterwards."""
    if os.geteuid() != 0 or shutil.which("useradd") is None:
        need("creating system users needs root and useradd")
    prefix = f"glab{secrets.token_hex(3)}"
    names = [f"{prefix}u{i}" for i in range(count)]
    made = []
    try:
        for name in names:
            run(["useradd", "--create-home", "--user-group", "--shell", "/bin/sh", name])
            made.append(name)
        yield names
    finally:
        for name in made:
            stop_processes_of(name)
            subprocess.run(["userdel", "--remove", name], capture_output=True, timeout=60)


def stop_processes_of(name: str) -> None:
    """End every process that runs as ``name`` (the test's own users: their servers and kernels)."""
    uid = pwd.getpwnam(name).pw_uid
    for signum in (signal.SIGTERM, signal.SIGKILL):
        pids = [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and _owner(p) == uid]
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signum)
        if not pids:
            return
        time.sleep(2)


def _owner(proc: Path) -> int | None:
    try:
        return proc.stat().st_uid
    except OSError:
        return None


def folder_bytes(folder: Path) -> int:
    """Bytes of the files under ``folder`` (read as root)."""
    return sum(p.lstat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def memory_of(name: str) -> dict:
    """Memory, in bytes, of every process of ``name`` (their server and kernels): resident (RSS), and with shared pages split (PSS)."""
    uid = pwd.getpwnam(name).pw_uid
    total = {"rss": 0, "pss": 0}
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit() and _owner(proc) == uid:
            with contextlib.suppress(OSError):
                for line in (proc / "smaps_rollup").read_text().splitlines():
                    key = line.split(":")[0].lower()
                    if key in total:
                        total[key] += int(line.split()[1]) * 1024
    return total


# ---------------------------------------------------------------- the hub


class Hub:
    """A JupyterHub process on 127.0.0.1, and a client of its REST API with an admin service token."""

    def __init__(self, env, folder: Path, names: list[str], notebooks: Path, shared: Path, proxy: Path):
        self.token = secrets.token_hex(32)
        self.port, hub_port, proxy_port = free_port(), free_port(), free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.folder = folder
        config = folder / "test_config.py"
        config.write_text(f"""
load_subconfig({str(CONFIG)!r})
c.JupyterHub.authenticator_class = "dummy"
c.Authenticator.allowed_users = {set(names)!r}
c.JupyterHub.bind_url = {self.url!r}
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = {hub_port}
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{proxy_port}"
c.JupyterHub.db_url = "sqlite:///{folder}/jupyterhub.sqlite"
c.JupyterHub.cookie_secret_file = "{folder}/cookie_secret"
c.JupyterHub.pid_file = "{folder}/jupyterhub.pid"
c.JupyterHub.services = [{{"name": "grader", "api_token": {self.token!r}}}]
c.JupyterHub.load_roles = [{{"name": "grader", "services": ["grader"],
                            "scopes": ["admin:users", "admin:servers", "access:servers", "list:users"]}}]
c.Spawner.args = ["--ServerApp.ip=127.0.0.1"]
""")
        log = (folder / "jupyterhub.log").open("w")
        environ = env.environ(GPULAB_NOTEBOOKS=str(notebooks), GPULAB_SHARED_CACHE_DIR=str(shared))
        environ["PATH"] = f"{environ['PATH']}{os.pathsep}{proxy}"
        self.process = subprocess.Popen([env.bin / "jupyterhub", "-f", config], cwd=folder, env=environ,
                                        stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.client = tornado_httpclient.AsyncHTTPClient()

    def log(self) -> str:
        return (self.folder / "jupyterhub.log").read_text()[-6000:]

    async def request(self, method: str, path: str, body=None, *, ok=(200, 201, 202, 204)):
        response = await self.client.fetch(
            self.url + path, method=method, raise_error=False, request_timeout=60,
            headers={"Authorization": f"token {self.token}"},
            body=None if body is None and method in ("GET", "DELETE") else json.dumps(body or {}),
            allow_nonstandard_methods=True)
        if response.code not in ok:
            raise AssertionError(f"{method} {path}: {response.code} {response.body[:2000]!r}\n{self.log()}")
        return json.loads(response.body) if response.body else None

    async def wait_until_up(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            assert self.process.poll() is None, f"jupyterhub exited with {self.process.returncode}:\n{self.log()}"
            with contextlib.suppress(OSError, tornado_httpclient.HTTPClientError):
                response = await self.client.fetch(self.url + "/hub/api/", raise_error=False, request_timeout=5)
                if response.code == 200:
                    return
            await asyncio.sleep(0.5)
        raise AssertionError(f"jupyterhub did not answer within {START_TIMEOUT_S} s:\n{self.log()}")

    async def start_server(self, name: str) -> None:
        await self.request("POST", f"/hub/api/users/{name}", ok=(201, 409))  # allowed users exist from the start
        await self.request("POST", f"/hub/api/users/{name}/server")
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            user = await self.request("GET", f"/hub/api/users/{name}")
            server = user.get("servers", {}).get("")
            if server and server.get("ready"):
                return
            await asyncio.sleep(1)
        raise AssertionError(f"{name}'s server was not ready within {START_TIMEOUT_S} s:\n{self.log()}")

    def stop(self) -> None:
        """Stop the hub (it stops the servers and the proxy it started), by its own pid."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=30)
        proxy_pid = self.folder / "jupyterhub-proxy.pid"
        with contextlib.suppress(OSError, ValueError, ProcessLookupError):
            os.kill(int(proxy_pid.read_text()), signal.SIGTERM)


# ---------------------------------------------------------------- a learner's server


class Kernel:
    """A notebook session in a learner's server, run through the kernel's websocket channels."""

    def __init__(self, hub: Hub, name: str):
        self.hub, self.base = hub, f"/user/{name}/api"

    async def open(self, path: str) -> None:
        session = await self.hub.request("POST", f"{self.base}/sessions",
                                         {"path": path, "type": "notebook", "name": path,
                                          "kernel": {"name": "python3"}})
        self.kernel_id = session["kernel"]["id"]
        self.session = uuid.uuid4().hex
        url = (f"ws://127.0.0.1:{self.hub.port}{self.base}/kernels/{self.kernel_id}/channels"
               f"?session_id={self.session}")
        request = tornado_httpclient.HTTPRequest(url, headers={"Authorization": f"token {self.hub.token}"})
        self.socket = await websocket_connect(request)

    async def execute(self, code: str) -> list[dict]:
        """Run ``code``; its outputs as notebook outputs. Fails on an error or an error on stderr."""
        msg_id = uuid.uuid4().hex
        header = {"msg_id": msg_id, "msg_type": "execute_request", "username": "grader", "session": self.session,
                  "date": "", "version": "5.3"}
        content = {"code": code, "silent": False, "store_history": True, "user_expressions": {},
                   "allow_stdin": False, "stop_on_error": True}
        await self.socket.write_message(json.dumps({"header": header, "parent_header": {}, "metadata": {},
                                                    "content": content, "channel": "shell", "buffers": []}))
        outputs, idle, reply = [], False, None
        deadline = time.monotonic() + CELL_TIMEOUT_S
        while not (idle and reply):
            text = await asyncio.wait_for(self.socket.read_message(), max(deadline - time.monotonic(), 0.1))
            assert text is not None, "the kernel's channels closed"
            message = json.loads(text)
            if message.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind = message["header"]["msg_type"]
            if kind in ("stream", "display_data", "execute_result", "error"):
                outputs.append({"output_type": kind, **message["content"]})
            elif kind == "status" and message["content"]["execution_state"] == "idle":
                idle = True
            elif kind == "execute_reply":
                reply = message["content"]
        errors = [o for o in outputs if o["output_type"] == "error"
                  or o["output_type"] == "stream" and o["name"] == "stderr" and "Error" in o["text"]]
        assert reply["status"] == "ok" and not errors, f"{code[:200]}\n-> {reply} {errors}"
        return outputs

    async def close(self) -> None:
        self.socket.close()
        await self.hub.request("DELETE", f"{self.base}/kernels/{self.kernel_id}")


def printed(outputs: list[dict]) -> str:
    return "".join(o["text"] for o in outputs if o["output_type"] == "stream" and o["name"] == "stdout")


async def run_notebook_01(hub: Hub, name: str, prelude: str = "", session: str = FIRST.name) -> dict:
    """Notebook 01, as the learner's server holds it, cell by cell (after ``prelude``); what it showed and the counters.

    ``session`` names the notebook session: a session of a path that has one
    already gets that session's kernel, so another name gives a new kernel.
    """
    notebook = await hub.request("GET", f"/user/{name}/api/contents/{quote(FIRST.name)}?content=1")
    cells = [cell for cell in notebook["content"]["cells"] if cell["cell_type"] == "code"]
    kernel = Kernel(hub, name)
    started = time.perf_counter()
    await kernel.open(session)
    if prelude:
        await kernel.execute(prelude)
    first_view, views = None, []
    for cell in cells:
        outputs = await kernel.execute("".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"])
        bundles = [o["data"] for o in outputs if o["output_type"] == "display_data"
                   and "application/vnd.gpulab.build+json" in o["data"]]
        if bundles and first_view is None:
            first_view = time.perf_counter() - started
        views += bundles
    notebook_s = time.perf_counter() - started
    counters = json.loads(printed(await kernel.execute(REPORT)))
    memory = memory_of(name)
    return {"kernel": kernel, "views": views, "first_view_s": first_view, "notebook_s": notebook_s,
            "counters": counters, "memory": memory}


# ---------------------------------------------------------------- the test


def test_three_learners_run_notebook_01_from_the_shared_cache_and_keep_their_caches_apart(
        class_machine, classroom_env, tmp_path):
    # The class's files, in the environment's 0755 folder: notebooks, and the shared cache warmed as root.
    notebooks = classroom_env.root / "notebooks"
    notebooks.mkdir()
    shutil.copy(FIRST, notebooks)
    shared = classroom_env.root / "cache"
    warmed = run([classroom_env.python, "-m", "gpulab.cache", "warm", notebooks, "--out", shared],
                 cwd=classroom_env.root, env=classroom_env.environ(GPULAB_CACHE_DIR=str(tmp_path / "teacher")))
    assert "0 refused" in warmed.stdout, warmed.stdout
    shared_entries = sorted(p.name for p in shared.glob("*.gpulab"))
    assert shared_entries

    hub_folder = classroom_env.root / "hub"
    hub_folder.mkdir(mode=0o700)
    with system_users(LEARNERS) as names:
        hub = Hub(classroom_env, hub_folder, names, notebooks, shared, class_machine)
        try:
            results = asyncio.run(_class(hub, names, shared))
        finally:
            hub.stop()
    _report(classroom_env, results, shared_entries)


async def _class(hub: Hub, names: list[str], shared: Path) -> dict:
    await hub.wait_until_up()
    await asyncio.gather(*(hub.start_server(name) for name in names))
    results = {}
    for name in names:  # one after the other, so each learner's figures are their own
        results[name] = await run_notebook_01(hub, name)

    for name, found in results.items():
        counters = found["counters"]
        assert counters["builds"] == 0, f"{name} built: {counters}"
        assert counters["shared_state"] == ["read-only"], counters
        hits, misses, rejected = counters["layers"]["shared"]
        assert hits > 0 and misses == 0 and rejected == 0, counters
        assert found["views"], f"{name}'s notebook 01 showed no view"
        for bundle in found["views"]:
            data = bundle["application/vnd.gpulab.build+json"]
            assert data["build"]["origin"] in ("disk", "memory") and "text/html" in bundle, data["build"]
        assert Path(counters["private"]) == Path(pwd.getpwnam(name).pw_dir) / ".cache" / "gpulab"

    # The same notebook without the shared cache builds (so the zero above is the shared cache's doing).
    cold = await run_notebook_01(hub, names[0], prelude=COLD, session="01-first-kernel-cold.ipynb")
    assert cold["counters"]["builds"] > 0 and "shared" not in cold["counters"]["layers"], cold["counters"]
    await cold["kernel"].execute("import shutil; shutil.rmtree(os.environ['GPULAB_CACHE_DIR'])")
    await cold["kernel"].close()
    results[names[0]]["cold"] = cold

    # Each learner builds a kernel of their own, into their private cache only.
    for index, (name, found) in enumerate(results.items()):
        builds = int(printed(await found["kernel"].execute(OWN_KERNEL.format(factor=index + 2))).split()[-1])
        assert builds > 0
        private = Path(found["counters"]["private"])
        owner = pwd.getpwnam(name)
        assert private.stat().st_uid == owner.pw_uid and oct(private.stat().st_mode & 0o777) == "0o700"
        entries = [p.name for p in private.glob("*.gpulab")]
        assert len(entries) == builds
        found["home_bytes"] = folder_bytes(Path(owner.pw_dir))
        found["private_cache_bytes"] = folder_bytes(private)

    # No learner can list, read or write another's private cache, nor plant an entry in the shared one.
    for name, found in results.items():
        for other in names:
            if other == name:
                continue
            victim = Path(results[other]["counters"]["private"])
            entry = next(victim.glob("*.gpulab"))
            probe = PROBE.format(victim=str(victim), entry=str(entry), shared=str(shared))
            attempts = json.loads(printed(await found["kernel"].execute(probe)))
            assert attempts == {"list": "denied", "read": "denied", "write": "denied", "plant_shared": "denied"}, (
                name, other, attempts)
    assert not list(shared.glob("planted*"))

    for name, found in results.items():
        await found["kernel"].close()
        await hub.request("DELETE", f"/hub/api/users/{name}/server")
    return results


def _report(env, results: dict, shared_entries: list[str]) -> None:
    target = os.environ.get("GPULAB_CLASSROOM_REPORT")
    if not target:
        return
    path = Path(target)
    figures = json.loads(path.read_text()) if path.exists() else {}
    cold = next(iter(results.values()))["cold"]
    figures["hub"] = {
        "learners": {name: {"rss_bytes": found["memory"]["rss"], "pss_bytes": found["memory"]["pss"],
                            "home_bytes": found["home_bytes"], "private_cache_bytes": found["private_cache_bytes"],
                            "first_view_s": round(found["first_view_s"], 2),
                            "notebook_01_s": round(found["notebook_s"], 2),
                            "shared_hits": found["counters"]["layers"]["shared"][0]}
                     for name, found in results.items()},
        "without_shared_cache": {"first_view_s": round(cold["first_view_s"], 2),
                                 "notebook_01_s": round(cold["notebook_s"], 2), "builds": cold["counters"]["builds"]},
        "shared_entries": len(shared_entries),
        "environment_bytes": env.size_bytes(),
        "environment_install_s": round(env.install_seconds, 1),
    }
    path.write_text(json.dumps(figures, indent=2) + "\n")

"""Fresh learners' environments, made as Binder and a class's image make them, in folders every user can read.

Each is a new virtual environment of a Python that other accounts can run
(``/usr/bin/pythonX.Y`` of ``binder/runtime.txt``'s version: this checkout's
own interpreter may sit under a home folder no one else may enter), in a
fresh folder under ``/tmp`` (mode 0755, root's when the tests run as root),
removed at the end. pip installs with nothing but the environment on
``PATH``: no Node.js, no compiler. pip's cache is used, so a machine that
installed gpulab before takes the wheels from it.

Outside CI (``CI=true``) the tests here are skipped when something they need
is missing; in CI they must run, so they fail instead.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BINDER = ROOT / "binder"
HUB_REQUIREMENTS = ROOT / "deploy" / "jupyterhub" / "requirements.txt"
# binder/requirements.txt's gpulab line: the wheel attached to the GitHub release of this version (``make binder``).
RELEASE_WHEEL = re.compile(r"gpulab @ https://github\.com/gpulab/gpulab/releases/download/"
                           r"v(?P<version>[^/]+)/gpulab-(?P=version)-py3-none-any\.whl")
IN_CI = os.environ.get("CI", "").lower() == "true"


def need(reason: str):
    """Skip with ``reason`` outside CI; in CI these tests must run, so fail."""
    if IN_CI:
        pytest.fail(f"CI must run this test: {reason}")
    pytest.skip(reason)


def run(command, **options) -> subprocess.CompletedProcess:
    """Run ``command``; on failure, fail the test with its output."""
    options.setdefault("timeout", 900)
    done = subprocess.run([str(c) for c in command], capture_output=True, text=True, **options)
    if done.returncode:
        pytest.fail(f"{' '.join(map(str, command))} exited with {done.returncode}:\n"
                    f"{done.stdout[-4000:]}\n{done.stderr[-4000:]}")
    return done


def runtime_version() -> str:
    """The Python version ``binder/runtime.txt`` names (``"3.11"``)."""
    text = (BINDER / "runtime.txt").read_text().strip()
    match = re.fullmatch(r"python-(\d+\.\d+)(\.\d+)?", text)
    assert match, f"binder/runtime.txt should read python-X.Y, not {text!r}"
    return match[1]


def reachable_by_all(path: Path) -> bool:
    """Whether every account can run ``path``: it and each folder above it let others in."""
    real = Path(os.path.realpath(path))
    return bool(real.stat().st_mode & stat.S_IXOTH) and all(
        folder.stat().st_mode & stat.S_IXOTH for folder in real.parents)


def shared_python() -> Path:
    """A Python of the runtime's version that every account can run (skips or fails when there is none)."""
    version = runtime_version()
    for candidate in (Path(sys.executable), Path(f"/usr/bin/python{version}"), Path(f"/usr/local/bin/python{version}")):
        if candidate.exists() and reachable_by_all(candidate):
            found = run([candidate, "-c", "import sys, venv; print(f'{sys.version_info[0]}.{sys.version_info[1]}')"])
            if found.stdout.strip() == version:
                return candidate
    need(f"no Python {version} (binder/runtime.txt) that every account can run")


@dataclass
class LearnerEnv:
    """A fresh environment: where it is, how long it took to make, and its size on disk."""

    root: Path
    prefix: Path
    install_seconds: float

    @property
    def bin(self) -> Path:
        return self.prefix / "bin"

    @property
    def python(self) -> Path:
        return self.bin / "python"

    def size_bytes(self) -> int:
        return sum(p.lstat().st_size for p in self.prefix.rglob("*") if p.is_file() and not p.is_symlink())

    def environ(self, **extra) -> dict:
        """This process's environment with only this environment on PATH, and Jupyter's folders inside it."""
        env = {key: value for key, value in os.environ.items()
               if not key.startswith(("JUPYTER", "PYTHON", "VIRTUAL_ENV", "IPYTHON", "GPULAB"))}
        env.update(PATH=f"{self.bin}{os.pathsep}/usr/bin{os.pathsep}/bin", VIRTUAL_ENV=str(self.prefix),
                   PYTHONUNBUFFERED="1", **extra)
        return env


def make_env(name: str, *pip_args) -> LearnerEnv:
    """A new environment in a fresh 0755 folder under /tmp: ``pip install *pip_args`` from the checkout's root."""
    root = Path(tempfile.mkdtemp(prefix=f"gpulab-{name}-"))
    root.chmod(0o755)
    prefix = root / "env"
    started = time.perf_counter()
    run([shared_python(), "-m", "venv", prefix])
    # Only the new environment on PATH: pip must not need Node.js (or anything else) to install it.
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env.update(PATH=str(prefix / "bin"), VIRTUAL_ENV=str(prefix))
    run([prefix / "bin" / "python", "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *pip_args],
        cwd=ROOT, env=env)
    return LearnerEnv(root, prefix, time.perf_counter() - started)


def project_version() -> str:
    """gpulab's version, from pyproject.toml."""
    return re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M)[1]


def checkout_wheel(folder: Path) -> Path:
    """The wheel ``make wheel`` makes, built from this checkout into ``folder`` (the extension already built)."""
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--disable-pip-version-check", "-w", folder,
         ROOT], cwd=ROOT)
    wheel, = folder.glob("gpulab-*.whl")
    return wheel


def binder_requirements_with(wheel: Path, folder: Path) -> Path:
    """binder/requirements.txt with its release wheel replaced by ``wheel`` (the release is not made yet here)."""
    lines = [str(wheel) if RELEASE_WHEEL.fullmatch(line) else line
             for line in requirement_lines(BINDER / "requirements.txt")]
    assert str(wheel) in lines, "binder/requirements.txt has no gpulab release wheel line"
    path = folder / "requirements.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def requirement_lines(path: Path) -> list[str]:
    """The requirements of a requirements file, without comments."""
    return [line.strip() for line in path.read_text().splitlines() if line.strip() and not line.startswith("#")]

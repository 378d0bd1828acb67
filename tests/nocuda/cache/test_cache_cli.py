"""``python -m gpulab.cache``, run as a user runs it: a separate process with its own environment."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from cachekit import KEY, OTHER, REPO, Builder, entry, get

from gpulab.cache import BuildCache


def cli(*args: str, cache: Path | str, shared: str = "") -> subprocess.CompletedProcess:
    env = dict(os.environ, GPULAB_CACHE_DIR=str(cache), GPULAB_SHARED_CACHE_DIR=shared,
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    return subprocess.run([sys.executable, "-m", "gpulab.cache", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)


def test_publish_then_check_then_use_as_a_shared_folder(tmp_path: Path) -> None:
    course = tmp_path / "course"
    teacher = BuildCache(course, shared=())
    for key in (KEY, OTHER):
        get(teacher, key=key, build=Builder())
    entry(course, OTHER).write_bytes(b"a crashed copy")

    published = cli("publish", str(course), cache=tmp_path / "mine")
    assert published.returncode == 0, published.stderr
    assert "trusted as a shared cache folder; 1 good entries, 0 refused" in published.stdout
    assert cli("check", str(course), cache=tmp_path / "mine").returncode == 0

    info = cli("info", cache=tmp_path / "learner", shared=str(course))
    assert info.returncode == 0 and info.stderr == ""
    shared_row = next(line for line in info.stdout.splitlines() if line.startswith("shared"))
    assert str(course) in shared_row and "1 entries" in shared_row and "read-only" in shared_row


def test_check_and_publish_fail_on_a_folder_others_can_write(tmp_path: Path) -> None:
    course = tmp_path / "course"
    get(BuildCache(course, shared=()), build=Builder())
    course.chmod(0o777)
    checked = cli("check", str(course), cache=tmp_path / "mine")
    assert checked.returncode == 1 and "refused as a shared cache folder" in checked.stdout
    assert "writable by its group and others (mode 0777)" in checked.stdout
    published = cli("publish", str(course), cache=tmp_path / "mine")
    assert published.returncode == 1 and "cannot publish" in published.stderr


def test_publish_exits_with_1_and_leaves_a_folder_of_other_files_closed(tmp_path: Path) -> None:
    secret = tmp_path / "d"
    secret.mkdir(mode=0o700)
    (secret / "secret").write_text("s")
    published = cli("publish", str(secret), cache=tmp_path / "mine")
    assert published.returncode == 1 and "not a folder gpulab's build cache made" in published.stderr
    assert secret.stat().st_mode & 0o777 == 0o700


def test_a_folder_of_an_unknown_users_home_is_skipped_with_a_warning(tmp_path: Path) -> None:
    """``GPULAB_SHARED_CACHE_DIR='~nosuchuser/x:<good>'`` made every compile and `info` raise RuntimeError."""
    course = tmp_path / "course"
    get(BuildCache(course, shared=()), build=Builder())
    cli("publish", str(course), cache=tmp_path / "mine")
    info = cli("info", cache=tmp_path / "learner", shared=os.pathsep.join(["~nosuchuser-gpulab/x", str(course)]))
    assert info.returncode == 0, info.stderr
    rows = [line for line in info.stdout.splitlines() if line.startswith("shared")]
    assert "~nosuchuser-gpulab/x" in rows[0] and "names a home folder that cannot be found" in rows[0]
    assert str(course) in rows[1] and "1 entries" in rows[1] and "read-only" in rows[1]
    assert "CacheWarning: not using the shared build cache ~nosuchuser-gpulab/x" in info.stderr
    private = cli("info", cache="~nosuchuser-gpulab/cache")
    assert private.returncode == 0 and "cannot be created: memory only" in private.stdout


def test_clear_removes_private_entries_only(tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    get(BuildCache(mine, shared=()), build=Builder())
    cleared = cli("clear", cache=mine)
    assert cleared.returncode == 0 and f"removed 1 entries from {mine}" in cleared.stdout
    assert not entry(mine).exists()
    usage = cli("frobnicate", cache=mine)
    assert usage.returncode == 2 and "invalid choice" in usage.stderr

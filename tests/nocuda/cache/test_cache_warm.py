"""``python -m gpulab.cache warm``: a folder warmed from notebooks answers a learner's run of them, with no build."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cachekit import REPO

nbformat = pytest.importorskip("nbformat")
pytest.importorskip("nbclient")

from gpulab.cache.folder import EntryFolder  # noqa: E402
from gpulab.notebook.warm import kernel_manager, notebooks_in  # noqa: E402

FIRST = REPO / "notebooks" / "01-first-kernel.ipynb"
REPORT = ("import json, gpulab\n"
          "info = gpulab.cache_info()\n"
          "print(json.dumps({'builds': info.builds, 'layers': {l.name: [l.hits, l.misses] for l in info.layers}}))")
# A cell that names no target compiles for the session's (a GPU learner's device; sm_90 with no GPU).
NO_TARGET = "%load_ext gpulab\nimport gpulab\nfrom gpulab import i32\n"
KERNEL = "%%gpukernel reduce\ndef add(a: i32, b: i32) -> i32:\n    return a + b\n"


def cli(*args: str, cache: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, GPULAB_CACHE_DIR=str(cache), GPULAB_SHARED_CACHE_DIR="")
    return subprocess.run([sys.executable, "-m", "gpulab.cache", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)


def learner_run(notebook: Path, private: Path, shared: Path, first_cell: str = "") -> dict:
    """Run ``notebook`` as a learner whose gpulab reads ``shared``; the cache's counters at the end."""
    from nbclient import NotebookClient

    book = nbformat.read(notebook, as_version=4)
    if first_cell:
        book.cells.insert(0, nbformat.v4.new_code_cell(first_cell))
    book.cells.append(nbformat.v4.new_code_cell(REPORT))
    env = {**os.environ, "GPULAB_CACHE_DIR": str(private), "GPULAB_SHARED_CACHE_DIR": str(shared)}
    NotebookClient(book, km=kernel_manager(), timeout=300,
                   resources={"metadata": {"path": str(notebook.parent)}}).execute(env=env)
    return json.loads(book.cells[-1].outputs[0]["text"])


def test_a_warmed_folder_answers_every_build_of_notebook_01(tmp_path: Path) -> None:
    course = tmp_path / "course"
    warmed = cli("warm", str(FIRST), "--out", str(course), cache=tmp_path / "teacher")
    assert warmed.returncode == 0, warmed.stderr
    assert "01-first-kernel.ipynb  no GPU" in warmed.stdout and "0 refused" in warmed.stdout
    entries = sorted(p.name for p in course.glob("*.gpulab"))
    assert entries and oct(course.stat().st_mode & 0o777) == "0o755"

    counters = learner_run(FIRST, tmp_path / "learner", course)
    assert counters["builds"] == 0, counters
    hits, misses = counters["layers"]["shared"]
    assert hits == len(entries) and misses == 0  # every build and SASS entry is read
    assert counters["layers"]["private"] == [0, hits]
    assert not list((tmp_path / "learner").glob("*.gpulab"))  # nothing copied into the private folder


def test_each_target_warms_the_cells_that_name_none(tmp_path: Path) -> None:
    notebook = tmp_path / "no-target.ipynb"
    book = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(NO_TARGET), nbformat.v4.new_code_cell(KERNEL)])
    nbformat.write(book, notebook)
    course = tmp_path / "course"
    warmed = cli("warm", str(tmp_path), "--targets", "sm_80,sm_100", "--out", str(course), cache=tmp_path / "t")
    assert warmed.returncode == 0, warmed.stderr
    runs = [line.split() for line in warmed.stdout.splitlines() if line.startswith("  no-target")]
    assert [run[-3] for run in runs] == ["GPU", "sm_80", "sm_100"]
    first, *later = (int(run[-2]) for run in runs)
    assert len(set(later)) == 1 and (each := later[0]) > 0  # every pass builds the same kernels, anew
    assert first == each + 1  # and the first keeps the associativity probe's verdict, which no target changes
    # A learner on an sm_80 GPU: their cells compile for their device (here: the session default).
    counters = learner_run(notebook, tmp_path / "learner", course, "%load_ext gpulab\n%gpulab defaults --target sm_80")
    assert counters["builds"] == 0 and counters["layers"]["shared"] == [each + 1, 0]
    # A target the class did not warm is built.
    counters = learner_run(notebook, tmp_path / "other", course, "%load_ext gpulab\n%gpulab defaults --target sm_86")
    written = [p.name for p in (tmp_path / "other").glob("*.gpulab")]
    assert counters["builds"] == len(written) == each


def test_warm_refuses_what_it_cannot_do(tmp_path: Path) -> None:
    bad_target = cli("warm", str(FIRST), "--targets", "sm_1", "--out", str(tmp_path / "c"), cache=tmp_path / "t")
    assert bad_target.returncode == 1 and "sm_1" in bad_target.stderr and "not a compute capability" in bad_target.stderr
    missing = cli("warm", str(tmp_path / "nowhere"), "--out", str(tmp_path / "c"), cache=tmp_path / "t")
    assert missing.returncode == 1 and "no notebook or folder" in missing.stderr
    broken = tmp_path / "broken.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 / 0")]), broken)
    failed = cli("warm", str(broken), "--out", str(tmp_path / "c"), cache=tmp_path / "t")
    assert failed.returncode == 1 and "broken.ipynb (no GPU) stopped at a cell" in failed.stderr
    assert "ZeroDivisionError" in failed.stderr


@pytest.mark.parametrize("text, said", [("hello", "NotJSONError: Notebook does not appear to be JSON"),
                                        ("[1, 2]", "AttributeError"), ('{"cells": 3}', "TypeError"),
                                        (b"\xff\xfe", "UnicodeDecodeError")])
def test_warm_says_which_file_is_not_a_notebook_before_running_any(tmp_path: Path, text, said) -> None:
    """``python -m gpulab.cache warm notjson.ipynb --out w`` printed nbformat's raw traceback."""
    bad = tmp_path / "notjson.ipynb"
    bad.write_bytes(text.encode() if isinstance(text, str) else text)
    failed = cli("warm", str(FIRST), str(bad), "--out", str(tmp_path / "w"), cache=tmp_path / "t")
    assert failed.returncode == 1 and "Traceback" not in failed.stderr, failed.stderr
    assert f"cannot warm {tmp_path / 'w'}: {bad} is not a notebook nbformat can read ({said}" in failed.stderr
    assert not list((tmp_path / "w").glob("*.gpulab"))  # notebook 01 did not run first


def test_notebooks_in_takes_files_and_folders(tmp_path: Path) -> None:
    for name in ("b.ipynb", "a.ipynb", ".hidden.ipynb", "c.txt"):
        (tmp_path / name).write_text("{}")
    assert [p.name for p in notebooks_in([tmp_path])] == ["a.ipynb", "b.ipynb"]
    assert notebooks_in([FIRST]) == [FIRST]
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="no notebooks in"):
        notebooks_in([tmp_path / "empty"])


def test_a_notebook_that_stops_leaves_the_folder_as_it_was(tmp_path: Path) -> None:
    """The runs fill a folder of their own; the one asked for gets their builds only once every notebook ran."""
    stops = tmp_path / "stops.ipynb"  # builds a kernel, then stops
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)
                                                   for source in (NO_TARGET, KERNEL, "1 / 0")]), stops)
    new, kept = tmp_path / "new", tmp_path / "kept"
    failed = cli("warm", str(stops), "--out", str(new), cache=tmp_path / "t")
    assert failed.returncode == 1 and "stops.ipynb (no GPU) stopped at a cell" in failed.stderr
    assert f"{new} is left as it was" in failed.stderr and not new.exists()
    EntryFolder(kept, shared=False).write("a" * 64, b"an earlier build")
    before = sorted(p.name for p in kept.iterdir())
    again = cli("warm", str(stops), "--out", str(kept), cache=tmp_path / "t")
    assert again.returncode == 1 and f"{kept} is left as it was" in again.stderr
    assert sorted(p.name for p in kept.iterdir()) == before  # no new entry, and no folder of the runs left behind

"""``make test`` runs the suite in parallel (pytest-xdist), each worker taking whole files.

A page's examples share one shell and run in order, so they must not be
spread over workers; a whole file to a worker keeps them together, as it
keeps a module's fixtures made once.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_test_runs_the_tests_on_every_core_a_file_to_a_worker(tmp_path):
    dry = subprocess.run(["make", "-n", "test", f"VENV={tmp_path / 'venv'}"], cwd=REPO, capture_output=True,
                         text=True, timeout=60, check=True)
    assert re.search(r"-m pytest -n auto --dist loadfile\b", dry.stdout), dry.stdout


def test_a_pages_examples_run_in_order_on_two_workers():
    pytest.importorskip("xdist")
    pytest.importorskip("sybil")
    ran = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadfile", "-q", "-p", "no:cacheprovider",
                          "docs/memory.md", "docs/conversion.md"], cwd=REPO, capture_output=True,
                         text=True, timeout=600)
    assert ran.returncode == 0 and re.search(r"\b[1-9]\d* passed\b", ran.stdout), ran.stdout[-3000:]

"""Figures in the README, docs/ and bench/results/README.md name their runs so that a reader can look them up.

A run is named by its date, machine and commit, with its number beside
them; bench/results holds a file for every run number the text names.
Numbered periods of the team's own work ("session 14") mean nothing to a
reader and are not used.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "bench" / "results"
READER_FACING = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
TEXTS = [*READER_FACING, RESULTS / "README.md"]
SESSION = re.compile(r"\bsessions? \d+|\bsession \d+'s|\b(?:this|that|same|previous|next|earlier|later) session\b",
                     re.IGNORECASE)
RUNS = re.compile(r"(?<!--)\b[Rr]uns? (\d{1,3}(?:(?:-|, | and )\d{1,3})*)\b")
"""Run numbers (up to three digits: "runs 2095-5031" in ms are timings, not runs)."""
DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")


def blocks(text: str) -> list[str]:
    """Paragraphs, list items and table rows: the pieces a reader takes in at once."""
    pieces = []
    for paragraph in re.split(r"\n\s*\n", text):
        if paragraph.lstrip().startswith("|"):
            pieces += paragraph.splitlines()
        else:
            pieces += re.split(r"\n(?=\s*[-*] )", paragraph)
    return pieces


def run_numbers(text: str) -> set[int]:
    return {int(n) for found in RUNS.finditer(text) for n in re.findall(r"\d+", found.group(1))}


@pytest.mark.parametrize("path", TEXTS, ids=lambda path: str(path.relative_to(REPO)))
def test_no_numbered_sessions(path: Path):
    found = [match.group(0) for match in SESSION.finditer(path.read_text(encoding="utf-8"))]
    assert not found, f"{path.name} speaks of {found}: name the run by its date, machine and commit instead"


@pytest.mark.parametrize("path", READER_FACING, ids=lambda path: str(path.relative_to(REPO)))
def test_a_run_number_comes_with_its_date(path: Path):
    undated = [block.strip()[:120] for block in blocks(path.read_text(encoding="utf-8"))
               if run_numbers(block) and not DATE.search(block)]
    assert not undated, f"{path.name}: run numbers without a date (and machine, commit) beside them: {undated}"


@pytest.mark.parametrize("path", TEXTS, ids=lambda path: str(path.relative_to(REPO)))
def test_every_run_named_has_its_files_in_bench_results(path: Path):
    kept = {int(n) for file in RESULTS.iterdir() for n in re.findall(r"-run(\d+)[-.]", file.name)}
    missing = sorted(run_numbers(path.read_text(encoding="utf-8")) - kept)
    assert not missing, f"{path.name} names runs {missing}, of which bench/results has no file"

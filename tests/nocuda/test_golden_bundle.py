"""One header model, drawn by every renderer: the golden bundle (extension/test/golden-bundle.json) from a real build.

The TypeScript tests render the same file (extension/test/view.test.ts).
Regenerate it with ``.venv/bin/python tests/golden/golden_bundle.py``.
"""

import html
import json
import sys
from pathlib import Path

import pytest

from gpulab.compiler.bundle import header_of
from gpulab.display.html import render_html
from gpulab.display.text import render_text

sys.path.insert(0, str(Path(__file__).parents[1] / "golden"))
import golden_bundle as golden  # noqa: E402

REGENERATE = "the golden bundle is out of date: run .venv/bin/python tests/golden/golden_bundle.py"


@pytest.fixture(scope="module")
def stored():
    return json.loads(golden.GOLDEN.read_text())


def header_texts(header: dict) -> list[str]:
    """Every text the header model holds: what each renderer must show."""
    texts = [header["title"], header["options"], *(chip["text"] for chip in header["chips"])]
    texts += [title for _, title in header["kernels"]["columns"]]
    texts += [text for row in header["kernels"]["rows"] for text in row["cells"].values()]
    texts += [item[field] for item in header["pressure"] for field in ("kernel", "text")]
    texts += [item[field] for item in header["diagnostics"] for field in ("kind", "message", "fix")]
    return texts + [part for timing in header["timings"] for part in timing]


def shape(value):
    """The keys and types of a JSON value, not its contents."""
    if isinstance(value, dict):
        return {key: shape(inner) for key, inner in value.items()}
    if isinstance(value, list):
        return [shape(value[0])] if value else []
    return type(value).__name__


def test_the_stored_header_is_what_the_model_makes_of_its_bundle(stored):
    for bundle in (stored, stored["compare"]):
        assert bundle["header"] == header_of({k: v for k, v in bundle.items() if k != "header"}), REGENERATE


def test_a_fresh_build_has_the_stored_shape(stored):
    fresh = golden.make()
    assert shape(fresh) == shape(stored), REGENERATE
    header, kept = fresh["header"], stored["header"]
    assert [c["field"] for c in header["chips"]] == [c["field"] for c in kept["chips"]]
    assert header["kernels"]["columns"] == kept["kernels"]["columns"]
    assert [stage for stage, _ in header["timings"]] == [stage for stage, _ in kept["timings"]]


def test_the_occupancy_limit_is_a_column_of_the_model(stored):
    (row,) = stored["header"]["kernels"]["rows"]
    assert ["occupancy_limit", "limited by"] in stored["header"]["kernels"]["columns"]
    assert row["cells"]["occupancy_limit"] == stored["resources"][row["kernel"]]["occupancy_limit"]


@pytest.mark.parametrize("which", ["build", "compare"])
def test_html_and_text_show_every_field_of_the_model(stored, which):
    header = stored["header"] if which == "build" else stored["compare"]["header"]
    page, text = render_html(stored), render_text(stored)
    for needle in header_texts(header):
        assert html.escape(needle, quote=True) in page, needle
        assert needle in text, needle

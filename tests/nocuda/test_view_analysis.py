"""The analysis in the view: cost bars, the register-pressure strip, diagnostics in the header, opcode hints."""

from __future__ import annotations

import copy
import html as _html
import json
import re

import pytest

import gpulab
from gpulab import f32
from gpulab.compiler.bundle import bundle_of, header_of
from gpulab.display import gutters
from gpulab.display.html import render_html


def promoted(a: f32, b: f32) -> f32:
    return a * 0.75 + b


def single(a: f32, b: f32) -> f32:
    return a * f32(0.75) + b


@pytest.fixture(scope="module")
def promoted_bundle():
    return bundle_of(gpulab.compile("map", promoted, target="sm_90"))


@pytest.fixture(scope="module")
def single_bundle():
    return bundle_of(gpulab.compile("map", single, target="sm_90"))


def _first_line(bundle):
    return next(p["first_line"] for p in bundle["panes"] if p["id"] == "python")


def test_the_header_names_the_float64_line_as_the_pane_prints_it_with_the_fix(promoted_bundle):
    (found,) = [d for d in promoted_bundle["header"]["diagnostics"] if d["kind"] == "float64"]
    shown = _first_line(promoted_bundle) + 1  # the return line
    assert found["key"] == "py:2" and found["line"] == f"Python line {shown}"
    assert found["message"].startswith(f"line {shown} computes in float64")
    assert "f32(0.75)" in found["fix"]
    html = render_html(promoted_bundle, uid="v")
    item = re.search(r'<li class="gl-dw" data-k="py:2">(.*?)</li>', html).group(1)
    assert "float64" in item and "Fix: write f32(0.75)" in item


def test_no_float64_diagnostic_once_the_constant_is_f32(single_bundle):
    assert not [d for d in single_bundle["header"]["diagnostics"] if d["kind"] == "float64"]
    assert 'class="gl-dw"' not in render_html(single_bundle, uid="v")


def test_the_python_pane_has_a_cost_bar_per_line_naming_its_classes(promoted_bundle):
    html = render_html(promoted_bundle, uid="v")
    python = html.split('class="gl-pane" data-pane="python"', 1)[1].split('class="gl-pane"', 1)[0]
    bars = re.findall(r'<span class="gl-g" title="([^"]*)"><span style="width:(\d+)%">', python)
    assert len(bars) == 2  # the def line (argument reads, conversions) and the return line
    (title, width), = [b for b in bars if "FP64" in b[0]]
    assert width == "100" and re.match(r"\d+ SASS instructions: ", title)
    assert max(int(w) for _, w in bars) == 100


def test_the_sass_pane_has_a_pressure_strip_with_the_peak_marked(promoted_bundle):
    peak = promoted_bundle["analysis"]["pressure"]["gpulab_map"]
    html = render_html(promoted_bundle, uid="v")
    sass = html.split('class="gl-pane" data-pane="sass"', 1)[1]
    assert len(re.findall(r'class="gl-p gl-peak"', sass)) == 1
    assert f"peak {peak['peak_live']} live at line {peak['peak_sass_line'] + 1}" in sass
    assert f"of {peak['registers']} registers live (the peak)" in sass
    # The header ties the pressure to the occupancy it shows.
    (pressure,) = promoted_bundle["header"]["pressure"]
    assert pressure["text"] == peak["summary"] and "% occupancy" in pressure["text"]
    assert "registers</span> <b>gpulab_map</b>" in html


def test_sass_opcodes_and_ptx_instructions_carry_the_guides_line(promoted_bundle):
    html = render_html(promoted_bundle, uid="v")
    # Each hint is written out once in the script's table; an opcode names its hint by number, and the
    # first opcode of each hint in a pane also carries it as its title (for a page with no script).
    table = json.loads(re.search(r"var H=(\[.*?\]);", html).group(1))
    assert any(h.startswith("F2F.F64.F32 (") for h in table), table
    assert any(h.startswith("ld.global") for h in table)
    assert len(set(table)) == len(table)
    for pane in ("ptx", "sass"):
        text = html.split(f'class="gl-pane" data-pane="{pane}"', 1)[1].split('class="gl-pane"', 1)[0]
        ops = re.findall(r'<span class="t-k gl-op" data-h="(\d+)"( title="([^"]*)")?>', text)
        assert ops and {int(n) for n, _, _ in ops} <= set(range(len(table)))
        first = {}
        for number, titled, title in ops:
            if number not in first:
                first[number] = True
                assert titled and _html.unescape(title) == table[int(number)]
            else:
                assert not titled
        # Every line the guide has a hint for names that hint; no other line names one.
        expected = gutters.opcode_hints(promoted_bundle, pane)
        rows = text.split('<span class="gl-l')[1:]
        named = {i: table[int(m.group(1))] for i, row in enumerate(rows) if (m := re.search(r'data-h="(\d+)"', row))}
        assert named == expected


def test_an_opcode_the_guide_does_not_know_says_so(promoted_bundle):
    bundle = copy.deepcopy(promoted_bundle)
    line = next(iter(bundle["analysis"]["opcodes"]["sass"]))
    bundle["analysis"]["opcodes"]["sass"][line] = "NOSUCHOP"
    html = render_html(bundle, uid="v")
    assert 'title="NOSUCHOP: not in gpulab&#x27;s instruction guide"' in html
    assert gpulab.explain("NOSUCHOP").known is False


def test_analysis_text_is_escaped(promoted_bundle):
    bundle = copy.deepcopy(promoted_bundle)
    bundle["analysis"]["diagnostics"][0]["message"] = "<script>alert(1)</script>"
    bundle["analysis"]["costs"]["python"][0]["computes"] = {"<b>": 3, "fp32": 1}
    bundle["header"] = header_of(bundle)
    html = render_html(bundle, uid="v")
    assert "<script>alert(1)" not in html and "&lt;script&gt;alert(1)" in html
    assert "<b>:" not in html and 'class="gl-k-other"' in html


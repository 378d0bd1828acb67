"""The build view made from a real build: MIME types, panes, links, escaping, where a build came from, SASS columns."""

import html
import re

from IPython.core.interactiveshell import InteractiveShell

import gpulab
from gpulab.compiler.build import STAGES
from gpulab.compiler.bundle import bundle_of
from gpulab.display.html import render_html
from gpulab.display.text import render_text
from gpulab.display.view import MIME_TYPE, BuildView


def scaled_sum(a: gpulab.f32, b: gpulab.f32) -> gpulab.f32:
    doubled = a * 2.0  # "<script>alert(1)</script>"
    return doubled + b


def test_bundle_of_a_real_build():
    build = gpulab.compile("reduce", scaled_sum, target="sm_90")
    bundle = BuildView(bundle_of(build))._repr_mimebundle_()
    assert set(bundle) == {MIME_TYPE, "text/html", "text/plain"}
    data = bundle[MIME_TYPE]
    assert [p["id"] for p in data["panes"]] == ["python", "cuda", "ptx", "sass"]
    assert data["stats"]["operator_calls"] == 0
    # The return line (pane line 3) is linked to SASS lines and to a CUDA line.
    sass_keys = [keys for keys in data["links"]["sass"].values() if "py:3" in keys]
    assert sass_keys and any(k.startswith("cu:") for keys in sass_keys for k in keys)
    html = bundle["text/html"]
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;" in html
    assert "__global__" in html and "scaled_sum" in bundle["text/plain"]


def test_build_displays_itself_in_ipython():
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "gpulab")
    build = gpulab.compile("map", scaled_sum, target="sm_80", lto=False)
    data, _ = shell.display_formatter.format(build)
    assert data[MIME_TYPE]["stats"]["operator_calls"] > 0 and "text/html" in data


def negated(x: gpulab.f32) -> gpulab.f32:
    return -x


def test_a_cached_build_says_where_it_came_from_instead_of_showing_old_timings():
    from gpulab import cache

    fresh = bundle_of(gpulab.compile("map", negated, target="sm_86"))
    assert fresh["version"] == 2 and fresh["build"]["origin"] == "built"
    stages = [t["stage"] for t in fresh["timings"]]
    assert stages == list(STAGES)  # every stage, in pipeline order, carried
    assert fresh["build"]["seconds"] == sum(t["seconds"] for t in fresh["timings"])
    assert "from memory" not in render_text(fresh) and "build: " in render_text(fresh)

    again = bundle_of(gpulab.compile("map", negated, target="sm_86"))
    assert again["build"]["origin"] == "memory"
    assert re.search(r"build: from memory \(built in [\d.]+ m?s at \d{4}-\d\d-\d\d \d\d:\d\d\)", render_text(again))

    cache.clear_cache(disk=False)  # as a new process finds it: on disk only
    loaded = bundle_of(gpulab.compile("map", negated, target="sm_86"))
    assert loaded["build"]["origin"] == "disk" and loaded["build"]["built_at"] == fresh["build"]["built_at"]
    # "built in" is the first build's time, all of it: its check and its disassembly too, not this process'
    assert loaded["timings"] == fresh["timings"] and loaded["build"]["seconds"] == fresh["build"]["seconds"]
    said = re.search(r"from the disk cache \(built in [\d.]+ m?s on \d{4}-\d\d-\d\d \d\d:\d\d\)", render_text(loaded))
    assert said and html.escape(said.group(0)) in render_html(loaded)
    assert "total" not in render_html(loaded) and "frontend " not in render_html(loaded)


def test_sass_is_shown_in_compact_aligned_columns():
    build = gpulab.compile("map", negated, target="sm_90")
    shown = next(p["text"] for p in bundle_of(build)["panes"] if p["id"] == "sass")
    assert len(shown.splitlines()) == len(build.sass.splitlines())  # line for line: the links still hold
    rows = [line for line in shown.splitlines() if line.startswith("/*")]
    assert len(rows) == build.sass_instructions
    # offset, predicate, opcode, operands: every opcode starts in one column, well before nvdisasm's ~35
    starts = {re.match(r"/\*[0-9a-f]+\*/ (@!?U?P\w+)? *", row).end() for row in rows}
    assert len(starts) == 1 and starts.pop() < 16
    assert not any(row.rstrip().endswith(";") for row in rows)
    guarded = next(row for row in rows if " @" in row)
    assert re.match(r"/\*[0-9a-f]+\*/ @!?U?P\w+ +[A-Z]", guarded)


def test_each_pane_has_a_checkbox_that_hides_it_without_a_script():
    bundle = bundle_of(gpulab.compile("map", negated, target="sm_90"))
    page = render_html(bundle, uid="v1")
    boxes = re.findall(r'<input type="checkbox" class="gl-t" id="v1-(\w+)" data-pane="(\w+)"( checked)?>', page)
    # The first view of a page that cannot measure itself (GitHub, nbviewer): Python and SASS side by side.
    assert [(pane, bool(checked)) for _, pane, checked in boxes] == [
        ("python", True), ("cuda", False), ("ptx", False), ("sass", True)]
    assert ':has(.gl-t[data-pane="sass"]:not(:checked)) .gl-pane[data-pane="sass"]{display:none}' in page
    # Panes a user chose (--show) all show.
    chosen = render_html(bundle_of(gpulab.compile("map", negated, target="sm_90"), panes=("python", "ptx", "sass")))
    assert re.findall(r'data-pane="(\w+)" checked', chosen) == ["python", "ptx", "sass"]
    bundle["panes"][0]["id"] = 'x"]{}</style><script>alert(1)</script>'  # an id that is not a word gets none
    page = render_html(bundle)
    assert "<script>alert" not in page and page.count('class="gl-t"') == 3


def offset_by_index(i: gpulab.i64, x: gpulab.f32) -> gpulab.f32:
    return x + gpulab.f32(i)


def test_the_header_names_the_iota_inputs_not_a_list_of_flags():
    plain = render_text(bundle_of(gpulab.compile("map", negated, target="sm_90")))
    assert "iota=none" in plain
    indexed = bundle_of(gpulab.compile("map", offset_by_index, target="sm_90", iota=(True, False)))
    for shown in (render_text(indexed), render_html(indexed)):
        assert "iota=0" in shown and "[True" not in shown and "False" not in shown


def test_a_saved_and_reopened_view_keeps_the_pipeline_order_of_its_stages():
    import nbformat

    fresh = bundle_of(gpulab.compile("map", negated, target="sm_90"))
    cell = nbformat.v4.new_code_cell(outputs=[nbformat.v4.new_output("display_data", data={MIME_TYPE: fresh})])
    saved = nbformat.writes(nbformat.v4.new_notebook(cells=[cell]))  # as JupyterLab saves: keys sorted
    reopened = nbformat.reads(saved, as_version=4).cells[0].outputs[0].data[MIME_TYPE]
    assert [t["stage"] for t in reopened["timings"]] == list(STAGES) != sorted(STAGES)
    assert render_text(reopened) == render_text(fresh) and render_html(reopened, uid="v") == render_html(fresh, uid="v")

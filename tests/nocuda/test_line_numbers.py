"""One line numbering: every output of a build names a Python line as the user sees it in their file or cell.

The diagnostics (their ``python_line`` and the line their message names),
``line_costs()``, the register summary, ``gpulab.diff``, the bundle's
header and the HTML view's Python pane must all agree, for a function in a
file and for a ``%%gpukernel`` cell (whose ``%%gpukernel`` line is line 1).
"""

from __future__ import annotations

import importlib.util
import re
import sys

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

import gpulab
from gpulab.compiler.analysis.pressure import pressure
from gpulab.compiler.bundle import bundle_of
from gpulab.display.analysis import diff_table
from gpulab.display.html import render_html

# A function that is not at the top of its file: its lines as the file numbers them are 6 to 8.
MODULE = '''import gpulab
from gpulab import f32

# a comment, so that the function starts below line 1

def scaled(x: f32, y: f32) -> f32:
    t = x * 2.0
    return t + y
'''
FIRST, SCALED, RETURN = 6, 7, 8  # the def, the float64 line and the return line, as the file numbers them

CELL = '''%%gpukernel map --target sm_90 --diff fma -o
from gpulab import f32

def scaled(x: f32, y: f32) -> f32:
    t = x * 2.0
    return t + y
'''
CELL_LINES = (4, 5, 6)  # the same three lines as the cell numbers them, the %%gpukernel line being line 1


def assert_one_numbering(build, diff, lines: tuple[int, int, int]) -> None:
    """Every output of ``build`` (and ``diff``, its SASS against another build) names the lines ``lines``."""
    first, scaled, last = lines
    function = set(range(first, last + 1))
    [float64] = [d for d in gpulab.diagnostics(build) if d.kind == "float64" and "`2.0`" in d.message]
    assert float64.python_line == scaled and float64.message.startswith(f"line {scaled} ")
    for diagnostic in gpulab.diagnostics(build):
        named = [int(n) for n in re.findall(r"\bline (\d+)", diagnostic.message.split("kernel.cu")[0])]
        assert diagnostic.python_line is None or diagnostic.python_line in function
        assert set(named) <= ({diagnostic.python_line} | function), diagnostic.message

    costs = gpulab.line_costs(build)
    assert [line.line for line in costs.python] == [first, scaled, last]
    assert [line.text.strip() for line in costs.python] == ["def scaled(x: f32, y: f32) -> f32:", "t = x * 2.0",
                                                             "return t + y"]
    assert f"line {scaled}: " in repr(costs)
    assert build.line_map.python_to_sass(scaled) and build.line_map.python_to_sass(last)  # the line map too

    [found] = pressure(build).values()
    peak = re.search(r"Python line (\d+)", found.summary())
    assert found.peak_python_line in function and int(peak.group(1)) == found.peak_python_line
    assert set(found.python_peaks) <= function

    assert set(diff.python) == {first, scaled, last}
    table = repr(diff_table(diff.as_dict()))
    assert {int(n) for n in re.findall(r"Python line (\d+)", table)} == {first, scaled, last}

    bundle = bundle_of(build)
    header = bundle["header"]
    shown = next(d for d in header["diagnostics"] if "`2.0`" in d["message"])
    assert shown["line"] == f"Python line {scaled}"
    assert {p["text"].split("Python line ")[1].rstrip(".") for p in header["pressure"]} == {str(found.peak_python_line)}
    # The HTML view prints, beside the pane row a key names, the number every output above uses.
    python = render_html(bundle, uid="v").split('class="gl-pane" data-pane="python"', 1)[1].split('class="gl-pane"', 1)[0]
    printed = dict(re.findall(r'data-k="(py:\d+)[^"]*"[^>]*><span class="gl-n">(\d+)</span>', python))
    assert printed[shown["key"]] == str(scaled)
    assert printed[header["pressure"][0]["key"]] == str(found.peak_python_line)
    cost_rows = {line["key"]: line["line"] for line in bundle["analysis"]["costs"]["python"]}
    assert {key: int(printed[key]) for key in cost_rows} == cost_rows


@pytest.fixture
def module_in_a_file(tmp_path):
    path = tmp_path / "kernels_at_line_6.py"
    path.write_text(MODULE)
    spec = importlib.util.spec_from_file_location("kernels_at_line_6", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)


def test_a_function_in_a_file_is_numbered_as_its_file_numbers_it(module_in_a_file):
    scaled = module_in_a_file.scaled
    assert scaled.__code__.co_firstlineno == FIRST
    build = gpulab.compile("map", scaled, target="sm_90")
    assert build.python_first_line == FIRST
    assert_one_numbering(build, gpulab.diff(build, gpulab.compile("map", scaled, target="sm_90", fma=False)),
                         (FIRST, SCALED, RETURN))


def test_a_gpukernel_cell_is_numbered_as_the_cell_numbers_it():
    shell = InteractiveShell()
    try:
        shell.run_cell("%load_ext gpulab")
        with capture_output():
            ran = shell.run_cell(CELL)
        result = ran.result
        assert result is not None, ran.error_in_exec
        assert result.build.python_first_line == CELL_LINES[0]
        assert_one_numbering(result.build, result.diff, CELL_LINES)
    finally:
        InteractiveShell.clear_instance()

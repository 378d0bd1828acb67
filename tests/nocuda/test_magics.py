"""The notebook layer in a real IPython shell: %load_ext gpulab, %%gpukernel, %gpulab, widgets."""

import re

import numpy as np
import pytest
from IPython.core.compilerop import CachingCompiler
from IPython.core.interactiveshell import InteractiveShell
from IPython.display import display
from IPython.utils.capture import capture_output

import gpulab
from gpulab.compiler.frontends import installed
from gpulab.display.view import MIME_TYPE
from gpulab.notebook import checks, session
from gpulab.notebook.result import KernelResult
from gpulab.notebook.widgets import WIDGETS_NOTE, DevicePicker, LabPanel, aot_targets, primitive_choices
from gpulab.device import current, devices, use
from gpulab.options import BuildOptions
from gpulab.registry import PRIMITIVES

NEEDS_MLIR = pytest.mark.skipif("numba-cuda-mlir" not in installed(),
                                reason="numba-cuda-mlir is not installed (pip install 'gpulab[mlir]')")
HAS_GPU = any(d.is_gpu for d in devices())

ADD_CELL = """%%gpukernel reduce --target sm_90{options}
def add(a: f32, b: f32) -> f32:
    return a + b
"""


def add_f32(a: gpulab.f32, b: gpulab.f32) -> gpulab.f32:
    return a + b


@pytest.fixture(scope="module")
def shell():
    shell = InteractiveShell.instance()
    for line in ("%load_ext gpulab", "from gpulab import f32, i32"):
        assert shell.run_cell(line, store_history=False).success
    return shell


@pytest.fixture(autouse=True)
def session_state():
    """Every test starts from the built-in %%gpukernel defaults and leaves them, and the device, as they were."""
    device = current()
    session.defaults.__init__()
    yield
    session.defaults.__init__()
    use(device)


def run(shell, cell):
    """Run ``cell``; return what it displayed, printed and wrote to stderr."""
    with capture_output() as captured:
        shell.run_cell(cell, store_history=False)
    return captured


def failed(shell, cell) -> str:
    """Run ``cell``, which must raise (so Run All stops there); return what it printed."""
    with capture_output() as captured:
        outcome = shell.run_cell(cell, store_history=False)
    assert outcome.error_in_exec is not None, captured.stdout + captured.stderr
    return re.sub(r"\x1b\[[0-9;]*m", "", captured.stdout + captured.stderr)  # a terminal shell prints it to stdout


def bundles(captured) -> list[dict]:
    return [output.data for output in captured.outputs if MIME_TYPE in output.data]


def texts(captured) -> str:
    return "\n".join(output.data.get("text/plain", "") for output in captured.outputs)


def test_gpukernel_defines_the_function_and_shows_the_build(shell):
    captured = run(shell, ADD_CELL.format(options=""))
    assert shell.user_ns["add"](1.0, 2.0) == 3.0
    (data,) = bundles(captured)
    # The live view, and the saved renderings for frontends without its model (docs/architecture.md).
    assert set(data) == {"application/vnd.jupyter.widget-view+json", MIME_TYPE, "text/html", "text/plain"}
    panes = {pane["id"]: pane for pane in data[MIME_TYPE]["panes"]}
    assert panes["python"]["first_line"] == 2  # the def is line 2 of the cell
    assert "__global__" in panes["cuda"]["text"] and ".entry" in panes["ptx"]["text"]
    assert re.search(r"\b(FADD|FFMA|LDG\.E|STG\.E|EXIT)\b", panes["sass"]["text"])
    assert data[MIME_TYPE]["target"] == "sm_90" and data[MIME_TYPE]["compare"] is None
    for needle in ("__global__", ".entry", "EXIT"):
        assert needle in data["text/html"]


def test_cell_text_is_escaped_in_html(shell):
    captured = run(shell, """%%gpukernel map --target sm_90 --show python,cuda
def tagged(x: f32) -> f32:
    # </pre><script>alert("gpulab")</script>
    return x * 2.0
""")
    (data,) = bundles(captured)
    assert [pane["id"] for pane in data[MIME_TYPE]["panes"]] == ["python", "cuda"]
    assert "<script>alert" not in data["text/html"]
    assert "&lt;script&gt;alert" in data["text/html"]


def test_compare_shows_the_call_only_in_the_ptx_linked_build(shell):
    captured = run(shell, ADD_CELL.format(options=" --compare"))
    (data,) = bundles(captured)
    lto, ptx = data[MIME_TYPE], data[MIME_TYPE]["compare"]
    assert lto["lto"] and lto["stats"]["operator_calls"] == 0
    assert not ptx["lto"] and ptx["stats"]["operator_calls"] > 0
    sass = {bundle["lto"]: next(p["text"] for p in bundle["panes"] if p["id"] == "sass") for bundle in (lto, ptx)}
    assert "CALL" in sass[False]
    table = texts(captured)
    calls = re.search(r"operator not inlined\s+(\d+)\s+(\d+)", table)
    assert calls and calls.group(1) == "0" and int(calls.group(2)) > 0
    total = re.search(r"CALLs in the SASS\s+(\d+)\s+(\d+)", table)
    assert total and int(total.group(2)) >= int(calls.group(2))
    assert "SASS instructions" in table and "registers gpulab_reduce" in table
    assert re.search(r"spill bytes gpulab_reduce\s+\d+ / \d+\s+\d+ / \d+", table), table


def _compiler(name):
    """IPython's cell compiler, or ipykernel's (cells are files in /tmp/ipykernel_<pid>/, outside the cwd)."""
    if name == "ipython":
        return CachingCompiler()
    return pytest.importorskip("ipykernel.compiler").XCachingCompiler()


@pytest.mark.parametrize("compiler", ["ipython", "ipykernel"])
@pytest.mark.parametrize(("body", "line", "text"), [
    ("def broken(a: f32, b: f32) -> f32:\n    total = a + b\n\n    return total.nope\n", 5, "return total.nope"),
    ("def noisy(a: f32, b: f32) -> f32:\n    print(a)\n    return a\n", 3, "print(a)"),
])
def test_errors_name_the_cell_line_without_a_traceback(shell, monkeypatch, compiler, body, line, text):
    monkeypatch.setattr(shell, "compile", _compiler(compiler))
    shown = failed(shell, "%%gpukernel reduce --target sm_90\n" + body)
    assert f"at cell line {line}:" in shown
    assert text in shown
    assert "Traceback" not in shown


def test_unknown_options_are_usage_errors(shell):
    captured = run(shell, "%%gpukernel reduce --show python,llvm\ndef never_run(a: f32, b: f32) -> f32:\n    return a\n")
    assert "UsageError" in captured.stderr and "--show" in captured.stderr
    assert "never_run" not in shell.user_ns


@pytest.mark.skipif(HAS_GPU, reason="the default target only applies without a GPU")
def test_without_a_gpu_it_compiles_for_sm_90_and_says_so_once(shell, monkeypatch):
    monkeypatch.setattr(session, "_said_default_target", False)
    cell = "%%gpukernel reduce\ndef add(a: f32, b: f32) -> f32:\n    return a + b\n"
    first, second = run(shell, cell), run(shell, cell)
    assert bundles(first)[0][MIME_TYPE]["target"] == "sm_90"
    assert "compiling for sm_90" in texts(first)
    assert "compiling for sm_90" not in texts(second)


def test_session_defaults_apply_to_gpukernel(shell):
    table = texts(run(shell, "%gpulab defaults --no-lto --show python,sass --target sm_80"))
    assert "sm_80" in table and "False" in table
    (data,) = bundles(run(shell, "%%gpukernel reduce\ndef add(a: f32, b: f32) -> f32:\n    return a + b\n"))
    assert data[MIME_TYPE]["target"] == "sm_80" and not data[MIME_TYPE]["lto"]
    assert [pane["id"] for pane in data[MIME_TYPE]["panes"]] == ["python", "sass"]
    run(shell, "%gpulab defaults --reset")
    assert session.defaults == session.SessionDefaults()


def test_gpulab_devices_cache_and_help(shell):
    listing = run(shell, "%gpulab devices")
    assert "host" in texts(listing)
    assert "<table" in listing.outputs[0].data["text/html"]
    assert all(layer in texts(run(shell, "%gpulab cache")) for layer in ("memory", "private", "builds"))
    assert "cleared the build cache" in run(shell, "%gpulab cache clear").stdout
    assert "%gpulab use host" in run(shell, "%gpulab help").stdout
    assert "the current device is host" in run(shell, "%gpulab use host").stdout


def test_run_without_a_gpu_claims_no_agreement(shell):
    captured = run(shell, "%%gpukernel reduce --target sm_90 --device host --run 1e3\n"
                          "def add_ints(a: i32, b: i32) -> i32:\n    return a + b\n")
    table = texts(captured)
    assert "reduce(add_ints) of 1,000 random int32 items" in table
    # Both columns ran the host backend: nothing was checked, and the table says so rather than "exact".
    assert re.search(r"check\s+not checked: no device ran it", table), \
        table + captured.stderr


def test_bench_option_shows_a_table_and_a_plot(shell):
    captured = run(shell, ADD_CELL.format(options=" --device host --bench 100,1000"))
    assert "reduce(add) on float32" in texts(captured), captured.stderr
    assert any("image/png" in output.data for output in captured.outputs)


def test_output_option_returns_a_result_that_displays_itself(shell):
    with capture_output() as captured:
        outcome = shell.run_cell(ADD_CELL.format(options=" -o --compare --device host --run 1e3"),
                                 store_history=True)
    result = outcome.result
    assert isinstance(result, KernelResult) and shell.user_ns["_"] is result
    assert result.build.options.lto and not result.compare.options.lto
    assert "not checked" in repr(result.run_check)
    (data,) = bundles(captured)  # shown once, as the cell's value
    assert data[MIME_TYPE]["compare"] is not None
    assert [type(output.data.get(MIME_TYPE)) for output in captured.outputs].count(dict) == 1
    with capture_output() as again:
        display(result)
    assert len(again.outputs) == 3  # compare table, view, run check


def test_device_picker_sets_the_device_and_the_target():
    picker = DevicePicker()
    assert picker.options[0][0] == "host: reference backend (numba on the CPU)"  # as notebook 06 says, not NumPy
    for target in aot_targets():
        picker.value = target
        assert session.defaults.target == target
    picker.value = gpulab.device.device("host")
    assert current() == "host" and session.defaults.target is None
    picker.value = "sm_100"  # a name as the list shows it, as notebook 07 sets it
    assert session.defaults.target == gpulab.compiler.target.parse_target("sm_100")
    with pytest.raises(gpulab.errors.DeviceError, match="the picker has no 'sm_1': choose one of host, "):
        picker.value = "sm_1"
    picker.value = "host"
    assert current() == "host" and session.defaults.target is None
    bundle = picker._repr_mimebundle_()
    assert WIDGETS_NOTE in bundle["text/plain"] and "application/vnd.jupyter.widget-view+json" in bundle


def test_lab_panel_runs_the_benchmark_on_the_host():
    panel = LabPanel(add_f32, primitive="reduce", exponents=(1, 2))
    assert panel.primitive.value == "reduce" and panel.dtype.value == "float32" and panel.dtype.disabled
    panel.use_device.value = False
    with capture_output() as captured:
        result = panel.run()
    assert [(row["device"], row["size"]) for row in result.rows] == [("host", 10), ("host", 100)]
    assert any("image/png" in output.data for output in captured.outputs)
    assert WIDGETS_NOTE in panel._repr_mimebundle_()["text/plain"]


def positive(x: gpulab.f32) -> bool:
    return x > 0


def saxpy_like(x: gpulab.f32, y: gpulab.f32) -> gpulab.f32:
    return 2 * x + y


def halves(x: gpulab.i32, y: gpulab.f32) -> gpulab.f32:
    return x * y


def test_every_kind_of_call_is_named_alike_in_the_table_and_the_view(shell):
    # On sm_80 ptxas emulates shuffles whose member mask is a register: calls the user did not write.
    captured = run(shell, "%%gpukernel reduce --target sm_80 --compare\n"
                          "def add_80(a: f32, b: f32) -> f32:\n    return a + b\n")
    (data,) = bundles(captured)
    table = texts(captured)
    for bundle, column in ((data[MIME_TYPE], 1), (data[MIME_TYPE]["compare"], 2)):
        total = re.search(r"CALLs in the SASS\s+(\d+)\s+(\d+)", table).group(column)
        assert int(total) == bundle["stats"]["sass_calls"] == sum(k["count"] for k in bundle["calls"])
        for kind in bundle["calls"]:
            assert re.search(rf"{kind['label']}\s+(\d+)\s+(\d+)", table).group(column) == str(kind["count"])
            assert f"{kind['count']} {kind['label']}" in data["text/html" if column == 1 else "text/plain"]


def test_lab_panel_infers_the_primitive_or_asks():
    assert primitive_choices(gpulab.Kernel(positive)) == ["filter"]
    assert primitive_choices(gpulab.Kernel(halves)) == ["map"]
    assert primitive_choices(gpulab.Kernel(saxpy_like)) == ["map", "reduce", "scan"]
    assert LabPanel(positive).primitive.value == "filter" and LabPanel(halves).primitive.value == "map"
    panel = LabPanel(saxpy_like, exponents=(1, 1))  # a map or a reduce: it runs neither until told
    assert panel.primitive.value is None
    with capture_output() as captured:
        assert panel.run() is None
    assert "`saxpy_like` (float32, float32) -> float32 fits map, reduce, scan: choose the primitive" in (
        captured.stdout + "".join(o.data.get("text/plain", "") for o in captured.outputs) + panel.ask)
    panel.primitive.value = "map"
    panel.use_device.value = False
    with capture_output():
        assert [row["device"] for row in panel.run().rows] == ["host"]


@pytest.mark.gpu
def test_compare_and_run_on_a_gpu(shell):
    use("cuda:0")
    captured = run(shell, "%%gpukernel reduce --compare --run 1e6\n"
                          "def add_ints(a: i32, b: i32) -> i32:\n    return a + b\n")
    table = texts(captured)
    assert re.search(r"time \(n=16,777,216, cuda:0\)\s+\S+ \S+\s+\S+ \S+", table), table + captured.stderr
    assert re.search(r"check\s+exact", table)


def run_numbered(shell, cell):
    """Run ``cell`` as a notebook does (numbered, in the history); return its number and what it showed."""
    number = shell.execution_count
    with capture_output() as captured:
        shell.run_cell(cell, store_history=True)
    return number, captured


def frames(text: str) -> list[str]:
    """The frame headers of a traceback IPython printed (``Cell In[3], line 4`` or ``File /x.py:12, in f()``)."""
    plain = re.sub(r"\x1b\[[0-9;]*m", "", text)
    return re.findall(r"^(?:Cell In\[\d+\], line \d+.*|File [^\n]+)$", plain, re.M)


@pytest.mark.parametrize(("statement", "error"), [
    ("raise ValueError('boom')", "ValueError: boom"),
    ("undefined_helper()", "NameError: name 'undefined_helper' is not defined"),
])
def test_errors_of_the_cells_own_code_show_as_for_any_cell(shell, statement, error):
    number, captured = run_numbered(shell, f"%%gpukernel map --target sm_90\ndef fine(x: f32) -> f32:\n"
                                           f"    return x\n{statement}\n")
    shown = re.sub(r"\x1b\[[0-9;]*m", "", captured.stdout + captured.stderr)
    assert error in shown and not bundles(captured)
    assert frames(shown) == [f"Cell In[{number}], line 4"], shown  # the cell's own frame, none of gpulab's
    assert "gpulab" not in shown


def test_an_undefined_annotation_is_a_name_error_of_the_cell(shell):
    number, captured = run_numbered(shell, "%%gpukernel map --target sm_90\ndef typed(x: f33) -> f33:\n"
                                           "    return x\n")
    shown = re.sub(r"\x1b\[[0-9;]*m", "", captured.stdout + captured.stderr)
    assert "NameError: name 'f33' is not defined" in shown
    assert frames(shown) == [f"Cell In[{number}], line 2"], shown


def test_tracebacks_name_the_running_cell(shell):
    first, _ = run_numbered(shell, "1 + 1")
    number, captured = run_numbered(shell, "%%gpukernel map --target sm_90\ndef fine(x: f32) -> f32:\n"
                                           "    return x\n1 / 0\n")
    assert number == first + 1
    assert frames(captured.stdout + captured.stderr) == [f"Cell In[{number}], line 4"]


@pytest.mark.parametrize(("body", "error", "line"), [
    # one input for a function of two
    ("def pair(x: f32, y: f32) -> f32:\n    return x + y\n\ngpulab.map(pair, np.arange(3, dtype=np.float32))",
     "KernelTypeError: map calls `pair` with 1 argument(s), but it takes 2 (x, y)", 3),
    # a numba typing error, through the Python API
    ("def worded(x: f32) -> f32:\n    return x + 'one'\n\ngpulab.compile('map', worded, target='sm_90')",
     "FrontendError: numba could not compile `worded`: there is no `+` for (f32, str)", 4),
    # an input of another type than the function takes: refused on the host as on a device
    ("def ints(a: i32, b: i32) -> i32:\n    return a + b\n\ngpulab.reduce(ints, np.full(4, 0.5, np.float32), 0)",
     "ConversionError: the input holds float32, but `ints` takes int32: convert it first (x.astype(np.int32))",
     None),  # the call's line is the one to fix: no line of its own
    # a misspelt primitive
    ("def one(x: f32) -> f32:\n    return x\n\ngpulab.compile('mapp', one, target='sm_90')",
     "ArgumentError: unknown primitive 'mapp'; choose one of map, reduce, scan, filter", None),
])
def test_gpulab_errors_of_the_python_api_show_the_users_frames_only(shell, body, error, line):
    number, captured = run_numbered(shell, f"import gpulab\nimport numpy as np\n{body}\n")
    shown = re.sub(r"\x1b\[[0-9;]*m", "", captured.stdout + captured.stderr)
    assert error in shown, shown
    assert frames(shown) == [f"Cell In[{number}], line 6"], shown  # the call's line; none of gpulab's frames
    if line is not None:
        assert re.search(rf'File "[^"]+", line {line}\n', shown), shown  # the message's own: the function's line
    assert "site-packages" not in shown and "gpulab/" not in shown, shown


def test_a_typing_error_shows_the_expression_and_gpulab_type_names(shell):
    message = failed(shell, '%%gpukernel map --target sm_90\ndef bad_types(x: f32, y: f32) -> f32:\n'
                            '    z = x\n    return y + "one"\n')
    assert message.startswith("FrontendError: numba could not compile `bad_types`: there is no `+` for (f32, str)")
    assert 'numba tried add(f32, str "one")' in message
    assert "it has add for (f32, f32) -> f32" in message
    assert "float32" not in message and "unicode_type" not in message
    lines = message.splitlines()
    at = lines.index("  at cell line 4:")
    assert lines[at + 1:at + 3] == ['    return y + "one"', "           ^"]  # the caret under the expression
    assert "Traceback" not in message and "gpulab/" not in message


@pytest.mark.parametrize(("body", "line", "needle", "caret"), [
    ("def counted(x: f32) -> f32:\n    return len(x)\n", 3, "there is no `len()` for (f32)", "    return len(x)"),
    # x * 2 is a float64: a Python int widens f32 (the message names the type numba inferred)
    ("def dotted(x: f32) -> f32:\n    y = x * 2\n    return y.nope\n", 4, "f64 has no attribute `nope`",
     "    return y.nope"),
    ("def compared(x: f32) -> bool:\n    return x < 'a'\n", 3, "there is no `<` for (f32, str)", "    return x < 'a'"),
    # indexing a number (a scalar where a captured array was meant): the subscript's line, not the def's
    ("def indexed(i: i32) -> f32:\n    j = i + 1\n    return i[j]\n", 4,
     "there is no indexing `[]` for (i32, i64): i32 is one value, not an array", "    return i[j]"),
])
def test_typing_errors_point_at_the_expression(shell, body, line, needle, caret):
    message = failed(shell, "%%gpukernel filter --target sm_90\n" + body if "bool" in body
                     else "%%gpukernel map --target sm_90\n" + body)
    assert needle in message, message
    lines = message.splitlines()
    at = lines.index(f"  at cell line {line}:")
    assert lines[at + 1] == caret and lines[at + 2] == "           ^", message


def test_missing_types_say_the_magics_option(shell):
    message = failed(shell, "%%gpukernel map --target sm_90\ndef untyped(x):\n    return x\n")
    assert "KernelTypeError: `untyped` has no element types" in message and "--types" in message
    assert "types=" not in message and "at cell line 2:" in message


def test_no_boundscheck_compiles_the_captured_reads_unchecked_and_run_still_checks(shell):
    assert shell.run_cell("import numpy as np\nsamples = np.arange(100, dtype=np.float32)",
                          store_history=False).success
    cell = """%%gpukernel map --target sm_90{options}
def neighbours(i: i64) -> f32:
    return samples[i] + samples[i + 1]
"""
    shell.run_cell("from gpulab import i64", store_history=False)
    checked, unchecked = (bundles(run(shell, cell.format(options=options)))[0][MIME_TYPE]
                          for options in ("", " --no-boundscheck"))
    assert "ATOMG.E.CAS" in checked["panes"][3]["text"] and "ATOMG" not in unchecked["panes"][3]["text"]
    assert unchecked["options"].get("boundscheck") is False
    shown = failed(shell, cell.format(options=" --no-boundscheck --device host --run 1e3"))  # random indices
    assert re.search(r"`neighbours` read samples\[-?\d+\], outside `samples` of shape \(100,\)", shown)


@pytest.mark.parametrize(("body", "name", "line", "caret"), [
    ("def uses(x: f32) -> f32:\n    y = x + 1\n    return helper(y)\n", "helper", 4, "           ^"),
    ("def shifted(x: f32) -> f32:\n    return x + offset\n", "offset", 3, "               ^"),
])
def test_an_undefined_name_in_the_function_is_a_name_error_at_its_line(shell, body, name, line, caret):
    message = failed(shell, "%%gpukernel map --target sm_90\n" + body)
    assert message.startswith(f"KernelNameError: name `{name}` is not defined"), message  # not ImpureKernelError
    lines = message.splitlines()
    at = lines.index(f"  at cell line {line}:")
    assert lines[at + 2] == caret, message
    assert "Traceback" not in message and "gpulab/" not in message


def test_a_method_that_is_a_math_function_says_which_to_call(shell):
    message = failed(shell, "%%gpukernel map --target sm_90\ndef rooted(x: f32) -> f32:\n    return x.sqrt()\n")
    assert message.startswith("ImpureKernelError: a kernel may not call the method `.sqrt()`"), message
    assert "call math.sqrt(x) instead" in message and "  at cell line 3:" in message
    assert "Traceback" not in message and "gpulab/" not in message


@pytest.mark.parametrize(("cell", "hint"), [
    ("%%gpukernel map --target sm_90\ndef typo(x: gpulab.f23) -> gpulab.f32:\n    return x\n", "did you mean gpulab.f32?"),
    ("gpulab.LabPanel", "it is in gpulab.notebook.widgets: from gpulab.notebook.widgets import LabPanel"),
])
def test_a_misspelt_or_misplaced_gpulab_name_says_which_is_meant(shell, cell, hint):
    run(shell, "import gpulab")
    number, captured = run_numbered(shell, cell)
    shown = re.sub(r"\x1b\[[0-9;]*m", "", captured.stdout + captured.stderr)
    assert "UnknownNameError: module 'gpulab' has no attribute" in shown and hint in shown, shown  # an AttributeError
    assert [frame.split(",")[0] for frame in frames(shown)] == [f"Cell In[{number}]"], shown  # none of gpulab's


def _run_axpb(shell, options):
    return run(shell, f"%%gpukernel map --target sm_90 {options}\ndef axpb(x: f32) -> f32:\n"
                      "    return x * f32(2) + f32(1)\n")


@pytest.mark.parametrize("options, labels", [("--diff-target sm_80", ("sm_90", "sm_80")),
                                             ("--diff fma", ("fma vs no fma",)),
                                             ("--no-lto --diff lto", ("PTX link vs LTO",)),
                                             pytest.param("--compare-frontends", ("numba-cuda vs numba-cuda-mlir",),
                                                          marks=NEEDS_MLIR),
                                             pytest.param("--frontend numba-cuda-mlir --compare-frontends",
                                                          ("numba-cuda-mlir vs numba-cuda",), marks=NEEDS_MLIR)])
def test_gpukernel_diff_shows_the_two_builds_aligned(shell, options, labels):
    captured = _run_axpb(shell, options)
    assert not captured.stderr, captured.stderr
    shown = [o.data for o in captured.outputs]
    assert len(shown) == 2  # the view, then the diff
    table = shown[1]["text/html"]
    assert all(label in table for label in labels), table[:400]


@pytest.mark.parametrize("options, says", [("--diff speed", "invalid choice: 'speed' (choose from 'fma', 'lto')"),
                                           ("--diff-target sm_2", "--diff-target: 'sm_2'"),
                                           ("--diff fma --diff-target sm_80", "give one of --diff, --diff-target and"),
                                           ("--compare-frontends --diff lto", "give one of --diff, --diff-target and"),
                                           ("--frontend clang", "invalid choice: 'clang' (choose from 'numba-cuda', "
                                                                "'numba-cuda-mlir')")])
def test_gpukernel_diff_refuses_bad_values_clearly(shell, options, says):
    captured = _run_axpb(shell, options)
    assert "UsageError" in captured.stderr and says in captured.stderr, captured.stderr
    assert not captured.outputs


# ---------------------------------------------------------------- build options travel whole


@pytest.fixture
def recorded(monkeypatch):
    """The options of every call the run check makes and of every bench the compare timing runs (each still runs)."""
    seen = {"call": [], "bench": []}
    real_call, real_bench = checks.call, checks.bench

    def recording_call(*args, **kwargs):
        seen["call"].append(kwargs["options"])
        return real_call(*args, **kwargs)

    def recording_bench(*args, **kwargs):
        seen["bench"].append(kwargs["options"])
        return real_bench(*args, **kwargs)

    monkeypatch.setattr(checks, "call", recording_call)
    monkeypatch.setattr(checks, "bench", recording_bench)
    return seen


MULTIPLY_ADD_CELL = "%%gpukernel map --target sm_90 --device host {options}\n" \
                    "def multiply_add(x: f32, y: f32, z: f32) -> f32:\n    return x * y + z\n"


@pytest.mark.parametrize(("flag", "option", "value"), [("--no-fma", "fma", False), ("--no-lto", "lto", False)])
def test_run_checks_the_build_the_cell_names(shell, recorded, flag, option, value):
    captured = run(shell, MULTIPLY_ADD_CELL.format(options=f"{flag} --run 1e3"))
    assert "check" in "".join(o.data.get("text/plain", "") for o in captured.outputs), captured.stderr
    assert recorded["call"] and all(getattr(options, option) is value for options in recorded["call"])


def test_compare_timing_keeps_every_option_but_the_link(recorded):
    checks.compare_seconds(gpulab.Kernel(add_f32), "reduce", gpulab.device.device("host"), 100, initial=np.float32(0),
                           options=BuildOptions(boundscheck=False, fma=False))
    assert recorded["bench"] == [BuildOptions(boundscheck=False, fma=False, lto=True),
                                 BuildOptions(boundscheck=False, fma=False, lto=False)]


def test_diff_and_bench_build_the_cell_options(shell, monkeypatch):
    benched = []
    real_bench = gpulab.notebook.result.bench
    monkeypatch.setattr(gpulab.notebook.result, "bench", lambda *a, **k: benched.append(k["options"]) or
                        real_bench(*a, **k))
    with capture_output() as captured:
        result = shell.run_cell(MULTIPLY_ADD_CELL.format(options="-o --no-fma --diff lto --bench 100"),
                                store_history=True).result
    assert result is not None, captured.stderr
    assert not result.build.options.fma and result.build.options.lto
    assert result.diff.labels == ("LTO", "PTX link")  # only the link differs: both are built without FMA
    assert benched == [BuildOptions(fma=False)]


def test_the_device_picker_and_the_cell_options_make_one_build(shell):
    picker = DevicePicker()
    (sm_80,) = [target for _, target in picker.options if target == gpulab.Target(8, 0)]
    picker.value = sm_80
    captured = run(shell, "%%gpukernel reduce --no-fma --no-lto\ndef add(a: f32, b: f32) -> f32:\n    return a + b\n")
    (data,) = [o.data[MIME_TYPE] for o in captured.outputs if MIME_TYPE in o.data]
    assert data["target"] == "sm_80" and not data["lto"] and data["options"]["fma"] is False, captured.stderr
    assert data["options"]["boundscheck"] is True


def test_session_defaults_are_options_and_a_cell_changes_them(shell):
    run(shell, "%gpulab defaults --no-fma --target sm_80")
    assert session.defaults.options == BuildOptions(fma=False) and session.defaults.target == gpulab.Target(8, 0)
    assert session.defaults.cell_options(PRIMITIVES["scan"], fma=True, exclusive=True) == BuildOptions(exclusive=True)
    captured = run(shell, "%%gpukernel reduce --exclusive\ndef add(a: f32, b: f32) -> f32:\n    return a + b\n")
    assert "UsageError" in captured.stderr and "exclusive is not an option of reduce" in captured.stderr


def test_order_names_a_cells_tree_and_builds_without_contraction(shell):
    captured = run(shell, ADD_CELL.format(options=" --order portable"))
    (data,) = bundles(captured)
    assert data[MIME_TYPE]["options"]["order"] == "portable" and data[MIME_TYPE]["options"]["fma"] is False
    cuda = next(pane["text"] for pane in data[MIME_TYPE]["panes"] if pane["id"] == "cuda")
    assert "#define PORTABLE_ORDER 1" in cuda and "fold_blocks" in cuda
    refused = run(shell, "%%gpukernel map --order portable\ndef twice(x: f32) -> f32:\n    return x * f32(2)\n")
    assert "UsageError" in refused.stderr and "order is not an option of map" in refused.stderr

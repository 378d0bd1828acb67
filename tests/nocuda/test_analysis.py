"""Why is it slow: per-line costs, register pressure, calls, diagnostics, the instruction guide and diffs.

Every build is real (numba, NVRTC, nvJitLink, nvdisasm) for an explicit
target, so no GPU is needed. Each diagnostic has a kernel that triggers it
and one that does not; builds are shared per module.
"""

import json
import math
import re

import numpy as np
import pytest

import gpulab
from gpulab import f32, f64
from gpulab.compiler import disasm, flags, link, listing, nvrtc
from gpulab.compiler.artifacts import Artifact
from gpulab.compiler.analysis import CALL_KINDS, calls, diagnostics, explain, line_costs, pressure
from gpulab.compiler.analysis.bundle import analysis_bundle
from gpulab.compiler.analysis.calls import classify_calls
from gpulab.compiler.analysis.dataflow import computing
from gpulab.compiler.analysis.diff import BuildDiff
from gpulab.errors import ArgumentError
from gpulab.compiler.analysis.model import analyse
from gpulab.compiler.bundle import bundle_of
from gpulab.display.text import render_text
from gpulab.notebook.formatters import diagnostics_mimebundle, diff_mimebundle, line_costs_mimebundle


def promoted(a: f32, b: f32) -> f32:
    return a * 0.75 + b


def single(a: f32, b: f32) -> f32:
    return a * f32(0.75) + b


def divide(a: f32, b: f32) -> f32:
    return a / b


def sine64(a: f64) -> f64:
    return math.sin(a)


def sine32(a: f32) -> f32:
    return math.sin(a)


def add(a: f32, b: f32) -> f32:
    return a + b


def add64(a: f64, b: f64) -> f64:
    return a + b


def log_add_exp(a: f64, b: f64) -> f64:
    m = max(a, b)
    return m + math.log(math.exp(a - m) + math.exp(b - m))


def widen(a: f32) -> f64:
    return a * 2.0


def smaller(a: f32, b: f32) -> f32:
    return a if a < b else b


def body_line(fn, k: int = 1) -> int:
    """Line ``k`` of ``fn``'s body as its file numbers it (every output names a Python line so)."""
    return fn.__code__.co_firstlineno + k


def _compile(primitive, fn, **options):
    return gpulab.compile(primitive, fn, target=options.pop("target", "sm_90"), **options)


@pytest.fixture(scope="module")
def build_of():
    """Compile on first use, then share: ``build_of("map", fn, lto=False)``."""
    builds = {}

    def get(primitive, fn, **options):
        key = (primitive, fn.__name__, tuple(sorted(options.items())))
        if key not in builds:
            builds[key] = _compile(primitive, fn, **dict(options))
        return builds[key]
    return get


def _kinds(found, kind):
    return [d for d in found if d.kind == kind]


# ---------------------------------------------------------------- listing and the line map


def test_listing_numbers_instructions_as_the_sass_pane(build_of):
    build = build_of("map", single)
    rows = analyse(build).rows
    shown = build.sass.splitlines()
    assert len(rows) == build.sass_instructions
    for row in rows:
        assert build.line_map.sass_offsets[row.instruction.line] == row.instruction.offset
        assert row.instruction.opcode in shown[row.instruction.line]
    # nvdisasm -lrm count gives every instruction a count, but for the padding after the last one
    assert {row.instruction.stem for row in rows if row.live is None} <= {"NOP"}
    assert 10 * sum(row.live is not None for row in rows) >= 9 * len(rows)  # 108 of a map's 120 on sm_90


# ---------------------------------------------------------------- per-line costs


def test_a_line_computes_what_it_asks_and_the_inlining_is_told_apart(build_of):
    build = build_of("map", single)
    costs = gpulab.line_costs(build)
    body = next(line for line in costs.python if "return" in line.text)
    assert body.computes["fp32"] > 0 and "global" not in body.computes
    # What hovering the line used to light: every SASS line sharing one of its keys (its CUDA call sites too).
    links = build.line_map.links(build.python_source, build.source)
    keys = set(links["python"][str(body.line - build.python_first_line)])
    lit = sum(1 for line_keys in links["sass"].values() if keys & set(line_keys))
    own = sum(1 for r in analyse(build).rows if r.python_line == body.line)
    assert own == body.total
    assert lit > 5 * own, "the line's own instructions are a small part of what shares its keys"
    assert costs.inlined["global"] > 0 and costs.inlined["int"] > 0, "loads, stores and address arithmetic"
    assert sum(costs.inlined.values()) + sum(costs.kernel.values()) + sum(line.total for line in costs.python) \
        == build.sass_instructions


def test_the_def_line_holds_the_conversion_to_the_declared_type(build_of):
    costs = line_costs(build_of("map", promoted))
    definition = costs.python[0]
    assert definition.text.startswith("def promoted") and definition.computes["conv"] > 0


def test_address_arithmetic_supports_and_arithmetic_computes(build_of):
    instructions = [r.instruction for r in analyse(build_of("map", single)).rows]
    values = computing(instructions)
    wide = [i for i, ins in enumerate(instructions) if ins.opcode.startswith("IMAD.WIDE")]
    fused = [i for i, ins in enumerate(instructions) if ins.stem == "FFMA"]
    assert wide and fused
    assert not values & set(wide), "IMAD.WIDE only builds addresses here"
    assert set(fused) <= values


def test_cuda_lines_count_every_instruction_with_a_cuda_line(build_of):
    build = build_of("reduce", add)
    costs = line_costs(build)
    with_line = sum(1 for r in analyse(build).rows if r.cuda_line is not None)
    assert sum(line.total for line in costs.cuda) == with_line
    assert any("gpulab_op" in line.text for line in costs.cuda)


def test_cost_tables_show_in_ipython_and_escape_source_text(build_of):
    shown = line_costs_mimebundle(line_costs(build_of("map", smaller)))
    assert "a &lt; b" in shown["text/html"] and "a < b" not in shown["text/html"]
    assert "a < b" in shown["text/plain"] and "kernel.cu" in shown["text/plain"]
    assert "peak live" in shown["text/plain"]


# ---------------------------------------------------------------- register pressure


def test_pressure_names_the_peak_and_the_next_occupancy_step(build_of):
    build = build_of("map", single)
    found = pressure(build)["gpulab_map"]
    assert found.registers == build.resources["gpulab_map"].registers <= 32
    assert 0 < found.peak_live <= found.registers
    assert found.occupancy.fraction == 1.0 and found.more[0] == 33 and found.more[1].fraction == 0.75
    assert re.match(r"\d+ registers: 100% occupancy; at 33 it would drop to 75%\.", found.summary())
    assert found.python_peaks and max(found.python_peaks.values()) <= found.peak_live


def test_pressure_of_a_register_limited_kernel_says_how_many_would_help(build_of):
    found = pressure(build_of("reduce", add, lto=False))["gpulab_reduce"]
    assert found.occupancy.limited_by == "registers"
    fewer, better = found.fewer
    assert fewer < found.registers and better.fraction > found.occupancy.fraction
    assert f"at {fewer} it would rise to" in found.summary()


# ---------------------------------------------------------------- calls


def _shuffle_kernel(target):
    """A kernel of our own with a shuffle in divergent code (ptxas emulates it on sm_80)."""
    source = r'''
    extern "C" __global__ void fold(const float* in, float* out) {
        float v = in[threadIdx.x];
        if (v > 0.0f) {
            for (int d = 16; d > 0; d /= 2) v += __shfl_down_sync(0xffffffffu, v, d);
        }
        if (threadIdx.x == 0) *out = v;
    }
    '''
    options = gpulab.BuildOptions(lto=False, lineinfo=False)
    ptx = nvrtc.compile_kernel(source, flags.nvrtc(options, target), output="ptx")
    empty = Artifact("ptx", f".version 8.0\n.target {target.arch}\n.address_size 64\n".encode(), "operator")
    cubin = link.link(ptx, empty, target, options).cubin
    return listing.parse(disasm.disassemble_with_live_registers(cubin)[0])


@pytest.mark.parametrize("target, expected", [("sm_80", ["emulated"]), ("sm_90", [])])
def test_emulated_shuffles_are_classified(target, expected):
    instructions = _shuffle_kernel(gpulab.Target(*divmod(int(target[3:]), 10)))
    found = classify_calls(instructions, [None] * len(instructions), [None] * len(instructions))
    assert [c.kind for c in found] == expected
    if expected:
        assert found[0].target.startswith("__cuda_sm70_shflsync") and found[0].label == "emulated warp intrinsic"


def test_the_sass_shows_every_function_a_kernel_calls_and_only_those(build_of):
    called = {i.function for i in _shuffle_kernel(gpulab.Target(8, 0))}
    assert called == {"fold", "__cuda_sm70_shflsync_down_p"}
    assert len({i.function for i in listing.parse(build_of("reduce", add, lto=False).sass)}) == 2  # kernel, operator

    build = build_of("reduce", add, target="sm_86")
    whole = disasm._run_on_cubin("nvdisasm", ["-c", "-gi"], build.cubin)
    everything = listing.parse(whole)
    uncalled = sorted({i.function for i in everything} - {"gpulab_reduce"})
    assert uncalled and all(name.startswith("__cuda_sm70_") for name in uncalled)
    assert {i.function for i in listing.parse(build.sass)} == {"gpulab_reduce"}
    assert build.sass_instructions == sum(i.function == "gpulab_reduce" for i in everything)
    assert f"Not shown: {len(uncalled)} function(s) in the cubin that no kernel calls" in build.sass
    assert all(name in build.sass for name in uncalled)


def test_every_call_of_a_real_build_has_a_kind(build_of):
    for build in (build_of("reduce", add, target="sm_80"), build_of("reduce", add, lto=False)):
        found = calls(build)
        assert sum(c.count for c in found) == build.sass_calls
        assert all(c.kind in CALL_KINDS and c.kind != "other" for c in found)
    assert {c.kind for c in calls(build_of("reduce", add, lto=False))} == {"operator"}


# ---------------------------------------------------------------- diagnostics, each with a trigger and a non-trigger


def test_float64_promotion_names_the_line_the_literal_and_the_ratio(build_of):
    found = _kinds(diagnostics(build_of("map", promoted)), "float64")
    assert len(found) == 1
    [diagnostic] = found
    assert diagnostic.python_line == body_line(promoted) and diagnostic.severity == "warning"
    assert "`0.75`" in diagnostic.message and "f32(0.75)" in diagnostic.fix
    assert diagnostic.evidence["fp64_per_fp32"] == gpulab.Target(9, 0).limits.fp64_per_fp32 == 0.5
    assert diagnostic.evidence["fp64_instructions"] > 0 and "DFMA" in " ".join(diagnostic.evidence["instructions"])
    on_ada = _kinds(diagnostics(build_of("map", promoted, target="sm_89")), "float64")
    assert "1/64" in on_ada[0].message


def test_float32_constant_and_float64_kernels_have_no_float64_diagnostic(build_of):
    assert not _kinds(diagnostics(build_of("map", single)), "float64")
    assert not _kinds(diagnostics(build_of("map", sine64)), "float64"), "float64 was asked for"


def test_float64_inside_a_float32_math_routine_is_information(build_of):
    [diagnostic] = _kinds(diagnostics(build_of("map", sine32)), "float64")
    assert diagnostic.severity == "info" and "`math.sin`" in diagnostic.message


def test_slow_path_division_call(build_of):
    [call] = _kinds(diagnostics(build_of("map", divide)), "call")
    assert call.evidence["call_kind"] == "slow-path" and call.python_line == body_line(divide)
    assert "__cuda_sm3x_div_rn" in call.message
    assert not _kinds(diagnostics(build_of("map", single)), "call")


def test_math_library_call(build_of):
    [call] = _kinds(diagnostics(build_of("map", sine64)), "call")
    assert call.evidence["call_kind"] == "math" and call.python_line == body_line(sine64)


def test_operator_not_inlined(build_of):
    [call] = _kinds(diagnostics(build_of("reduce", add, lto=False)), "call")
    assert call.evidence["call_kind"] == "operator" and "LTO" in call.fix
    assert not _kinds(diagnostics(build_of("reduce", add)), "call")


def test_spills_under_the_scan_register_cap(build_of):
    [spill] = _kinds(diagnostics(build_of("scan", log_add_exp)), "spill")
    assert spill.severity == "warning" and spill.evidence["spill_stores"] > 0
    assert spill.evidence["register_cap"] == 64
    assert spill.python_line in (body_line(log_add_exp), body_line(log_add_exp, 2))
    assert spill.evidence["local_instructions"] > 0
    assert not _kinds(diagnostics(build_of("scan", add64)), "spill")


def test_a_called_operator_fits_under_the_register_cap(build_of):
    # In a PTX link ptxas refused a called operator needing more registers
    # than the entry's __launch_bounds__ allow; under the cap it spills.
    build = build_of("scan", log_add_exp, lto=False)
    assert build.resources["gpulab_scan"].registers <= 64
    [spill] = _kinds(diagnostics(build), "spill")
    assert spill.evidence["register_cap"] == 64 and spill.evidence["spill_stores"] > 0


def test_stack_frame_without_spills(build_of):
    [stack] = _kinds(diagnostics(build_of("map", sine32)), "stack")
    assert stack.evidence["stack_bytes"] > 0 and stack.evidence["calls"] == 0 and stack.python_line == body_line(sine32)
    [called] = _kinds(diagnostics(build_of("map", log_add_exp, lto=False)), "stack")
    assert called.evidence["calls"] > 0
    assert not _kinds(diagnostics(build_of("map", single)), "stack")


def test_strided_and_misaligned_inputs_are_not_vectorised(build_of):
    build = build_of("map", single)
    items = np.zeros(4096, np.float32)
    strided = _kinds(diagnostics(build, inputs=[items[::2], items[:2048]]), "unvectorised")
    assert len(strided) == 1 and "`a` is strided" in strided[0].message
    assert strided[0].evidence["load_widths"]["128 bits"] > 0, "the vector path is in the build"
    misaligned = _kinds(diagnostics(build, inputs=[items[1:2049], items[:2048]]), "unvectorised")
    assert "not a multiple of 16 bytes" in misaligned[0].message
    assert not _kinds(diagnostics(build, inputs=[items[:2048], items[2048:]]), "unvectorised")


def test_a_wider_result_halves_the_input_vectors(build_of):
    [narrow] = _kinds(diagnostics(build_of("map", widen)), "unvectorised")
    assert narrow.severity == "info" and "8 bytes per vector" in narrow.message
    assert not _kinds(diagnostics(build_of("map", single)), "unvectorised")


def test_64_bit_indexing_and_its_cost(build_of):
    wide, narrow = build_of("map", single, index_bits=64), build_of("map", single)
    [found] = _kinds(diagnostics(wide), "index64")
    assert not _kinds(diagnostics(narrow), "index64")
    high = lambda b: sum(1 for r in analyse(b).rows if {"X", "EX"} & set(r.instruction.modifiers))  # noqa: E731
    assert found.evidence["wide_integer_instructions"] > 0 and high(wide) > high(narrow)


def test_occupancy_limited_by_registers(build_of):
    [found] = _kinds(diagnostics(build_of("map", log_add_exp, lto=False)), "occupancy")
    assert found.severity == "warning" and "limited by registers" in found.message and "LTO" in found.fix
    assert "caps registers" not in found.fix  # the map's __launch_bounds__ caps nothing
    [capped] = _kinds(diagnostics(build_of("reduce", add, lto=False)), "occupancy")
    assert capped.severity == "info" and "caps registers at 128 on purpose" in capped.fix
    assert not _kinds(diagnostics(build_of("map", single)), "occupancy")


def test_an_occupancy_the_template_sets_is_information_and_says_so(build_of):
    """The reduce's 72 registers come from its own code: nothing the user wrote, so information, not a warning."""
    build = build_of("reduce", add)
    [found] = _kinds(diagnostics(build), "occupancy")
    assert found.severity == "info" and found.python_line is None
    assert "gpulab's template sets" in found.message and "not your function: for information" in found.message
    assert found.fix.startswith("nothing to change in your function")
    assert "keep fewer values live" not in found.fix
    [header] = [d for d in bundle_of(build)["header"]["diagnostics"] if d["kind"] == "occupancy"]
    assert header["line"] == "template" and "(template, info)" in render_text(bundle_of(build))


def test_diagnostics_show_as_a_table(build_of):
    shown = diagnostics_mimebundle(diagnostics(build_of("map", promoted)))
    assert "f32(0.75)" in shown["text/plain"] and "<table" in shown["text/html"]
    assert diagnostics_mimebundle(diagnostics(build_of("map", single)))["text/plain"].startswith("no diagnostics")


# ---------------------------------------------------------------- the instruction guide


@pytest.mark.parametrize("text, klass, words", [
    ("FFMA", "fp32", "multiply-add"),
    ("LDG.E.128", "global", "16 bytes"),
    ("SHFL.DOWN", "sync", "lane"),
    ("BAR.SYNC.DEFER_BLOCKING", "sync", "every thread of the block"),
    ("ISETP.GE.AND.EX", "int", "high halves"),
    ("@P0 IMAD.WIDE.U32 R2, R3, 0x4, R4 ;", "int", "address"),
    ("LOP3.LUT", "int", "lookup table"),
    ("ld.global.v4.f32", "global", "vector of four"),
    ("fma.rn.f64", "fp64", "multiply-add"),
    ("setp.lt.s32", "int", "less than"),
])
def test_explain(text, klass, words):
    found = explain(text)
    assert found.known and found.klass == klass and words in str(found)
    assert all(meaning for _, meaning in found.modifiers)


def test_unknown_opcodes_and_modifiers_say_so():
    assert not explain("FROB.X").known and "not in gpulab's instruction guide" in str(explain("FROB"))
    assert "unknown modifier" in str(explain("FADD.WOBBLY"))


@pytest.mark.parametrize("value, said", [(None, "None (a NoneType)"), (123, "123 (an int)"),
                                         (b"FFMA", "b'FFMA' (a bytes)")])
def test_explain_says_what_to_pass(value, said):
    """``explain(None)``, ``explain(123)``: AttributeError 'strip'; ``explain(b"FFMA")``: TypeError."""
    with pytest.raises(ArgumentError, match=re.escape(f'takes an instruction as text, such as "FFMA" or '
                                                      f'"ld.global.v4.f32", not {said}')):
        explain(value)


# ---------------------------------------------------------------- diffs


def test_diff_says_what_to_pass_and_how_to_build_for_a_target(build_of):
    """``diff(build, None)`` and ``diff(build, "sm_80")`` raised AttributeError 'key'."""
    build = build_of("map", single)
    with pytest.raises(ArgumentError, match=re.escape("compares two builds (what gpulab.compile returns); b is None")):
        gpulab.diff(build, None)
    with pytest.raises(ArgumentError, match=re.escape("a is 'sm_80' (a str)")):
        gpulab.diff("sm_80", build)
    with pytest.raises(ArgumentError, match=re.escape("b is 'sm_80' (a str). To compare this build with the same "
                                                      "function built for sm_80, build it there: gpulab.diff(build, "
                                                      "gpulab.compile('map', single, target='sm_80'))")):
        gpulab.diff(build, "sm_80")


def test_diff_fma_against_no_fma(build_of):
    fused, separate = build_of("map", single), build_of("map", single, fma=False)
    found = gpulab.diff(fused, separate)
    assert isinstance(found, BuildDiff) and found.labels == ("fma", "no fma")
    assert sum(1 for r in found.rows if r.a_line is not None) == fused.sass_instructions
    assert sum(1 for r in found.rows if r.b_line is not None) == separate.sass_instructions
    assert any("FFMA" in r.a_text and r.tag != "equal" for r in found.rows)
    assert any("FMUL" in r.b_text and r.tag != "equal" for r in found.rows)
    shown = diff_mimebundle(found)
    assert "FFMA" in shown["text/plain"] and "no fma" in shown["text/html"] and "<BuildDiff fma vs no fma" in repr(found)


def test_diff_targets_links_and_versions(build_of):
    by_target = gpulab.diff(build_of("map", single, target="sm_80"), build_of("map", single))
    assert by_target.labels == ("sm_80", "sm_90")
    by_link = gpulab.diff(build_of("reduce", add), build_of("reduce", add, lto=False))
    assert by_link.labels == ("LTO", "PTX link")
    assert by_link.calls[0].get("operator", 0) == 0 and by_link.calls[1]["operator"] > 0
    versions = gpulab.diff(build_of("map", single), build_of("map", promoted))
    assert versions.classes["fp64"][0] == 0 < versions.classes["fp64"][1]
    assert versions.python[body_line(promoted)][1]["fp64"] > 0
    json.dumps(versions.as_dict())


# ---------------------------------------------------------------- the view's data


def test_analysis_bundle_is_json_and_covers_the_sass(build_of):
    build = build_of("map", promoted)
    bundle = json.loads(json.dumps(analysis_bundle(build)))
    assert len(bundle["sass"]) == build.sass_instructions
    assert set(bundle["sass_fields"]) == {"class", "role", "python_line", "cuda_line", "live"}
    assert {d["kind"] for d in bundle["diagnostics"]} >= {"float64"}
    opcodes = {r.instruction.opcode for r in analyse(build).rows}
    assert set(bundle["guide"]["sass"]) == opcodes and bundle["guide"]["ptx"]
    assert bundle["pressure"]["gpulab_map"]["summary"].startswith(f"{build.resources['gpulab_map'].registers} registers")


def test_an_instruction_after_a_branch_label_keeps_the_line_before_it():
    """nvdisasm notes a line where the line table's row changes, in address order; a label is no change."""
    raw = ('\t.section\t.text.k,"ax",@progbits\n'
           '\t//## File "/x.py", line 7\n'
           '        /*0000*/                   ISETP.GE.AND P0, PT, R0, R1, PT ;\n'
           '        /*0010*/              @P0 BRA `(.L_x_1) ;\n'
           '.L_x_1:\n'
           '        /*0020*/                   LDG.E R2, desc[UR4][R2.64] ;\n'
           '\t.section\t.text.other,"ax",@progbits\n'
           '        /*0000*/                   EXIT ;\n')
    chains = {text.strip().split()[1]: chain for _, text, chain in listing.shown_lines(raw) if "/*" in text}
    assert chains["LDG.E"] == (listing.Location("/x.py", 7),)
    assert chains["EXIT"] == ()  # a new function starts with no line

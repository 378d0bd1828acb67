"""Measured samples and counts on a build's lines, from profiles recorded on an H100 (issue 43).

tests/golden/profiles/<case> holds, per case of tests/golden/profile_cases.py, what gpulab.profile saved on the
GPU: the build it ran (a cache entry) and Nsight Compute's pages. Here, with no GPU, each is loaded, its SASS
disassembled again, and its samples put on the lines; the per-line sums are re-derived from the CSV page itself.
"""

import csv
import gzip
import io
import json
import sys
from collections import Counter
from pathlib import Path

import pytest

import gpulab
from gpulab.compiler.analysis.model import analyse
from gpulab.display.html import render_html
from gpulab.errors import ProfilerError
from gpulab.profiler import load
from gpulab.profiler.lines import match
from gpulab.profiler.report import REASONS
from gpulab.profiler.report import COLUMNS

GOLDEN = Path(__file__).parents[1] / "golden"
sys.path.insert(0, str(GOLDEN))
import profile_cases as cases  # noqa: E402

PROFILES = GOLDEN / "profiles"
RECORDED = sorted(path.name for path in PROFILES.iterdir()) if PROFILES.is_dir() else []


@pytest.fixture(scope="module")
def loaded():
    found = {}

    def get(name):
        if name not in found:
            found[name] = load(PROFILES / name)
        return found[name]

    return get


def test_every_recording_is_of_a_case():
    assert RECORDED and set(RECORDED) <= set(cases.CASES)


def _page_sums(name, build):
    """Samples per Python line, summed straight from the source page: each row's address less its kernel's first,
    looked up in the build's listing (the kernel's own function only)."""
    text = gzip.decompress((PROFILES / name / "source.csv.gz").read_bytes()).decode()
    rows = {r.instruction.offset: r for r in analyse(build).rows if r.instruction.function == build.kernels[0]}
    sums, base, header, in_kernel = Counter(), None, None, 0
    for row in csv.reader(io.StringIO(text)):
        if row and row[0] == "Kernel Name":
            header, base = None, None
            continue
        if header is None:
            header = row
            continue
        if len(row) != len(header):
            continue
        cells = dict(zip(header, row))
        address = int(cells["Address"], 16)
        base = address if base is None else base
        found = rows.get(address - base)
        samples = int(cells[COLUMNS["samples"]])
        if found is not None:
            in_kernel += samples
            sums[found.python_line if found.python_line is not None else found.role] += samples
    return sums, in_kernel


@pytest.mark.parametrize("name", RECORDED)
def test_per_line_sums_are_the_pages_own_and_add_up_to_the_kernels_total(loaded, name):
    profile = loaded(name)
    measures = profile.measures()
    sums, in_kernel = _page_sums(name, profile.build)
    assert measures.total.samples > 0
    for line, measure in measures.python.items():
        assert measure.samples == sums[line], line
    assert measures.inlined.samples == sums["inlined"] and measures.template.samples == sums["kernel"]
    on_lines = sum(m.samples for m in measures.python.values()) + measures.inlined.samples + measures.template.samples
    # the kernel's own count of its samples, a figure of the raw page apart from the per-instruction columns
    kernel_total = sum(launch.report.metrics["smsp__pcsamp_sample_count"] for launch in profile.launches)
    assert on_lines == measures.total.samples == in_kernel == kernel_total


@pytest.mark.parametrize("name", RECORDED)
def test_every_profiled_instruction_is_the_builds_at_its_offset(loaded, name):
    profile = loaded(name)
    for launch in profile.launches:
        matched = match(launch.build, launch.report)
        assert len(matched) == len(launch.report.instructions)
        for item, instruction in zip(matched, launch.report.instructions):
            assert item.row.instruction.opcode == instruction.opcode


def test_a_report_of_another_build_is_refused(loaded):
    other = loaded("map-exp64").build
    report = loaded("read-strided").launches[0].report
    with pytest.raises(ProfilerError, match="another build|does not have|match no function"):
        match(other, report)


def row(profile, n: int) -> int:
    """The Python line (as its file numbers it) of row ``n`` of the profile's Python pane."""
    return profile.build.python_first_line + n - 1


def test_a_map_waits_on_the_first_line_that_uses_its_input_and_computes_its_exp_on_line_3(loaded):
    profile = loaded("map-exp64")
    python = profile.measures().python
    first_use, exp = python[row(profile, 2)], python[row(profile, 3)]
    assert first_use.samples > exp.samples and first_use.top_reason == "long_sb"
    assert exp.counters["executed"] > 10 * first_use.counters["executed"]  # the exp's instructions, on line 3
    assert profile.verdict.startswith(f"{first_use.samples / profile.measures().total.samples:.0%} of stall samples "
                                      f"on line {row(profile, 2)} (`y = x * 2.0`): long scoreboard")
    assert "on the loads of gpulab's template (kernel.cu line" in profile.verdict


def test_a_wait_on_a_gathers_loads_is_named_where_it_lands_and_where_the_loads_are(loaded):
    profile = loaded("gather")
    line = row(profile, 2)
    waits = profile.measures().waits
    assert sum(count for (source, _), count in waits["template"].items() if source == line) > 0
    assert f"on the loads of line {line} (`return table[j]`)" in profile.verdict


def test_a_strided_read_touches_more_sectors_per_request_than_a_contiguous_one(loaded):
    strided = loaded("read-strided").measures().python[row(loaded("read-strided"), 2)]
    contiguous = loaded("read-contiguous").measures().python[row(loaded("read-contiguous"), 2)]
    assert strided.sectors_per_request >= 4 * contiguous.sectors_per_request  # 32 sectors a request against 8
    assert [d.kind for d in loaded("read-strided").diagnostics].count("uncoalesced") == 1
    assert "uncoalesced" not in [d.kind for d in loaded("read-contiguous").diagnostics]


def test_a_maps_global_accesses_are_measured_whatever_code_path_loads_them(loaded):
    # Notebook 10 prints these: a strided view's loads are inlined with the operator, a contiguous one's are the
    # template's own, so only the kernel's total has both.
    strided, contiguous = (loaded(f"map-axpb-{layout}").measures().total for layout in ("strided", "contiguous"))
    assert strided.sectors_per_request > strided.ideal_sectors_per_request  # 6 sectors a request against 4
    assert contiguous.sectors_per_request == contiguous.ideal_sectors_per_request


def test_a_gather_is_uncoalesced_on_its_line(loaded):
    [found] = [d for d in loaded("gather").diagnostics if d.kind == "uncoalesced"]
    assert found.python_line == row(loaded("gather"), 2) and found.evidence["sectors_per_request"] > 8
    assert "sectors of 32 bytes per memory request" in found.message


@pytest.mark.parametrize("name", ["scan-add32", "filter-positive"])
def test_the_look_back_wait_is_named(loaded, name):
    [wait] = [d for d in loaded(name).diagnostics if d.kind == "lookback"]
    assert 0.05 <= wait.evidence["share"] < 1 and "look-back" in wait.message


def test_the_local_memory_diagnostic_shows_the_traffic_it_caused(loaded):
    # The H100's linker reported no spill figures for this build, so it is the stack diagnostic that fires.
    [local] = [d for d in loaded("scan-spill").diagnostics if d.kind in ("spill", "stack")]
    assert local.evidence["measured"]["local_bytes"] > 1_000_000 and "bytes of local-memory traffic" in local.message


def test_a_bank_conflicted_shared_store_is_found(loaded):
    found = [d for d in loaded("filter-positive").diagnostics if d.kind == "bank-conflict"]
    [store] = [d for d in found if d.evidence["kind"] == "stores"]
    assert store.evidence["passes"] == 2 * store.evidence["needed"] and "conflict in the banks" in store.message
    assert not [d for d in loaded("map-single").diagnostics if d.kind == "bank-conflict"]


@pytest.mark.parametrize("name", RECORDED)
def test_tables_and_the_bundle_show_it(loaded, name):
    profile = loaded(name)
    lines, kernels = profile.lines(), profile.kernels()
    assert lines.rows and kernels.rows and "measured on" in kernels.caption
    bundle = profile.bundle()
    json.dumps(bundle)
    assert bundle["header"]["measured"]["verdict"] == profile.verdict
    page = render_html(bundle)
    assert 'class="gl-m"' in page and "stall sample" in page


def test_a_saved_profile_loads_again_the_same(loaded, tmp_path):
    profile = loaded("reduce-add32")
    again = gpulab.profiler.load(profile.save(tmp_path / "again"))
    assert again.lines().rows == profile.lines().rows and again.verdict == profile.verdict


NOTEBOOK = Path(__file__).parents[2] / "notebooks" / "10-why-is-it-slow.ipynb"
NOTEBOOK_CASES = (("float64", "before: `a * 0.75 + b`", "map-promoted"), ("float64", "after: `a * f32(0.75) + b`", "map-single"),
                  ("spill", "before: float64, two `exp`", "scan-spill"), ("spill", "fix 2: float32", "scan-log-add-exp32"),
                  ("strided", "before: strided view `x[::2]`", "map-axpb-strided"),
                  ("strided", "after: contiguous", "map-axpb-contiguous"))


def notebook_rows() -> list[list[str]]:
    """Notebook 10's table of what an H100 measured, made from the recorded profiles of its kernels."""
    rows = []
    for case, build, name in NOTEBOOK_CASES:
        profile = load(PROFILES / name)
        found = profile.measures()
        where = max([*found.python, "inlined", "template"], key=lambda at: found.at(at).samples)
        measure = found.at(where)
        place = (f"line {where - profile.build.python_first_line + 1}" if isinstance(where, int)
                 else "the template" if where == "template" else "code inlined around it")
        metrics = profile.launches[0].metrics()
        rows.append([case, build, f"{measure.samples / found.total.samples:.0%} on {place}, "
                     f"{REASONS[measure.top_reason][0]}", f"{metrics['duration'] / 1000:.1f} µs",
                     f"{metrics['dram_bytes_per_second'] / 1e9:,.0f} GB/s", f"{metrics['achieved_occupancy']:.0f}%"])
    return rows


def test_notebook_10_carries_what_the_h100_measured():
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    table = next("".join(c["source"]) for c in cells if "| fix | build | most stall samples" in "".join(c["source"]))
    shown = [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in table.splitlines()
             if line.startswith("| ") and not line.startswith("| fix")]
    assert shown == notebook_rows()


def test_a_folder_without_a_profile_says_so(tmp_path):
    with pytest.raises(ProfilerError, match="holds no saved profile"):
        gpulab.profiler.load(tmp_path)

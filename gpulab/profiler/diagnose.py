"""Diagnostics from measurements: the build's own (:mod:`gpulab.compiler.analysis.diagnostics`) with what was
measured behind them, and those only a measurement finds.

``spill``, ``stack``   gain the local-memory traffic measured and the stall samples on ``LDL``/``STL``
``unvectorised``       gains the sectors per request of the template's loads
``uncoalesced``        a Python line whose global accesses touch more sectors per request than consecutive
                       addresses would (a strided read, a gather)
``lookback``           the stall samples of a scan or filter spent waiting for earlier tiles' prefixes
``bank-conflict``      shared-memory accesses that the banks serialise
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace

from ..compiler.analysis.diagnostics import SEVERITIES, Diagnostic, Diagnostics, diagnostics
from .lines import LineMeasures, Measure
from .report import REASONS

UNCOALESCED_RATIO = 4.0
"""A line's global accesses are uncoalesced when they touch this many times the sectors consecutive addresses
would. Not 2: the template gives each thread two or four neighbouring items, so a warp's one load of
``x[i]`` spans twice the sectors of consecutive threads' items, and the same thread's next load reads the
rest from L1."""
LOOKBACK_SHARE = 0.05
"""The share of stall samples in the look-back from which it is worth a line."""
CONFLICT_SHARE = 0.1
"""Passes beyond those their width needs, as a share of those, from which shared-memory accesses are worth a
line."""

_LOOKBACK = re.compile(r"\bbool look_back\(")


def measured_diagnostics(build, found: LineMeasures) -> Diagnostics:
    """The build's diagnostics with measured evidence, then the measured-only ones; warnings first."""
    result = Diagnostics(_with_evidence(d, build, found) for d in diagnostics(build))
    for check in (_uncoalesced, _lookback, _bank_conflicts):
        result.extend(check(build, found))
    result.sort(key=lambda d: (SEVERITIES.index(d.severity), d.python_line or 0))
    return result


def _share(part: int, found: LineMeasures) -> str:
    total = found.total.samples
    return f"{part / total:.0%}" if total else "0%"


def _with_evidence(diagnostic: Diagnostic, build, found: LineMeasures) -> Diagnostic:
    if diagnostic.kind in ("spill", "stack"):
        waiting = sum(item.measure.reasons.get("long_sb", 0) for item in found.rows
                      if item.waits_on is not None and item.waits_on.instruction.stem == "LDL")
        measured = {"local_bytes": found.total.local_bytes, "samples_waiting_on_local": waiting}
        note = (f" Measured: {found.total.local_bytes:,} bytes of local-memory traffic; "
                f"{_share(waiting, found)} of stall samples wait on its LDL.")
        return replace(diagnostic, message=diagnostic.message + note,
                       evidence={**diagnostic.evidence, "measured": measured})
    if diagnostic.kind == "unvectorised" and found.inlined.sectors_per_request is not None:
        per_request, ideal = found.inlined.sectors_per_request, found.inlined.ideal_sectors_per_request
        note = f" Measured: the template's loads touch {per_request:.1f} sectors per request (ideal {ideal:.1f})."
        return replace(diagnostic, message=diagnostic.message + note,
                       evidence={**diagnostic.evidence, "measured": {"sectors_per_request": per_request,
                                                                      "ideal_sectors_per_request": ideal}})
    return diagnostic


def _uncoalesced(build, found: LineMeasures) -> list[Diagnostic]:
    result = []
    for line, measure in sorted(found.python.items()):
        per_request, ideal = measure.sectors_per_request, measure.ideal_sectors_per_request
        if per_request is None or not ideal or per_request < UNCOALESCED_RATIO * ideal:
            continue
        text = build.python_text(line).strip()
        result.append(Diagnostic(
            "uncoalesced", "warning", line,
            f"line {line} (`{text}`) touches {per_request:.1f} sectors of 32 bytes per memory request, "
            f"where consecutive addresses would touch {ideal:.1f}: a warp's 32 reads are spread over memory, and "
            f"{measure.counters['sectors'] - measure.counters['ideal_sectors']:,} sectors were moved for nothing; "
            f"{_share(measure.samples, found)} of stall samples are on this line.",
            "let consecutive items read consecutive addresses (x[i], not x[i * k]); for a gather, sort or group "
            "the indices so that neighbours read neighbours",
            {"sectors_per_request": per_request, "ideal_sectors_per_request": ideal,
             "requests": measure.counters["requests"], "sectors": measure.counters["sectors"],
             "samples": measure.samples}))
    return result


def lookback_lines(source: str) -> range | None:
    """The lines of ``kernel.cu`` (1-based) of the look-back's ``look_back`` function, or ``None``."""
    lines = source.splitlines()
    start = next((n for n, text in enumerate(lines) if _LOOKBACK.search(text)), None)
    if start is None:
        return None
    depth, opened = 0, False
    for number in range(start, len(lines)):
        depth += lines[number].count("{") - lines[number].count("}")
        opened = opened or "{" in lines[number]
        if opened and depth <= 0:
            return range(start + 1, number + 2)
    return None


def _lookback(build, found: LineMeasures) -> list[Diagnostic]:
    span = lookback_lines(build.source)
    if span is None:
        return []
    sources = build.sources()
    waiting = Measure()
    for item in found.rows:
        keys = {sources.key(location.file, location.line) for location in item.row.instruction.chain}
        if any(key and key.startswith("cu:") and int(key[3:]) in span for key in keys):
            waiting.add(item.measure)
    total = found.total.samples
    if not total or waiting.samples < LOOKBACK_SHARE * total:
        return []
    reasons = ", ".join(f"{REASONS.get(reason, (reason,))[0]} {count / waiting.samples:.0%}"
                        for reason, count in waiting.reasons.most_common(3))
    return [Diagnostic(
        "lookback", "info", None,
        f"{_share(waiting.samples, found)} of stall samples are in the look-back (kernel.cu lines {span.start}-"
        f"{span.stop - 1}): tiles waiting for the prefixes of the tiles before them ({reasons}).",
        "nothing to change in your function: this is the single-pass scan's wait for its predecessors, "
        "shorter when each tile's own work (its loads, the operator) takes longer than a round trip to memory",
        {"samples": waiting.samples, "share": waiting.samples / total, "reasons": dict(waiting.reasons),
         "cuda_lines": [span.start, span.stop - 1]})]


def _bank_conflicts(build, found: LineMeasures) -> list[Diagnostic]:
    by_place: dict[tuple, Counter] = {}
    for item in found.rows:
        counters = item.measure.counters
        if counters["shared_executed"]:
            row = item.row
            kind = "stores" if row.instruction.stem.startswith("ST") else "loads"
            by_place.setdefault((row.python_line, row.cuda_line, kind), Counter()).update(counters)
    result = []
    for (python_line, cuda_line, kind), counters in sorted(by_place.items(), key=lambda i: -i[1]["shared_conflicts"]):
        executed, needed, extra = counters["shared_executed"], counters["shared_passes_needed"], \
            counters["shared_conflicts"]
        if extra < CONFLICT_SHARE * needed:
            continue
        where = (f"line {python_line}" if python_line is not None
                 else f"gpulab's template (kernel.cu line {cuda_line}, `{_cuda_text(build, cuda_line)}`)")
        result.append(Diagnostic(
            "bank-conflict", "warning" if python_line is not None else "info", python_line,
            f"shared-memory {kind} at {where} conflict in the banks: they take {(needed + extra) / executed:.1f} "
            f"passes where their width needs {needed / executed:.1f} ({extra:,} passes more over {executed:,} "
            "executions).",
            "pad the shared array's rows so that a warp's threads fall in different banks" if python_line is not None
            else "nothing to change in your function: it is the template's layout of shared memory",
            {"passes": needed + extra, "needed": needed, "executed": executed, "cuda_line": cuda_line,
             "kind": kind}))
    return result


def _cuda_text(build, line) -> str:
    source = build.source.splitlines()
    return source[line - 1].strip() if line and 0 < line <= len(source) else ""

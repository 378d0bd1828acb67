"""A build as the view's JSON bundle (``docs/bundle.md``): what every renderer of a build reads.

The bundle carries its header as a model (``header``): the chips, the kernel
table and the stage timings as text, already formatted. The HTML and text
renderings (``gpulab.display``) and the JupyterLab extension draw that model
and compute nothing of their own, so a field added here shows everywhere.
"""

from __future__ import annotations

from datetime import datetime

from ..errors import ArgumentError
from .analysis.bundle import analysis_bundle
from .analysis.calls import CALL_KINDS, classify_calls, count_by_kind
from .build import STAGES, Build
from .listing import parse
from .occupancy import occupancy
from .sass_columns import sass_columns

VERSION = 2
PANES = ("python", "cuda", "ptx", "sass")
_TITLES = {"python": "Python", "cuda": "CUDA C++", "ptx": "PTX", "sass": "SASS"}


def bundle_of(build: Build, *, panes=PANES, compare: Build | None = None, measured: dict | None = None) -> dict:
    """Return the JSON bundle of ``build`` (see ``docs/bundle.md``).

    Parameters
    ----------
    build : Build
        What to show.
    panes : sequence of str
        Which panes, in order, of ``python``, ``cuda``, ``ptx``, ``sass``.
    compare : Build, optional
        The same function linked the other way, shown behind a toggle.
    measured : dict, optional
        What the GPU measured on the build's lines (``Profile.measured``, docs/bundle.md "Measured").

    Raises
    ------
    ValueError
        For an unknown pane.
    """
    unknown = set(panes) - set(PANES)
    if unknown:
        raise ArgumentError(f"unknown pane(s) {', '.join(sorted(unknown))}; choose from {', '.join(PANES)}")
    texts = {"python": build.python_source, "cuda": build.source, "ptx": build.ptx,
             "sass": sass_columns(build.sass)}
    first_lines = {"python": build.python_first_line}
    links = build.line_map.links(build.python_source, build.source)
    timings = {**build.timings, "disasm": build.disassembled().seconds}
    bundle = {
        "version": VERSION,
        "name": build.name,
        "primitive": build.primitive,
        "target": build.target.arch,
        "lto": build.options.lto,
        "key": build.key,
        "options": build.options.as_dict(),
        "panes": [
            {"id": pane, "title": _TITLES[pane], "language": "cuda" if pane == "cuda" else pane,
             "text": texts[pane], "first_line": first_lines.get(pane, 1)}
            for pane in panes
        ],
        "links": {pane: links[pane] for pane in panes},
        "resources": {name: _with_occupancy(build, r) for name, r in build.resources.items()},
        "timings": [{"stage": stage, "seconds": seconds} for stage, seconds in _in_order(timings)],
        "build": {"origin": build.origin, "seconds": sum(timings.values()),
                  "built_at": (datetime.fromtimestamp(build.built_at).isoformat(" ", "minutes")
                               if build.built_at is not None else None)},
        "stats": {"sass_instructions": build.sass_instructions, "sass_calls": build.sass_calls,
                  "operator_calls": build.operator_calls, "ptx_lines": len(build.ptx.splitlines())},
        "calls": call_kinds(build),
        "analysis": analysis_bundle(build, panes),
        "compare": bundle_of(compare, panes=panes) if compare is not None else None,
    }
    if measured is not None:
        bundle["measured"] = measured
    bundle["header"] = header_of(bundle)
    return bundle


def call_kinds(build: Build) -> list[dict]:
    """The SASS's ``CALL`` instructions by kind, as the analysis classifies them (docs/bundle.md).

    Read from the SASS text alone: no second disassembly for what the view counts.
    """
    found = parse(build.sass)
    unknown = [None] * len(found)
    counts = count_by_kind(classify_calls(found, unknown, unknown))
    return [{"kind": kind, "label": label, "count": counts[kind]} for kind, label in CALL_KINDS.items()
            if counts.get(kind)]


def _in_order(timings: dict) -> list[tuple[str, float]]:
    """Stage timings in pipeline order (any stage :data:`STAGES` does not name comes last)."""
    return sorted(timings.items(), key=lambda item: STAGES.index(item[0]) if item[0] in STAGES else len(STAGES))


def _with_occupancy(build, resources) -> dict:
    """A kernel's resources, with its theoretical occupancy on the build's target."""
    found = occupancy(build.target, build.geometry.block_threads, resources.registers, resources.shared_bytes)
    return {**resources.as_dict(), **found.as_dict()}


KERNEL_COLUMNS = (("kernel", "kernel"), ("registers", "registers"), ("shared_bytes", "shared"),
                  ("stack_bytes", "stack"), ("spill_stores", "spill stores"), ("spill_loads", "spill loads"),
                  ("occupancy", "occupancy"), ("occupancy_limit", "limited by"))
"""The header's kernel table: (field, column title)."""


def header_of(bundle: dict) -> dict:
    """The header model of a bundle: what every renderer shows above the panes, as text.

    Returns
    -------
    dict
        ``title``; ``chips`` (``field``, ``text``, ``title``, ``tone`` of
        ``on``, ``off``, ``warn`` or ``""``); ``options`` (one line);
        ``kernels`` (``columns`` of ``[field, title]``, ``rows`` of ``kernel``,
        ``cells`` by field and the fields to ``warn`` about); ``timings``
        (``[stage, text]`` in pipeline order, ``total`` last); ``pressure``
        (per kernel: ``kernel``, ``text``, the peak's ``key``, ``sass_line``);
        ``diagnostics`` (``kind``, ``severity``, ``key`` of its Python line,
        ``line``: that line as its file or cell numbers it, ``message``, ``fix``);
        with a ``measured`` section, ``measured`` (``verdict``, the ``key`` of the Python line it names or
        null, ``kernels``: per launch ``kernel`` and ``text``), and the diagnostics are the measured ones.
    """
    stats, lto = bundle["stats"], bundle["lto"]
    chips = [
        _chip("primitive", bundle["primitive"], "primitive"),
        _chip("target", bundle["target"], "target architecture"),
        _chip("lto", "LTO on" if lto else "LTO off",
              "linked with link-time optimisation" if lto else "PTX-linked (no LTO)", "on" if lto else "off"),
        _chip("sass_instructions", _count(stats["sass_instructions"], "SASS instruction"), "SASS instructions"),
        _chip("sass_calls", _calls_text(stats["sass_calls"], bundle.get("calls") or []),
              "CALL instructions in the SASS, by kind", "warn" if stats["sass_calls"] else ""),
        _chip("ptx_lines", _count(stats["ptx_lines"], "PTX line"), "lines of the linked PTX"),
        _chip("key", f"key {bundle['key'][:10]}", f"cache key {bundle['key']}"),
    ]
    rows = [{"kernel": name, "cells": _kernel_cells(name, resources),
             "warn": [field for field in ("spill_stores", "spill_loads") if resources.get(field)]}
            for name, resources in bundle["resources"].items()]
    seconds = [(t["stage"], t["seconds"]) for t in bundle["timings"]]
    timings = [[stage, _stage_time(value)] for stage, value in seconds]
    if timings:
        timings.append(["total", _stage_time(sum(value for _, value in seconds))])
    header = {"title": bundle["name"], "chips": chips, "options": _options_line(bundle["options"]),
              "kernels": {"columns": [list(column) for column in KERNEL_COLUMNS], "rows": rows}, "timings": timings,
              "build": _provenance(bundle["build"]), **_analysis_header(bundle)}
    measured = bundle.get("measured")
    if measured:
        header["measured"] = {"verdict": measured["verdict"],
                              "key": measured["verdict_key"],
                              "kernels": [{"kernel": k["kernel"], "text": " · ".join(
                                  f"{m['label']} {m['text']}" for m in k["metrics"])} for k in measured["kernels"]
                                          if k["metrics"]]}
    return header


def _analysis_header(bundle: dict) -> dict:
    """The header's register-pressure lines and diagnostics, from the bundle's ``analysis``."""
    analysis = bundle.get("analysis") or {}
    pressure = [{"kernel": kernel, "text": found["summary"], "key": found["peak_key"],
                 "sass_line": found["peak_sass_line"]} for kernel, found in analysis.get("pressure", {}).items()]
    found = (bundle.get("measured") or analysis).get("diagnostics", [])
    diagnostics = [{"kind": d["kind"], "severity": d["severity"], "key": d["key"],
                    "line": f"Python line {d['python_line']}" if d["python_line"] else "template",
                    "message": d["message"], "fix": d["fix"]} for d in found]
    return {"pressure": pressure, "diagnostics": diagnostics}


def _calls_text(total: int, kinds: list) -> str:
    """``"106 CALLs: 104 emulated warp intrinsic, 2 compiler-internal local call"``; ``"0 CALLs"``."""
    named = ", ".join(f"{kind['count']} {kind['label']}" for kind in kinds)
    return _count(total, "CALL") + (f": {named}" if named else "")


def _provenance(build: dict) -> str | None:
    """Where a cached build came from, e.g. ``"from the disk cache (built in 1.80 s on 2026-12-03 08:41)"``.

    None for a build made just now: its stage timings are of now. A cached
    build's timings are of its first build, so the header says that instead.
    """
    if build["origin"] == "built":
        return None
    where = "from the disk cache" if build["origin"] == "disk" else "from memory"
    when = f" {'on' if build['origin'] == 'disk' else 'at'} {build['built_at']}" if build["built_at"] else ""
    return f"{where} (built in {_stage_time(build['seconds'])}{when})"


def _chip(field: str, text: str, title: str, tone: str = "") -> dict:
    return {"field": field, "text": text, "title": title, "tone": tone}


def _count(n: int, one: str) -> str:
    return f"{n} {one}{'' if n == 1 else 's'}"


def _kernel_cells(name: str, resources: dict) -> dict:
    def number(field):
        value = resources.get(field)
        return "–" if value is None else str(value)

    return {"kernel": name, "registers": number("registers"), "shared_bytes": _bytes(resources.get("shared_bytes")),
            "stack_bytes": _bytes(resources.get("stack_bytes")), "spill_stores": number("spill_stores"),
            "spill_loads": number("spill_loads"),
            "occupancy": f"{resources['occupancy']:.0%} · {resources['blocks_per_sm']} blocks/SM",
            "occupancy_limit": resources["occupancy_limit"]}


def _bytes(n) -> str:
    if n is None:
        return "–"
    return f"{n / 1024:.1f} KiB" if n >= 1024 else f"{n} B"


def _stage_time(seconds: float) -> str:
    """``"0.40 ms"``, ``"12.0 ms"``, ``"1.50 s"``."""
    if seconds >= 1:
        return f"{seconds:.2f} s"
    ms = seconds * 1000
    return f"{ms:.1f} ms" if ms >= 10 else f"{ms:.2f} ms"


def _options_line(options: dict) -> str:
    """The options other than ``lto`` (a chip already) as ``name=value`` words; iota as the inputs it is."""
    words = []
    for name, value in options.items():
        if name == "lto":
            continue
        if name == "iota":
            value = ",".join(str(i) for i, is_iota in enumerate(value) if is_iota) or "none"
        elif isinstance(value, bool):
            value = "on" if value else "off"
        words.append(f"{name}={value}")
    return " ".join(words)

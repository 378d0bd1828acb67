"""The ``text/plain`` summary of a build bundle (see ``docs/bundle.md``)."""

from __future__ import annotations

from typing import Any

__all__ = ["render_text", "format_ms", "lto_label", "total_seconds", "resource_summary"]

_HINT = (
    "(The side-by-side Python / CUDA C++ / PTX / SASS view needs a notebook "
    "front end: JupyterLab, Jupyter Notebook or VS Code.)"
)


def format_ms(seconds: Any) -> str:
    """Format a duration in seconds as milliseconds with sensible precision.

    Parameters
    ----------
    seconds : float
        Duration in seconds; anything that is not a number gives ``"?"``.

    Returns
    -------
    str
        E.g. ``"0.40"``, ``"12.0"`` or ``"118"`` (no unit).
    """
    try:
        ms = float(seconds) * 1000.0
    except (TypeError, ValueError):
        return "?"
    if ms >= 100:
        return f"{ms:.0f}"
    if ms >= 1:
        return f"{ms:.1f}"
    return f"{ms:.2f}"


def lto_label(bundle: dict) -> str:
    """Return ``"LTO on"`` or ``"LTO off"`` for a bundle."""
    return "LTO on" if bundle.get("lto") else "LTO off"


def total_seconds(timings: Any) -> float:
    """Sum the numeric stage timings of a bundle, in seconds."""
    if not isinstance(timings, dict):
        return 0.0
    return sum(float(v) for v in timings.values() if isinstance(v, (int, float)))


def resource_summary(res: Any) -> str:
    """Describe one kernel's resources on one line.

    Parameters
    ----------
    res : dict
        ``{"registers", "shared_bytes", "stack_bytes", "spill_stores",
        "spill_loads"}``; missing entries print as ``?``.

    Returns
    -------
    str
        E.g. ``"32 registers, 128 B shared, 0 B stack, spills 0 st / 0 ld"``.
    """
    res = res if isinstance(res, dict) else {}

    def get(name: str) -> Any:
        return res.get(name, "?")

    summary = (
        f"{get('registers')} registers, {get('shared_bytes')} B shared, "
        f"{get('stack_bytes')} B stack, "
        f"spills {get('spill_stores')} st / {get('spill_loads')} ld"
    )
    if "occupancy" in res:
        summary += f", occupancy {occupancy_label(res)} (limited by {res.get('occupancy_limit', '?')})"
    return summary


def occupancy_label(res: dict) -> str:
    """A kernel's theoretical occupancy as ``"75% · 6 blocks/SM"``."""
    return f"{res['occupancy']:.0%} · {res.get('blocks_per_sm', '?')} blocks/SM"


def _build_lines(bundle: dict, indent: str) -> list[str]:
    """Resource, instruction and timing lines for one build."""
    lines = []
    resources = bundle.get("resources") or {}
    for kernel, res in resources.items():
        lines.append(f"{indent}kernel {kernel}: {resource_summary(res)}")
    stats = bundle.get("stats") or {}
    lines.append(
        f"{indent}SASS: {stats.get('sass_instructions', '?')} instructions, "
        f"{stats.get('sass_calls', '?')} CALL"
        + (f"; PTX: {stats['ptx_lines']} lines" if "ptx_lines" in stats else "")
    )
    timings = bundle.get("timings") or {}
    if timings:
        stages = ", ".join(f"{k} {format_ms(v)}" for k, v in timings.items())
        lines.append(f"{indent}build: {format_ms(total_seconds(timings))} ms ({stages})")
    return lines


def render_text(bundle: dict) -> str:
    """Render a build bundle as a short plain-text summary.

    Parameters
    ----------
    bundle : dict
        A build bundle as described in ``docs/bundle.md``.

    Returns
    -------
    str
        Several lines: name, primitive, target and LTO; per-kernel
        registers and spills; SASS instruction and ``CALL`` counts; total
        build time; the compared build, if any; and a hint that the rich
        view needs a notebook.
    """
    head = ", ".join(
        str(x) for x in (bundle.get("primitive"), bundle.get("target"), lto_label(bundle)) if x
    )
    lines = [f"gpulab build: {bundle.get('name', '?')} ({head})"]
    lines += _build_lines(bundle, "  ")
    other = bundle.get("compare")
    if isinstance(other, dict):
        lines.append(f"  compared build ({lto_label(other)}):")
        lines += _build_lines(other, "    ")
    lines.append(_HINT)
    return "\n".join(lines)

"""The ``text/plain`` summary of a build bundle (see ``docs/bundle.md``): its header model, as lines."""

from __future__ import annotations

__all__ = ["render_text", "header_lines"]

_HINT = (
    "(The side-by-side Python / CUDA C++ / PTX / SASS view needs a notebook "
    "front end: JupyterLab, Jupyter Notebook or VS Code.)"
)


def header_lines(header: dict, indent: str = "") -> list[str]:
    """Every field of a header model as lines of text.

    Parameters
    ----------
    header : dict
        A bundle's ``header`` (made by :func:`gpulab.compiler.bundle.header_of`).
    indent : str
        Put in front of each line after the first.

    Returns
    -------
    list of str
        The title and chips; the options; one line per kernel, each cell
        named by its column; the stage timings; what was measured (the
        verdict, each launch's figures); each kernel's registers and
        occupancy; each diagnostic with its severity and fix.
    """
    chips = ", ".join(chip["text"] for chip in header.get("chips", []))
    lines = [f"{header.get('title', '?')} ({chips})"]
    if header.get("options"):
        lines.append(f"{indent}  options: {header['options']}")
    kernels = header.get("kernels") or {}
    columns = kernels.get("columns", [])
    for row in kernels.get("rows", []):
        cells = row.get("cells", {})
        described = ", ".join(f"{title} {cells.get(field, '–')}" for field, title in columns if field != "kernel")
        lines.append(f"{indent}  kernel {row.get('kernel', '?')}: {described}")
    if header.get("build"):  # a cached build: where it came from, not its first build's timings as if new
        lines.append(f"{indent}  build: {header['build']}")
    elif header.get("timings"):
        lines.append(f"{indent}  stages: " + ", ".join(f"{stage} {text}" for stage, text in header["timings"]))
    found = header.get("measured") or {}
    if found:
        lines.append(f"{indent}  measured: {found.get('verdict', '')}")
        lines += [f"{indent}  measured {k.get('kernel', '?')}: {k.get('text', '')}" for k in found.get("kernels") or []]
    for item in header.get("pressure") or []:
        lines.append(f"{indent}  registers {item.get('kernel', '?')}: {item.get('text', '')}")
    for item in header.get("diagnostics") or []:
        lines.append(f"{indent}  {item.get('kind', '?')} ({item.get('line', '')}, {item.get('severity', '?')}): "
                     f"{item.get('message', '')} Fix: {item.get('fix', '')}")
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
        Its header (and the compared build's), then a hint that the rich
        view needs a notebook.
    """
    header = header_lines(bundle.get("header") or {})
    lines = [f"gpulab build: {header[0]}", *header[1:]]
    other = bundle.get("compare")
    if isinstance(other, dict):
        compared = header_lines(other.get("header") or {}, "  ")
        lines += [f"  compared build: {compared[0]}", *compared[1:]]
    lines.append(_HINT)
    return "\n".join(lines)

"""The ``text/html`` rendering of a build bundle (see ``docs/bundle.md``).

The fragment is self-contained: an inline ``<style>`` scoped under the
``gpulab-build`` class, the header and the panes as plain markup, and a small
optional ``<script>`` that links lines across panes on hover, titles each
opcode with its hint and makes the gaps between panes splitters to drag.
Without the script (GitHub, nbviewer) every line still carries its colour and
a ``title`` naming its source lines, and the first opcode of each hint in a
pane its hint. Every string from the bundle is escaped.
"""

from __future__ import annotations

import html
import json
import re
import uuid
from pathlib import Path
from typing import Any, Iterable

from pygments.token import STANDARD_TYPES

from gpulab.display import gutters, measured
from gpulab.display.layout import ALL_PANES_PX, first_hidden
from gpulab.display.lexers import tokens_by_line
from gpulab.display.palette import PALETTE, colour_index

__all__ = ["render_html", "highlight_line"]

_SOURCE_NAMES = {"py": ("python", "Python"), "cu": ("cuda", "CUDA")}


def _esc(value: Any) -> str:
    """Escape any value for HTML text or a quoted attribute."""
    return html.escape(str(value), quote=True)


def _token_class(ttype: Any) -> str:
    """Return the short pygments class of a token type (``Keyword.Type`` -> ``kt``)."""
    while ttype not in STANDARD_TYPES:
        ttype = ttype.parent
    return STANDARD_TYPES[ttype]


# Token classes drawn in the text colour (`_CSS`): their text needs no span of its own.
_PLAIN = frozenset({"", "n", "o", "p"})
# Token classes drawn as another: a run of either is one span.
_DRAWN_AS = {"kp": "k"}


def _drawn_class(ttype: Any) -> str:
    cls = _token_class(ttype)
    return "" if cls in _PLAIN else _DRAWN_AS.get(cls, cls)


def highlight_line(tokens: Iterable[tuple[Any, str]]) -> str:
    """Render one line's tokens as escaped ``<span class="t-XX">`` markup, one span per run drawn alike.

    Parameters
    ----------
    tokens : iterable of (token type, str)
        One line of `gpulab.display.lexers.tokens_by_line`.

    Returns
    -------
    str
        HTML with the text escaped; whitespace, and names, operators and punctuation (drawn in
        the text colour), are unwrapped. Whitespace between two tokens of a run is in its span.
    """
    out, run, run_cls, spaces = [], [], "", ""
    for ttype, value in tokens:
        if not value.strip():
            spaces += value
            continue
        cls = _drawn_class(ttype)
        if cls != run_cls or not cls:
            if run:
                out.append(f'<span class="t-{run_cls}">{_esc("".join(run))}</span>')
                run = []
            out.append(_esc(spaces))
            spaces = ""
            run_cls = cls
        if cls:
            run.append(spaces + value)
        else:
            out.append(_esc(value))
        spaces = ""
    if run:
        out.append(f'<span class="t-{run_cls}">{_esc("".join(run))}</span>')
    out.append(_esc(spaces))
    return "".join(out)


def _int(value: Any, default: int) -> int:
    """Return ``int(value)``, or `default` when that fails."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def _key_title(keys: list, first_lines: dict[str, int]) -> str:
    """Name the source lines of `keys`, e.g. ``"Python line 3; CUDA lines 42, 17"`` (in the keys' order).

    Numbers are the ones printed beside those lines (``first_line`` applied).
    """
    lines: dict[str, dict[int, None]] = {}  # label -> its line numbers, in order, each once
    others = []
    for key in keys:
        parsed = gutters.parse_key(key)
        if parsed and parsed[0] in _SOURCE_NAMES:
            pane, label = _SOURCE_NAMES[parsed[0]]
            lines.setdefault(label, {})[first_lines.get(pane, 1) + parsed[1] - 1] = None
        else:
            others.append(str(key))
    names = [f"{label} line{'s' if len(numbers) > 1 else ''} {', '.join(map(str, numbers))}"
             for label, numbers in lines.items()]
    return "; ".join(names + list(dict.fromkeys(others)))


def _line_colour(keys: list) -> str | None:
    """The class of the palette colour of the first ``py:N`` key (``gl-y3``), or None."""
    for key in keys:
        parsed = gutters.parse_key(key)
        if parsed and parsed[0] == "py" and parsed[1] >= 1:
            return f"gl-y{colour_index(parsed[1])}"
    return None


def _pane_links(links: Any, pane_id: str) -> dict[int, list]:
    """Return the 0-based line -> keys map of one pane, with int indices."""
    raw = links.get(pane_id) if isinstance(links, dict) else None
    if not isinstance(raw, dict):
        return {}
    out = {}
    for index, keys in raw.items():
        i = _int(index, -1)
        if i >= 0 and isinstance(keys, (list, tuple)) and keys:
            out[i] = [str(k) for k in keys]
    return out


def _display_text(pane: dict) -> str:
    """The text a pane shows (the SASS comes in compact columns: ``gpulab/compiler/sass_columns.py``)."""
    return str(pane.get("text") or "")


def _flex(pane: dict) -> str:
    """`pane`'s share of the row: room for its longest line where there is some (a short Python
    function shows whole, and takes no more), and of what is left more for panes of longer lines
    (as the extension's ``paneFlex``)."""
    longest = max((len(line.expandtabs(4)) for line in _display_text(pane).splitlines()), default=0)
    shrink = 3 if pane.get("id") == "python" else 1  # short of room, the Python pane gives first
    return f"flex:{max(1, min(longest, 80) - 32)} {shrink} min({longest + 12}ch,36em)"


class _Hints:
    """The opcode hints of one view, each written once: a hinted opcode names its hint by number
    (``data-h``), the first of each in a pane also carries it as its ``title`` (read with no script),
    and the script titles the others on hover from :attr:`texts`. A reduce has about 130 distinct
    hints over 12,000 opcodes."""

    def __init__(self) -> None:
        self.numbers: dict[str, int] = {}

    @property
    def texts(self) -> list[str]:
        """Every hint, in the order of its number."""
        return list(self.numbers)

    def opcode(self, tokens: list, hint: str | None, titled: set) -> str:
        """One line's markup, its opcode (the first keyword and the modifiers after it) marked with `hint`;
        titled in full when `titled` (the hints the pane has titled so far) lacks it."""
        if not hint:
            return highlight_line(tokens)
        kinds = [_token_class(ttype) for ttype, _ in tokens]
        start = next((i for i, kind in enumerate(kinds) if kind == "k"), None)
        if start is None:
            return highlight_line(tokens)
        end = start + 1
        while end < len(tokens) and kinds[end] == "kp":
            end += 1
        number = self.numbers.setdefault(hint, len(self.numbers))
        title = "" if hint in titled else f' title="{_esc(hint)}"'
        titled.add(hint)
        opcode = "".join(value for _, value in tokens[start:end])
        return (highlight_line(tokens[:start]) + f'<span class="t-k gl-op" data-h="{number}"{title}>'
                + _esc(opcode) + "</span>" + highlight_line(tokens[end:]))


def _render_pane(pane: dict, links: dict[int, list], first_lines: dict[str, int],
                 ns: dict[str, str], bundle: dict, hints: _Hints) -> str:
    """Render one pane: title bar and a scrolling list of numbered lines.

    `ns` maps a key kind (``"py"``) to a prefix put before it in ``data-k``,
    so that keys of a compared build only meet equal source lines. The
    Python pane gets its cost bars, the SASS pane its register-pressure
    strip, SASS and PTX their opcodes' hints (:mod:`gpulab.display.gutters`), numbered in `hints`.
    """
    language = str(pane.get("language", ""))
    first = _int(pane.get("first_line", 1), 1)
    lines = tokens_by_line(_display_text(pane), language)
    width = len(str(first + max(len(lines) - 1, 0)))
    pane_id, note = str(pane.get("id", "")), ""
    gutter, empty = {}, ""
    if pane_id == "python":
        gutter = gutters.cost_gutter(bundle)
        empty = '<span class="gl-g"></span>' if gutter else ""
    elif pane_id == "sass":
        gutter, note = gutters.pressure_strip(bundle)
        empty = '<span class="gl-p"></span>' if gutter else ""
    gutter, empty = measured.add_column(bundle, pane_id, gutter, empty)
    pane_hints = gutters.opcode_hints(bundle, pane_id) if pane_id in ("sass", "ptx") else {}
    titled: set = set()
    rows = []
    for i, tokens in enumerate(lines):
        keys = links.get(i, [])
        attrs = ' class="gl-l"'
        if keys:
            data = " ".join(ns.get(k.partition(":")[0], "") + k for k in keys)
            colour = _line_colour(keys)
            attrs = (f' class="gl-l{" " + colour if colour else ""}" data-k="{_esc(data)}"'
                     f' title="{_esc(_key_title(keys, first_lines))}"')
        rows.append(
            f'<span{attrs}><span class="gl-n">{first + i}</span>{gutter.get(i, empty)}'
            f'<span class="gl-c">{hints.opcode(tokens, pane_hints.get(i), titled)}</span></span>'
        )
    if not rows:
        rows.append('<span class="gl-empty">(empty)</span>')
    count = f"{len(lines)} line{'s' if len(lines) != 1 else ''}"
    return (
        f'<div class="gl-pane" data-pane="{_esc(pane.get("id", ""))}" data-lang="{_esc(language)}" '
        f'style="{_flex(pane)}">'
        f'<div class="gl-pt"><span>{_esc(pane.get("title") or pane.get("id") or "")}</span>'
        f'<span class="gl-muted">{_esc(note + " · " if note else "")}{count}</span></div>'
        f'<div class="gl-sc"><pre class="gl-ls" style="--gl-nw:{width + 1}ch">'
        + "".join(rows)
        + "</pre></div></div>"
    )


def _render_panes(bundle: dict, panes: list, ns: dict[str, str], hints: _Hints) -> str:
    """Render `panes` of `bundle` side by side."""
    first_lines = {
        str(p.get("id")): _int(p.get("first_line", 1), 1)
        for p in bundle.get("panes") or [] if isinstance(p, dict)
    }
    links = bundle.get("links") or {}
    body = "".join(
        _render_pane(p, _pane_links(links, str(p.get("id"))), first_lines, ns, bundle, hints) for p in panes
    )
    return f'<div class="gl-grid">{body}</div>'


_TONES = {"on": " gl-on", "off": " gl-off", "warn": " gl-warn"}


def _render_chips(header: dict) -> str:
    """The header's chips: small rounded labels, each with its title as a tooltip."""
    return "".join(
        f'<span class="gl-chip{_TONES.get(chip.get("tone"), "")}" data-field="{_esc(chip.get("field", ""))}" '
        f'title="{_esc(chip.get("title", ""))}">{_esc(chip.get("text", ""))}</span>'
        for chip in header.get("chips") or [] if isinstance(chip, dict))


def _render_stats(header: dict) -> str:
    """The header's kernel table and stage timings."""
    parts = []
    kernels = header.get("kernels") or {}
    columns, rows = kernels.get("columns") or [], kernels.get("rows") or []
    if rows:
        cells = [f'<span class="gl-th">{_esc(title)}</span>' for _, title in columns]
        for row in rows:
            values, warn = row.get("cells") or {}, set(row.get("warn") or [])
            for field, _ in columns:
                cls = "gl-kn" if field == "kernel" else ("gl-warn" if field in warn else "")
                cells.append(f'<span class="{cls}" data-field="{_esc(field)}">{_esc(values.get(field, "–"))}</span>')
        parts.append(f'<div class="gl-res" style="grid-template-columns:minmax(0,max-content) '
                     f'repeat({max(len(columns) - 1, 1)},max-content)">{"".join(cells)}</div>')
    timings = header.get("timings") or []
    if header.get("build"):  # a cached build: where it came from, not its first build's timings as if new
        parts.append(f'<div class="gl-row gl-cached"><span class="gl-muted">build</span> '
                     f'{_esc(header["build"])}</div>')
    elif timings:
        stages = " · ".join(f"{_esc(stage)} {_esc(text)}" for stage, text in timings)
        parts.append(f'<div class="gl-row"><span class="gl-muted">stages</span> {stages}</div>')
    return "".join(parts)


_PANE_ID = re.compile(r"[a-z][a-z0-9_-]{0,31}", re.ASCII)


def _toggled_panes(bundle: dict) -> list[dict]:
    """The panes that get a show/hide checkbox: those whose id is a plain word (it goes into CSS)."""
    return [p for p in bundle.get("panes") or [] if isinstance(p, dict) and _PANE_ID.fullmatch(str(p.get("id")))]


def _render_toggles(bundle: dict, uid: str) -> str:
    """A checkbox per pane that shows or hides it, by CSS alone (:func:`_toggle_css`): no script needed.

    The page cannot measure itself, so the narrow first view is checked (:func:`first_hidden`); where
    the script runs, it checks every box of a view wide enough for all its panes.
    """
    panes = _toggled_panes(bundle)
    hidden = first_hidden([p["id"] for p in panes], None)
    boxes = "".join(f'<input type="checkbox" class="gl-t" id="{uid}-{p["id"]}" data-pane="{p["id"]}"'
                    f'{"" if p["id"] in hidden else " checked"}>'
                    f'<label for="{uid}-{p["id"]}">{_esc(p.get("title") or p["id"])}</label>' for p in panes)
    return f'<div class="gl-tg"><span class="gl-muted">panes</span>{boxes}</div>' if boxes else ""


def _toggle_css(bundle: dict) -> str:
    """Hide a pane (of this build and the compared one) whose checkbox is cleared."""
    return "".join(f'{_G}:has(.gl-t[data-pane="{p["id"]}"]:not(:checked)) .gl-pane[data-pane="{p["id"]}"]'
                   "{display:none}" for p in _toggled_panes(bundle))


def _render_header(bundle: dict, uid: str | None = None) -> str:
    """The bundle's header model: title, chips and options, then kernels and timings; with `uid`, the pane toggles."""
    header = bundle.get("header") or {}
    options = header.get("options")
    opt = f'<span class="gl-muted">{_esc(options)}</span>' if options else ""
    toggles = _render_toggles(bundle, uid) if uid else ""
    return (f'<div class="gl-h"><div class="gl-title"><span class="gl-name">'
            f'{_esc(header.get("title", bundle.get("name", "?")))}</span>{_render_chips(header)}{opt}</div>'
            f"{_render_stats(header)}{measured.render_measured(bundle)}{gutters.render_findings(header)}{toggles}</div>")


def _delta(new: Any, old: Any) -> str:
    """``" (+12)"`` for two integers, else empty."""
    if isinstance(new, int) and isinstance(old, int) and new != old:
        return f" ({new - old:+d})"
    return ""


def _render_compare(bundle: dict, other: dict, hints: _Hints) -> str:
    """A collapsed section with the compared build's stats and differing panes."""
    mine = {str(p.get("id")): p for p in bundle.get("panes") or [] if isinstance(p, dict)}
    panes = [p for p in other.get("panes") or [] if isinstance(p, dict)
             and p.get("text") != (mine.get(str(p.get("id"))) or {}).get("text")]
    ns = {kind: ("" if (mine.get(pane) or {}).get("text") == _pane_text(other, pane) else "cmp-")
          for kind, (pane, _) in _SOURCE_NAMES.items()}
    s_new, s_old = other.get("stats") or {}, bundle.get("stats") or {}
    ins, calls = s_new.get("sass_instructions", "?"), s_new.get("sass_calls", "?")
    summary = (f'Compared build: <b>{"LTO on" if other.get("lto") else "LTO off"}</b> · SASS {_esc(ins)}'
               f'{_esc(_delta(ins, s_old.get("sass_instructions")))} instructions · '
               f'{_esc(calls)}{_esc(_delta(calls, s_old.get("sass_calls")))} CALL')
    body = (_render_panes(other, panes, ns, hints) if panes
            else '<div class="gl-muted">All panes are the same as above.</div>')
    return (f'<details class="gl-cmp"><summary>{summary}</summary>'
            f'{_render_header(other)}{body}</details>')


def _pane_text(bundle: dict, pane_id: str) -> Any:
    """Text of pane `pane_id` of `bundle`, or None."""
    for p in bundle.get("panes") or []:
        if isinstance(p, dict) and str(p.get("id")) == pane_id:
            return p.get("text")
    return None


def render_html(bundle: dict, *, uid: str | None = None) -> str:
    """Render a build bundle as a self-contained HTML fragment.

    Parameters
    ----------
    bundle : dict
        A build bundle as described in ``docs/bundle.md``.
    uid : str, optional
        The ``id`` of the outer element (the hover script finds its panes
        by it): a letter, then letters, digits, ``_`` or ``-``. A random
        one by default.

    Returns
    -------
    str
        ``<div class="gpulab-build">`` holding a ``<style>``, the header,
        the panes side by side, the compared build in a ``<details>`` when
        ``bundle["compare"]`` is set, and a small progressive ``<script>``.

    Raises
    ------
    ValueError
        If `uid` is not a plain identifier.
    """
    uid = uid or f"gpulab-{uuid.uuid4().hex[:12]}"
    if not re.fullmatch(r"[A-Za-z][\w-]*", uid, re.ASCII):
        raise ValueError(f"uid must be letters, digits, '_' or '-', got {uid!r}")
    panes = [p for p in bundle.get("panes") or [] if isinstance(p, dict)]
    other = bundle.get("compare")
    hints = _Hints()
    body = _render_panes(bundle, panes, {}, hints)
    compared = _render_compare(bundle, other, hints) if isinstance(other, dict) else ""
    script = (_SCRIPT.replace("__ID__", uid).replace("__HINTS__", _script_json(hints.texts))
              .replace("__ALL_PANES_PX__", str(ALL_PANES_PX)))
    parts = [
        f'<div class="gpulab-build" id="{_esc(uid)}">',
        f"<style>{_CSS}{_toggle_css(bundle)}</style>",
        _render_header(bundle, uid),
        body,
        compared,
        "</div>",
        f"<script>{script}</script>",
    ]
    return "".join(parts)


def _script_json(value: Any) -> str:
    """`value` as a JavaScript literal that cannot end the ``<script>`` it is in (``<``, ``>``, ``&`` escaped)."""
    return (json.dumps(value, ensure_ascii=True)
            .replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))


_TOKENS = json.loads((Path(__file__).parent / "tokens.json").read_text())


def _scheme(name: str) -> str:
    """The colour tokens of scheme `name` (tokens.json, which the live view's CSS is built from too) as CSS."""
    return f"color-scheme:{name};" + "".join(f"--gl-{k}:{v};" for k, v in _TOKENS[name].items())


_LIGHT, _DARK = _scheme("light"), _scheme("dark")
_G = ".gpulab-build"
_CSS = (
    f"{_G}{{{_LIGHT}}}"
    f"@media (prefers-color-scheme: dark){{{_G}{{{_DARK}}}}}"
    f'body[data-jp-theme-light="true"] {_G},body.vscode-light {_G}{{{_LIGHT}}}'
    f'body[data-jp-theme-light="false"] {_G},body.vscode-dark {_G},'
    f"body.vscode-high-contrast:not(.vscode-high-contrast-light) {_G}{{{_DARK}}}"
    + """
&{background:var(--gl-bg);color:var(--gl-fg);border:1px solid var(--gl-border);border-radius:6px;
 padding:8px;margin:2px 0;box-sizing:border-box;max-width:100%;text-align:left;
 font:13px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif}
& *{box-sizing:border-box}
& .gl-h{margin:0 0 8px 0}
& .gl-title{display:flex;flex-wrap:wrap;align-items:baseline;gap:6px;margin-bottom:4px}
& .gl-name{font:600 15px/1.3 ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono",monospace}
& .gl-chip{border:1px solid var(--gl-border);border-radius:10px;padding:0 8px;font-size:12px;
 background:var(--gl-head)}
& .gl-chip.gl-on{color:var(--gl-ok);border-color:var(--gl-ok)}
& .gl-chip.gl-off{color:var(--gl-warn);border-color:var(--gl-warn)}
& .gl-muted{color:var(--gl-muted);font-size:12px}
& .gl-res{display:grid;column-gap:16px;font-size:12px;margin:2px 0 4px 0}
& .gl-res>span{text-align:right;font-variant-numeric:tabular-nums}
& .gl-res>span.gl-kn{text-align:left;overflow:hidden;text-overflow:ellipsis;white-space:nowrap;
 font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono",monospace}
& .gl-res>.gl-th{color:var(--gl-muted);border-bottom:1px solid var(--gl-border)}
& .gl-res>.gl-th:first-child{text-align:left}
& .gl-row{font-size:12px}
& .gl-warn{color:var(--gl-warn);font-weight:600}
&{container-type:inline-size}
& .gl-grid{display:flex;gap:6px;overflow-x:auto;align-items:flex-start}
& .gl-pane{border:1px solid var(--gl-border);border-radius:4px;min-width:16em;overflow:hidden;flex:1 1 0;
 display:flex;flex-direction:column;background:var(--gl-bg)}
& .gl-tg{display:flex;flex-wrap:wrap;gap:2px 10px;align-items:center;font-size:12px;margin-top:2px}
& .gl-tg label{cursor:pointer;margin:0 6px 0 2px}
& .gl-tg input{margin:0}
@container (max-width:115em){&:has(.gl-t:checked~.gl-t:checked~.gl-t:checked) .gl-grid{flex-wrap:wrap}
&:has(.gl-t:checked~.gl-t:checked~.gl-t:checked) .gl-pane{flex-basis:calc(50% - 3px)!important}}
@container (max-width:36em){& .gl-grid{flex-wrap:wrap}& .gl-pane{flex-basis:100%!important}}
& .gl-pt{display:flex;justify-content:space-between;align-items:baseline;font-weight:600;
 padding:2px 8px;background:var(--gl-head);border-bottom:1px solid var(--gl-border)}
& .gl-sc{max-height:32em;overflow:auto;position:relative;tab-size:4;-moz-tab-size:4;
 font:12px/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono",monospace}
& .gl-ls{width:max-content;min-width:100%;margin:0;padding:0;border:0;background:none;font:inherit;
 overflow:visible;white-space:pre}
& .gl-l{display:flex;white-space:pre}
& .gl-n{position:sticky;left:0;flex:none;width:var(--gl-nw,4ch);padding:0 6px 0 4px;
 box-sizing:content-box;text-align:right;color:var(--gl-muted);background-color:var(--gl-bg);
 border-right:1px solid var(--gl-border);user-select:none;-webkit-user-select:none}
& .gl-c{flex:1;padding:0 10px 0 6px}
& .gl-empty{display:block;padding:4px 8px;color:var(--gl-muted)}
& .gl-l[data-k]:hover .gl-c,& .gl-l.gl-hot .gl-c{background-image:linear-gradient(var(--gl-hot),var(--gl-hot))}
& .gl-l.gl-hot{outline:1px solid var(--gl-accent);outline-offset:-1px}
& .gl-cmp{margin-top:8px;border-top:1px dashed var(--gl-border);padding-top:6px}
& .gl-cmp>summary{cursor:pointer;font-size:12px;margin-bottom:6px}
& [class^="t-k"]{color:var(--gl-kw)}
& .t-kt{color:var(--gl-type)} & .t-kd,& .t-kr{color:var(--gl-decl)} & .t-kc{color:var(--gl-lit)}
& [class^="t-n"]{color:var(--gl-fg)}
& .t-nv,& .t-vm,& .t-vi,& .t-vc,& .t-vg{color:var(--gl-var)}
& .t-nb,& .t-bp,& .t-na,& .t-no{color:var(--gl-type)}
& .t-nf,& .t-fm,& .t-nc,& .t-nn{color:var(--gl-decl)}
& .t-nl{color:var(--gl-lab);font-weight:600} & .t-nd{color:var(--gl-dec);font-weight:600}
& [class^="t-m"]{color:var(--gl-lit)}
& [class^="t-s"],& .t-dl{color:var(--gl-str)}
& [class^="t-c"]{color:var(--gl-com);font-style:italic}
& .t-cs{font-style:normal} & .t-cp,& .t-cpf{color:var(--gl-pre);font-style:normal}
& .t-o,& .t-p{color:var(--gl-fg)} & .t-ow{color:var(--gl-kw)} & .t-err{color:inherit;border:0}
""".replace("&", _G).replace("\n", "")
    + gutters.CSS.replace("&", _G).replace("\n", "")
    + measured.CSS.replace("&", _G).replace("\n", "")
    # A line linked to Python line N takes colour N, its number too (drawn over the number's own background).
    + "".join(f"{_G} .gl-y{i}{{background-color:{c}}}{_G} .gl-y{i}>.gl-n{{background-image:linear-gradient({c},{c})}}"
              for i, c in enumerate(PALETTE))
)

_SCRIPT = """(function(){function init(n){var r=document.getElementById("__ID__");
if(!r){if(n<40)setTimeout(function(){init(n+1)},50);return}
if(r.getAttribute("data-gl-linked"))return;r.setAttribute("data-gl-linked","1");
if(r.getBoundingClientRect().width>=__ALL_PANES_PX__)r.querySelectorAll(".gl-t").forEach(function(t){t.checked=true});
var m={},hot=[];r.querySelectorAll("[data-k]").forEach(function(e){
e.getAttribute("data-k").split(" ").forEach(function(k){(m[k]=m[k]||[]).push(e)})});
function rows(e){var s=new Set(),py=e.closest('[data-pane="python"]');
e.getAttribute("data-k").split(" ").forEach(function(k){(m[k]||[]).forEach(function(x){
if(py&&k.indexOf("py:")<0&&!x.closest('[data-pane="cuda"]'))return;s.add(x)})});return Array.from(s)}
function clear(){hot.forEach(function(e){e.classList.remove("gl-hot")});hot=[]}
function row(ev){return ev.target.closest?ev.target.closest("[data-k]"):null}
var H=__HINTS__;r.addEventListener("mouseover",function(ev){
var o=ev.target.closest?ev.target.closest(".gl-op[data-h]"):null;if(o&&!o.title)o.title=H[+o.getAttribute("data-h")]||"";
var e=row(ev);clear();if(!e)return;
hot=rows(e);hot.forEach(function(x){x.classList.add("gl-hot")})});
r.addEventListener("mouseleave",clear);
r.addEventListener("click",function(ev){var e=row(ev);if(!e)return;var own=e.closest(".gl-sc"),done=new Set([own]);
rows(e).forEach(function(x){var sc=x.closest(".gl-sc");if(!sc||done.has(sc))return;done.add(sc);
sc.scrollTop=Math.max(0,x.offsetTop-sc.clientHeight/3)})});
r.querySelectorAll(".gl-grid").forEach(function(g){split(g,r)})}
function split(g,r){function pair(x,y){var l=null,rt=null,ps=[],low={};
g.querySelectorAll(":scope>.gl-pane").forEach(function(p){var b=p.getBoundingClientRect();if(!b.width)return;
ps.push([p,b]);var t=Math.round(b.top);low[t]=Math.max(low[t]||0,b.bottom)});
ps.forEach(function(pb){var p=pb[0],b=pb[1];if(y<b.top||y>low[Math.round(b.top)])return;if(b.right<=x+1&&(!l||b.right>l.b.right))l={p:p,b:b};
if(b.left>=x-1&&(!rt||b.left<rt.b.left))rt={p:p,b:b}});return l&&rt&&rt.b.left-l.b.right<20?[l,rt]:null}
g.addEventListener("mousemove",function(ev){if(ev.target===g)g.style.cursor=pair(ev.clientX,ev.clientY)?"col-resize":""});
g.addEventListener("mousedown",function(ev){if(ev.target!==g||ev.button!==0)return;var s=pair(ev.clientX,ev.clientY);
if(!s)return;ev.preventDefault();var x0=ev.clientX,w=s[0].b.width+s[1].b.width,min=Math.min(parseFloat(getComputedStyle(s[0].p).minWidth)||120,w/2);
function set(p,px){p.style.setProperty("flex","0 0 "+px+"px","important")}
function mv(e){var a=Math.max(min,Math.min(w-min,s[0].b.width+e.clientX-x0));set(s[0].p,a);set(s[1].p,w-a)}
function up(){document.removeEventListener("mousemove",mv);document.removeEventListener("mouseup",up)}
document.addEventListener("mousemove",mv);document.addEventListener("mouseup",up)});
function reset(){g.querySelectorAll(":scope>.gl-pane").forEach(function(p){p.style.removeProperty("flex")})}
window.addEventListener("resize",reset);r.addEventListener("change",reset)}init(0)})();"""

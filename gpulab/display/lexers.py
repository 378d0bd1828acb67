"""Pygments lexers for the four panes of a build view, and per-line tokenising.

`PtxLexer` reads NVIDIA PTX as NVRTC/NVVM print it; `SassLexer` reads SASS as
``nvdisasm -c -gi`` (or ``cuobjdump -sass``) prints it. Python and CUDA C++
use pygments' own `PythonLexer` and `CudaLexer`.

Pygments ships a lexer registered as ``sass`` for the CSS preprocessor, so
always go through `lexer_for` rather than ``get_lexer_by_name``.
"""

from __future__ import annotations

from pygments.lexer import Lexer, RegexLexer, bygroups, include, words
from pygments.lexers import CudaLexer, PythonLexer, TextLexer
from pygments.token import (
    Comment,
    Keyword,
    Name,
    Number,
    Operator,
    Punctuation,
    String,
    Whitespace,
    _TokenType,
)

__all__ = ["PtxLexer", "SassLexer", "lexer_for", "tokens_by_line"]

_PTX_TYPES = (
    ".pred", ".b8", ".b16", ".b32", ".b64", ".b128",
    ".u8", ".u16", ".u32", ".u64", ".s8", ".s16", ".s32", ".s64",
    ".f16", ".f16x2", ".bf16", ".bf16x2", ".f32", ".f64", ".tf32",
    ".e4m3", ".e5m2", ".e4m3x2", ".e5m2x2",
    ".v2", ".v4", ".v8",
)
_PTX_SPACES = (
    ".reg", ".sreg", ".param", ".global", ".shared", ".local", ".const", ".tex",
)


class PtxLexer(RegexLexer):
    """Lexer for NVIDIA PTX assembly.

    Instructions (``ld.global.v4.f32``) are split into the opcode
    (`Keyword`) and its dotted modifiers (`Keyword.Pseudo`); guards
    (``@%p1``, ``@!%p1``) are `Name.Decorator`; registers (``%r12``) are
    `Name.Variable`; special registers (``%tid.x``) are `Name.Builtin`;
    directives (``.visible``) are `Keyword.Declaration`, state spaces
    `Keyword.Reserved`, types `Keyword.Type`; hex floats (``0f3F800000``)
    are `Number.Float`.
    """

    name = "PTX (gpulab)"
    aliases = ["ptx"]
    filenames = ["*.ptx"]
    mimetypes = ["text/x-ptx"]

    _ident = r"[A-Za-z_$][\w$]*"

    tokens = {
        "root": [
            (r"^([ \t]*)([A-Za-z_$][\w$.]*)([ \t]*)(:)",
             bygroups(Whitespace, Name.Label, Whitespace, Punctuation)),
            (r"^([ \t]*)(@!?%\w+)?([ \t]*)([a-z][a-z0-9_]*)((?:\.[A-Za-z0-9_]+)*)(?=[ \t]*;|[ \t]+[^\s,;)])",
             bygroups(Whitespace, Name.Decorator, Whitespace, Keyword, Keyword.Pseudo)),
            include("common"),
        ],
        "common": [
            # The most frequent tokens first, for speed: pygments tries the rules in order at every token,
            # and nothing a later rule matches starts with ",", ";" or "%".
            (r"[ \t]+", Whitespace),
            (r"\n", Whitespace),
            (r"[,;]", Punctuation),
            (r"%(?:tid|ntid|ctaid|nctaid|clusterid|nclusterid|cluster_ctaid|"
             r"cluster_nctaid)(?:\.[xyz])?\b", Name.Builtin),
            (r"%(?:laneid|warpid|nwarpid|smid|nsmid|gridid|lanemask_\w+|clock64|clock|"
             r"globaltimer\w*|dynamic_smem_size|total_smem_size|envreg\d+|"
             r"pm\d+\w*|SP|SPL)\b", Name.Builtin),
            (r"%\w+", Name.Variable),
            (r"//.*?$", Comment.Single),
            (r"/\*.*?\*/", Comment.Multiline),
            (r'"(\\\\|\\"|[^"\n])*"', String.Double),
            (r"(\.(?:entry|func))(\s+)(" + _ident + ")",
             bygroups(Keyword.Declaration, Whitespace, Name.Function)),
            (words(_PTX_TYPES, suffix=r"\b"), Keyword.Type),
            (words(_PTX_SPACES, suffix=r"\b"), Keyword.Reserved),
            (r"\.[A-Za-z_]\w*", Keyword.Declaration),
            (r"@!?%\w+", Name.Decorator),
            (r"\$" + r"[\w$]+", Name.Label),
            (r"0[fF][0-9A-Fa-f]{8}\b", Number.Float),
            (r"0[dD][0-9A-Fa-f]{16}\b", Number.Float),
            (r"0[xX][0-9A-Fa-f]+[Uu]?\b", Number.Hex),
            (r"\d+\.\d*(?:[eE][+-]?\d+)?", Number.Float),
            (r"\d+[Uu]?\b", Number.Integer),
            (_ident, Name),
            (r"[-+*/|!&^~=<>?]", Operator),
            (r"[{}()\[\],;:.]", Punctuation),
        ],
    }


_SASS_OPCODE = r"[A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*"
_SASS_GUARD = r"@!?U?P(?:[0-6]|T)"
_SASS_OFFSET = r"/\*[0-9a-fA-F]{4,}\*/"


class SassLexer(RegexLexer):
    """Lexer for NVIDIA SASS as printed by ``nvdisasm -c -gi``.

    Offsets (``/*0070*/``) are `Comment.Special`; ``//## File "...", line N``
    annotations `Comment.Preproc`; guards (``@P0``, ``@!PT``)
    `Name.Decorator`; opcodes (``LDG``) `Keyword` with their dotted
    modifiers (``.E.128``) `Keyword.Pseudo`; registers (``R12``, ``UR4``,
    ``P0``, ``PT``, ``RZ``) `Name.Variable`; special registers and the
    constant bank / descriptor prefixes (``SR_TID.X``, ``c[0x0][0x210]``,
    ``desc[UR4]``) `Name.Builtin`; labels `Name.Label`; section
    directives `Keyword.Declaration`.
    """

    name = "SASS (gpulab)"
    aliases = ["sass"]
    filenames = ["*.sass"]
    mimetypes = ["text/x-nvidia-sass"]

    tokens = {
        "root": [
            # An instruction line: offset, optional dual-issue brace, guard, opcode.
            (r"^([ \t]*)(" + _SASS_OFFSET + r")([ \t]*)(\{?)([ \t]*)(?:(" + _SASS_GUARD
             + r")([ \t]+))?([A-Z][A-Z0-9_]*)((?:\.[A-Z0-9_]+)*)",
             bygroups(Whitespace, Comment.Special, Whitespace, Punctuation, Whitespace,
                      Name.Decorator, Whitespace, Keyword, Keyword.Pseudo)),
            (r"^([ \t]*)([.$A-Za-z_][\w$.]*)(:)",
             bygroups(Whitespace, Name.Label, Punctuation)),
            (r"^([ \t]*)(\.[A-Za-z_]\w*)", bygroups(Whitespace, Keyword.Declaration)),
            include("common"),
        ],
        "common": [
            # The most frequent tokens first, for speed (as in PtxLexer): no rule before the registers'
            # old place matches where a register or a comma starts.
            (r"[ \t]+", Whitespace),
            (r"\n", Whitespace),
            (r",", Punctuation),
            (r"\b(?:R\d+|RZ|UR\d+|URZ|U?P[0-7]|U?PT|B\d+|SB\d+)(?:\.[A-Za-z0-9_]+)*\b",
             Name.Variable),
            (r"//##.*?$", Comment.Preproc),
            (r"//.*?$", Comment.Single),
            (_SASS_OFFSET, Comment.Special),
            (r"/\*.*?\*/", Comment.Multiline),
            (r'@?"(\\\\|\\"|[^"\n])*"', String.Double),
            (r"@[A-Za-z_]\w*", Name.Attribute),
            (r"(" + _SASS_GUARD + r")(?=\s)", Name.Decorator),
            (r"\b(?:SR_\w+(?:\.[XYZ])?|SRZ)\b", Name.Builtin),
            (r"\b(?:c|desc|gdesc)(?=\[)", Name.Builtin),
            (r"(?<=\|)\.[A-Za-z0-9_]+", Name.Variable),
            (r"\b(?:INF|QNAN|NAN)\b", Number.Float),
            (r"\b0[xX][0-9A-Fa-f]+\b", Number.Hex),
            (r"\b\d+\.\d*(?:[eE][+-]?\d+)?|\b\d+[eE][+-]?\d+\b", Number.Float),
            (r"\b\d+\b", Number.Integer),
            (r"\b" + _SASS_OPCODE + r"\b(?=\s|;|$)", Keyword),
            (r"\.L_[\w$.]*", Name.Label),
            (r"[.$A-Za-z_][\w$.]*", Name),
            (r"[-+*/|!&^~=<>?]", Operator),
            (r"[{}()\[\],;:`.]", Punctuation),
        ],
    }


_LEXERS: dict[str, type[Lexer]] = {
    "python": PythonLexer,
    "cuda": CudaLexer,
    "ptx": PtxLexer,
    "sass": SassLexer,
}


def lexer_for(language: str) -> Lexer:
    """Return a lexer for a pane language that keeps every line.

    Parameters
    ----------
    language : str
        A bundle pane language: ``"python"``, ``"cuda"``, ``"ptx"`` or
        ``"sass"``; anything else gets a plain text lexer.

    Returns
    -------
    pygments.lexer.Lexer
        A lexer built with ``stripnl=False`` and ``ensurenl=False`` so that
        line ``i`` of its output is line ``i`` of the input.
    """
    cls = _LEXERS.get(str(language).lower(), TextLexer)
    return cls(stripnl=False, stripall=False, ensurenl=False)


def tokens_by_line(text: str, language: str) -> list[list[tuple[_TokenType, str]]]:
    """Tokenise `text` as a whole and split the tokens into lines.

    Lexing the whole text keeps multi-line constructs (docstrings, block
    comments) right; splitting afterwards gives each line its own tokens.

    Parameters
    ----------
    text : str
        Pane text; ``\\r\\n`` is read as ``\\n``. A final newline does not
        start an extra line.
    language : str
        Pane language, as for `lexer_for`.

    Returns
    -------
    list of list of (token type, str)
        One list per line, without the newline characters; tokens never
        span lines. Empty text has no lines.
    """
    if not text:
        return []
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if text.endswith("\n"):
        text = text[:-1]
    lines: list[list[tuple[_TokenType, str]]] = [[]]
    line = lines[0]
    for ttype, value in lexer_for(language).get_tokens(text):
        if "\n" not in value:  # most tokens: the loop below, per token, was a third of the time
            if value:
                line.append((ttype, value))
            continue
        parts = value.split("\n")
        for j, part in enumerate(parts):
            if j:
                line = []
                lines.append(line)
            if part:
                line.append((ttype, part))
    # Pygments may append a trailing newline of its own; never add a line for it.
    while len(lines) > text.count("\n") + 1 and not lines[-1]:
        lines.pop()
    return lines

"""User text in generated C++: only as checked identifiers or escaped comments.

Names from the user (record field names, uniform and function names) reach
``kernel.cu`` through these two functions and no other way: a name that is
not a plain C identifier becomes a generated one, and any text in a comment
is written with every character outside printable ASCII escaped, so no
newline (or line splice) can end the comment.
"""

from __future__ import annotations

import re

_IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,31}")
# C++ keywords and alternative tokens, and names the generated code defines itself.
_RESERVED = frozenset("""
    alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t char32_t class
    compl concept const consteval constexpr constinit const_cast continue co_await co_return co_yield decltype
    default delete do double dynamic_cast else enum explicit export extern false float for friend goto if inline
    int long mutable namespace new noexcept not not_eq nullptr operator or or_eq private protected public register
    reinterpret_cast requires return short signed sizeof static static_assert static_cast struct switch template
    this thread_local throw true try typedef typeid typename union unsigned using virtual void volatile wchar_t
    while xor xor_eq
""".split())


def identifier(name: str, fallback: str) -> str:
    """``name`` when it is a plain C identifier gpulab can use as it is, else ``fallback``.

    A usable name is ASCII letters, digits and ``_``, starts with a letter, has no
    ``__`` (reserved in C++), is at most 32 characters and is no C++ keyword.
    ``fallback`` must itself be a valid identifier (it is the generated name).
    """
    if not _IDENTIFIER.fullmatch(fallback):
        raise ValueError(f"{fallback!r} is not a C identifier")
    if isinstance(name, str) and _IDENTIFIER.fullmatch(name) and "__" not in name and name not in _RESERVED:
        return name
    return fallback


def comment(text) -> str:
    """``text`` as it may stand in a ``//`` comment: printable ASCII kept, everything else escaped.

    The result never holds a newline and never ends in a backslash (which would
    splice the next line of code into the comment).
    """
    text = str(text)
    safe = text if text.isascii() and text.isprintable() else ascii(text)[1:-1]
    return safe + "." if safe.endswith("\\") else safe

"""numba's typing errors, told in the user's terms: the expression, its line and caret, and gpulab's type names.

numba-cuda reports a failed overload as "No implementation of function
Function(<built-in function add>) found for signature: >>> add(float32,
Literal[str](one))" followed by every candidate it tried, and often without
the line (its typing error of numba's core class escapes the CUDA type
inference that would add it). Here the message is read for what numba
tried, the expression is found in the user's function, and the types are
named as gpulab names them (``f32``, not ``float32``).
"""

from __future__ import annotations

import ast
import re
import sys
import textwrap
from dataclasses import dataclass

from ....captures import READ_PREFIX
from ....errors import SourceLocation
from ....kernel import parse
from ....types import ALIASES

_SHORT = {long: short for short, long in ALIASES.items() if short not in ("bool_",)}
_SHORT.update({"boolean": "bool", "unicode_type": "str", "none": "None"})
_LITERAL = re.compile(r"Literal\[(\w+)\]\((.*?)\)(?=[,)\s]|$)")
_WORD = re.compile(r"\b[A-Za-z_]\w*\b")
_TRIED = re.compile(r"^\s*>>> (\w+)\((.*)\)\s*$", re.M)
_FUNCTION = re.compile(r"No implementation of function Function\((?:<built-in function (\w+)>|<class '(\w+)'>|"
                       r"<function (\w+)[^>]*>|([^)]*))\) found for signature")
_CASE = re.compile(r"^\s*\* \((.*)\) -> (\S+)\s*$", re.M)
_ATTRIBUTE = re.compile(r"Unknown attribute '(\w+)' of type (.+?)(?:\n|$)")
_FILE_LINE = re.compile(r'File "([^"]+)", line (\d+)')
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_LLVM = re.compile(r":\s+%")  # where numba appends the LLVM instruction it was lowering

# numba's operator functions -> (Python's symbol, the AST node classes that use it).
_OPERATORS = {
    "add": ("+", ast.Add), "sub": ("-", ast.Sub), "mul": ("*", ast.Mult), "truediv": ("/", ast.Div),
    "floordiv": ("//", ast.FloorDiv), "mod": ("%", ast.Mod), "pow": ("**", ast.Pow),
    "matmul": ("@", ast.MatMult), "lshift": ("<<", ast.LShift), "rshift": (">>", ast.RShift),
    "and_": ("&", ast.BitAnd), "or_": ("|", ast.BitOr), "xor": ("^", ast.BitXor),
    "lt": ("<", ast.Lt), "le": ("<=", ast.LtE), "gt": (">", ast.Gt), "ge": (">=", ast.GtE),
    "eq": ("==", ast.Eq), "ne": ("!=", ast.NotEq), "neg": ("-", ast.USub), "pos": ("+", ast.UAdd),
    "invert": ("~", ast.Invert), "not_": ("not", ast.Not),
}
_KNOWN_CASES = 6  # of the overloads numba knows, how many the message lists


def type_name(text: str) -> str:
    """A numba type as gpulab names it: ``float32`` -> ``f32``, ``Literal[str](one)`` -> ``str "one"``."""
    def literal(match: re.Match) -> str:
        kind, value = match.group(1), match.group(2)
        kind = _SHORT.get(kind, kind)
        return f'{kind} "{value}"' if kind == "str" else f"{kind} {value}"

    text = _LITERAL.sub(literal, text.strip())
    return _WORD.sub(lambda m: _SHORT.get(m.group(0), m.group(0)), text)


@dataclass(frozen=True)
class Explained:
    """A numba error as the user's terms put it.

    Attributes
    ----------
    message : str
        What numba could not do, in one or a few lines.
    location : SourceLocation or None
        The expression's line and column, when it was found.
    """

    message: str
    location: SourceLocation | None


def explain(exc: Exception, kernel) -> Explained:
    """Read numba's error ``exc`` about ``kernel``'s function: what failed, where, in gpulab's names."""
    if isinstance(exc, RecursionError):  # numba-cuda walks the control-flow graph recursively, a frame per block
        return Explained(f"`{kernel.name}` is too large for numba-cuda: its compiler went past Python's recursion "
                         f"limit ({sys.getrecursionlimit()}) following the function's branches (a frame per block: "
                         "a few hundred `if`s in a row can be too many). Split it into several @gpulab.kernel "
                         "functions that call each other", kernel.location())
    text = _ANSI.sub("", str(exc))
    function = _FUNCTION.search(text)
    if function:
        name = next(g for g in function.groups() if g)
        if name.startswith(f"<intrinsic {READ_PREFIX}"):
            return _read_index(text, kernel)
        return _no_implementation(text, name, kernel)
    for pattern, say in _SAID:
        found = pattern.search(text)
        if found:
            return Explained(say(kernel, *(type_name(g) for g in found.groups())), _line(text, kernel))
    if not text.strip():
        return Explained(f"numba failed on `{kernel.name}` without saying why ({type(exc).__name__}); the line "
                         "below is the function's: look for a call with more or fewer arguments than it takes",
                         kernel.location())
    attribute = _ATTRIBUTE.search(text)
    if attribute:
        name, owner = attribute.groups()
        where = _locate(kernel, lambda n: isinstance(n, ast.Attribute) and n.attr == name)
        return Explained(f"{type_name(owner)} has no attribute `{name}`", where or _line(text, kernel))
    lines = [line for line in text.split("\n\nFile ")[0].splitlines()
             if line.strip() and not line.startswith(("Failed in ", "During: "))]
    first = _LLVM.split(lines[0])[0] if lines else type(exc).__name__
    return Explained(type_name(first), _line(text, kernel))


_SAID = (
    (re.compile(r"Cannot unify (.+?) and (.+?) for '[^']*'"),
     lambda kernel, a, b: f"a value of `{kernel.name}` is a {a} on one path and a {b} on another; each value of a "
                          "kernel has one type: give both paths the same type"),
    (re.compile(r"Invalid use of getiter with parameters \((.+?)\)"),
     lambda kernel, what: f"a `for` loop of `{kernel.name}` goes over a {what}; a kernel loops over "
                          "range(...) only (for i in range(n):)"),
    (re.compile(r"Cannot cast (.+?) to ([\w\[\]]+)"),
     lambda kernel, found, wanted: f"`{kernel.name}` gives a {found} where a {wanted} is wanted (its declared "
                                   f"result, or what the primitive stores); numba converts numbers to numbers "
                                   f"only: make it one {wanted}"),
    (re.compile(r"Untyped global name '(\w+)'"),
     lambda kernel, name: f"`{name}` is nothing a kernel can use here (numba knows no type for it); a kernel "
                          "uses numbers, captured arrays, math functions and other @gpulab.kernel functions"),
)
"""numba's words for other refusals, and gpulab's: a pattern, and a function of the kernel and its groups."""
_READ_CALL = re.compile(rf">>> {READ_PREFIX}\d+\((.*)\)\s*$", re.M)


def _read_index(text: str, kernel) -> Explained:
    """A captured array read with an index numba-cuda refuses (a float): said at the read, naming the array."""
    arguments = _split_arguments(_READ_CALL.search(text).group(1)) if _READ_CALL.search(text) else []
    numbers = [int(m.group(1)) for m in (re.fullmatch(r"Literal\[int\]\((-?\d+)\)", a) for a in arguments[2:4]) if m]
    index = ", ".join(type_name(a) for a in arguments[5:]) or "a value that is not an integer"
    where = (SourceLocation(kernel.filename, numbers[0], numbers[1], kernel.line_offset) if len(numbers) == 2
             else kernel.location())
    name = where.text()[where.column:].split("[")[0].strip() if where.column is not None else ""
    name = name if name.isidentifier() else "the array"
    return Explained(f"captured array `{name}` is read with an index of type {index}; its indices must be "
                     f"integers (or bools): convert the index first, {name}[int(i)]", where)


def _no_implementation(text: str, function: str, kernel) -> Explained:
    tried = _TRIED.search(text)
    name, arguments = (tried.group(1), tried.group(2)) if tried else (function, "")
    argument_types = [type_name(part) for part in _split_arguments(arguments)]
    plain = [t.split(" ")[0] for t in argument_types]
    symbol = _OPERATORS.get(name, (None,))[0]
    what = f"`{symbol}`" if symbol else "indexing `[]`" if name == "getitem" else f"`{name}()`"
    message = [f"there is no {what} for ({', '.join(plain)})", f"numba tried {name}({', '.join(argument_types)})"]
    if name == "getitem" and plain and plain[0] in _SHORT.values():
        message[0] += f": {plain[0]} is one value, not an array; a kernel indexes the arrays it captures (docs/memory.md)"
    cases = list(dict.fromkeys(f"({type_name(args)}) -> {type_name(result)}" for args, result in _CASE.findall(text)))
    cases.sort(key=lambda case: plain[0] not in case if plain else False)  # those of the first argument's type first
    if cases:
        more = f" and {len(cases) - _KNOWN_CASES} more" if len(cases) > _KNOWN_CASES else ""
        message.append(f"it has {name} for {', '.join(cases[:_KNOWN_CASES])}{more}")
    literals = re.findall(r"Literal\[\w+\]\((.*?)\)", arguments)
    where = _locate(kernel, lambda n: uses(n, name), prefer=lambda n: _has_constants(n, literals))
    return Explained("\n  ".join(message), where or _line(text, kernel))


def _split_arguments(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        if char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    if text[start:].strip():
        parts.append(text[start:])
    return [part.strip() for part in parts]


def uses(node: ast.AST, name: str) -> bool:
    """Whether ``node`` is an expression that makes numba look up function ``name``."""
    operator = _OPERATORS.get(name, (None, None))[1]
    if operator is not None:
        if isinstance(node, (ast.BinOp, ast.UnaryOp, ast.AugAssign)):
            return isinstance(node.op, operator)
        if isinstance(node, ast.Compare):
            return any(isinstance(op, operator) for op in node.ops)
        return False
    if name == "getitem":
        return isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load)
    if isinstance(node, ast.Call):
        func = node.func
        return (isinstance(func, ast.Name) and func.id == name) or (isinstance(func, ast.Attribute) and func.attr == name)
    return False


def _has_constants(node: ast.AST, values: list[str]) -> bool:
    found = {str(n.value) for n in ast.walk(node) if isinstance(n, ast.Constant)}
    return bool(values) and all(value in found for value in values)


def function_tree(kernel) -> tuple[ast.AST, int] | None:
    """The kernel's source parsed, and how many columns ``textwrap.dedent`` took off."""
    source = kernel.source
    dedented = textwrap.dedent(source)
    first = next((line for line in source.splitlines() if line.strip()), "")
    indent = len(first) - len(first.lstrip())
    try:
        return parse(dedented), indent
    except SyntaxError:
        return None


def _locate(kernel, matches, prefer=lambda node: False) -> SourceLocation | None:
    """Where the first expression of the function that ``matches`` is (one that ``prefer`` picks, first)."""
    parsed = function_tree(kernel)
    if parsed is None:
        return None
    tree, indent = parsed
    found = sorted((node for node in ast.walk(tree) if matches(node)), key=lambda n: (n.lineno, n.col_offset))
    best = [node for node in found if prefer(node)] or found
    if not best:
        return None
    return SourceLocation(kernel.filename, kernel.first_line + best[0].lineno - 1, best[0].col_offset + indent,
                          kernel.line_offset)


def _line(text: str, kernel) -> SourceLocation:
    """The first line of the kernel's file that numba's message names, else the ``def`` line."""
    for filename, line in _FILE_LINE.findall(text):
        if filename.rsplit("/", 1)[-1] == kernel.filename.rsplit("/", 1)[-1]:  # numba may print it relative
            return SourceLocation(kernel.filename, int(line), None, kernel.line_offset)
    return kernel.location()

"""Kernels drawn from a small grammar of typed Python functions, with the value each should give.

A drawn kernel is an expression tree over the element type ``T`` of its
parameters: parameters, constants written ``T(c)``, ``+ - * // % /``,
comparisons, ``min``, ``max``, ``abs``, negation and ``x if c else y``,
returned at once, from an ``if``, or after a ``while`` loop of a few steps
(now and then one that never ends). :func:`source` writes it as a Python
function; :func:`evaluate` computes it here, in plain Python on exact
values, the way numba-cuda types it (the rule gpulab's host and devices
follow; docs/conversion.md):

- integers: ``+ - * // %`` in 64 bits (int64 when ``T`` is signed, uint64
  when not; uint64 wraps); ``abs``, ``min`` and ``max`` in their operands' type
  (``abs`` of int8's least is itself), negation too, widened after (``-a``
  of int8's least is -128); ``x // 0`` and ``x % 0`` are 0 (NumPy's error
  model);
- floats: each operation in ``T``, rounded as IEEE-754 rounds it;
- bools: ``and``, ``or``, ``not``, ``==``, ``!=``, ``&``, ``|``, ``^``;
- the value a kernel returns is stored in its declared type ``T``.

A case the grammar can write but whose value numba leaves to the machine
is ``UNDEFINED``: the call must still return or raise a gpulab error. Those
are a signed ``+ - *`` that overflows int64 (numba marks them ``nsw`` for
LLVM, which may then fold ``a < a + c`` to ``c > 0``), ``INT64_MIN // -1``,
and a float ``//`` or ``%`` by 0 or of an infinity.
"""

from __future__ import annotations

import hashlib
import linecache
import math
import operator
from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

import gpulab

TYPES = {"f64": np.float64, "f32": np.float32, "f16": np.float16, "i64": np.int64, "i32": np.int32,
         "i8": np.int8, "u64": np.uint64, "u8": np.uint8, "bool_": np.bool_}
UNDEFINED = object()
"""The value of an expression numba leaves to the machine."""


@dataclass(frozen=True)
class Node:
    """An expression: ``kind`` (param, const, binary, compare, call, abs, neg, choose) and its parts."""

    kind: str
    parts: tuple = ()


def _is_float(name: str) -> bool:
    return name.startswith("f")


def _is_int(name: str) -> bool:
    return name[0] in "iu"


# --- drawing -----------------------------------------------------------------------------------------------------
def _constants(type_name: str):
    if type_name == "bool_":
        return st.booleans()
    if _is_float(type_name):
        return st.sampled_from([0.0, 0.5, 1.0, -1.0, 2.0, 3.0, -2.5, 1e-3, 65504.0])
    info = np.iinfo(TYPES[type_name])
    return st.sampled_from(sorted({0, 1, 2, 3, 7, info.max, info.min, max(info.min, -1), max(info.min, -5)}))


def expressions(type_name: str, names: tuple[str, ...]):
    """Expressions of ``T``-typed parameters ``names``."""
    leaves = st.one_of(st.sampled_from(names).map(lambda n: Node("param", (n,))),
                       _constants(type_name).map(lambda c: Node("const", (c,))))
    if type_name == "bool_":
        def extend(inner):
            return st.one_of(
                st.tuples(st.sampled_from(["and", "or", "==", "!=", "&", "|", "^"]), inner, inner)
                .map(lambda t: Node("logic", t)),
                inner.map(lambda e: Node("not", (e,))))
        return st.recursive(leaves, extend, max_leaves=6)
    operators = ["+", "-", "*"]
    if type_name != "f16":  # numba-cuda computes f16 // and % in float32: not in this grammar
        operators += ["//", "%"]
    if _is_float(type_name):
        operators.append("/")

    def extend(inner):
        options = [st.tuples(st.sampled_from(operators), inner, inner).map(lambda t: Node("binary", t)),
                   inner.map(lambda e: Node("abs", (e,))),
                   st.tuples(conditions(inner), inner, inner).map(lambda t: Node("choose", t))]
        if type_name != "f16":
            options.append(st.tuples(st.sampled_from(["min", "max"]), inner, inner).map(lambda t: Node("call", t)))
        if not type_name.startswith("u"):
            options.append(inner.map(lambda e: Node("neg", (e,))))
        return st.one_of(options)

    return st.recursive(leaves, extend, max_leaves=6)


def conditions(inner):
    return st.tuples(st.sampled_from(["<", "<=", ">", ">=", "==", "!="]), inner, inner).map(
        lambda t: Node("compare", t))


@dataclass(frozen=True)
class Drawn:
    """A drawn kernel: its element type, parameters, body and text."""

    type_name: str
    names: tuple[str, ...]
    form: str  # "return", "if", "loop", "forever"
    parts: tuple

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(TYPES[self.type_name])


@st.composite
def kernels(draw, arity: int = 2, types=tuple(TYPES), result: str | None = None, loops: bool = True):
    """A kernel of ``arity`` parameters of one drawn element type (returning ``result``, "bool" for a predicate)."""
    type_name = draw(st.sampled_from(types))
    names = ("a", "b", "c")[:arity]
    body = expressions(type_name, names)
    if result == "bool":
        inner = expressions(type_name, names) if type_name != "bool_" else body
        return Drawn(type_name, names, "predicate", (draw(conditions(inner)) if type_name != "bool_" else draw(body),))
    forms = ["return"] * 4 + ["if"] * 4 + (["loop"] * 3 + ["forever"] if loops else [])
    form = draw(st.sampled_from(forms))
    if form == "return":
        return Drawn(type_name, names, form, (draw(body),))
    if form == "if":
        return Drawn(type_name, names, form, (draw(conditions(body) if type_name != "bool_" else body),
                                              draw(body), draw(body)))
    step = draw(expressions(type_name, ("s", *names)))
    return Drawn(type_name, names, form, (step, draw(st.integers(0, 4))))


# --- writing -----------------------------------------------------------------------------------------------------
def _text(node: Node, type_name: str) -> str:
    kind, parts = node.kind, node.parts
    if kind == "param":
        return parts[0]
    if kind == "const":
        return repr(parts[0]) if type_name == "bool_" else f"{type_name}({parts[0]!r})"
    if kind in ("binary", "compare"):
        return f"({_text(parts[1], type_name)} {parts[0]} {_text(parts[2], type_name)})"
    if kind == "logic":
        return f"({_text(parts[1], type_name)} {parts[0]} {_text(parts[2], type_name)})"
    if kind == "not":
        return f"(not {_text(parts[0], type_name)})"
    if kind == "call":
        return f"{parts[0]}({_text(parts[1], type_name)}, {_text(parts[2], type_name)})"
    if kind == "abs":
        return f"abs({_text(parts[0], type_name)})"
    if kind == "neg":
        return f"(-{_text(parts[0], type_name)})"
    condition, yes, no = parts
    return f"({_text(yes, type_name)} if {_text(condition, type_name)} else {_text(no, type_name)})"


def source(drawn: Drawn, name: str = "f") -> str:
    """The kernel as a Python function ``name``."""
    t = drawn.type_name
    params = ", ".join(f"{n}: {t}" for n in drawn.names)
    if drawn.form == "predicate":
        return f"def {name}({params}) -> bool:\n    return {_text(drawn.parts[0], t)}\n"
    head = f"def {name}({params}) -> {t}:\n"
    if drawn.form == "return":
        return head + f"    return {_text(drawn.parts[0], t)}\n"
    if drawn.form == "if":
        condition, yes, no = drawn.parts
        return head + f"    if {_text(condition, t)}:\n        return {_text(yes, t)}\n    return {_text(no, t)}\n"
    step, count = drawn.parts
    test = "i < 1 or i > 0" if drawn.form == "forever" else f"i < {count}"
    return head + (f"    s = {drawn.names[0]}\n    i = 0\n    while {test}:\n        s = {_text(step, t)}\n"
                   f"        i += 1\n    return s\n")


def define(text: str, name: str = "f", **names):
    """The function ``name`` that ``text`` defines, its source in linecache under a name of its own."""
    filename = f"<property-{hashlib.sha256(text.encode()).hexdigest()[:16]}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    namespace = {alias: getattr(gpulab, alias) for alias in TYPES}
    namespace.update(names)
    exec(compile(text, filename, "exec"), namespace)
    return namespace[name]


# --- evaluating --------------------------------------------------------------------------------------------------
class Undefined(Exception):
    """Raised inside :func:`evaluate` where numba leaves the value to the machine."""


def _wrap(value: int, bits: int, signed: bool) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if signed and value >> (bits - 1) else value


def store(value, type_name: str):
    """``value`` stored in ``T``, as numba casts it."""
    dtype = np.dtype(TYPES[type_name])
    if value is UNDEFINED:
        return UNDEFINED
    if dtype.kind == "b":
        return np.bool_(bool(value))
    if dtype.kind in "iu":
        return dtype.type(_wrap(int(value), dtype.itemsize * 8, dtype.kind == "i"))
    return dtype.type(value)


def evaluate(drawn: Drawn, *items):
    """The kernel's value for one item of each parameter (NumPy scalars of ``T``), stored in its result type;
    ``UNDEFINED`` where numba leaves it to the machine; ``None`` for a loop that never ends."""
    t = drawn.type_name
    env = {name: _leaf(x, t) for name, x in zip(drawn.names, items)}
    try:
        if drawn.form == "predicate":
            return np.bool_(bool(_plain(_eval(drawn.parts[0], env, t))))
        if drawn.form == "return":
            return store(_plain(_eval(drawn.parts[0], env, t)), t)
        if drawn.form == "if":
            condition, yes, no = drawn.parts
            return store(_plain(_eval(yes if _plain(_eval(condition, env, t)) else no, env, t)), t)
        if drawn.form == "forever":
            return None
        step, count = drawn.parts
        env["s"] = env[drawn.names[0]]
        if _is_int(t):  # numba gives s one type: T's, or int64/uint64 when a step computes in 64 bits
            bits = max(env["s"][1], _eval(step, dict(env), t)[1])
            env["s"] = (env["s"][0], bits)
        for _ in range(count):
            env["s"] = _eval(step, env, t)
            if _is_int(t):
                env["s"] = (env["s"][0], bits)
        return store(_plain(env["s"]), t)
    except Undefined:
        return UNDEFINED


def _leaf(x, type_name: str):
    """A value as :func:`_eval` holds it: a bool, a NumPy float of ``T``, or an integer as ``(value, bits)``."""
    if type_name == "bool_":
        return bool(x)
    if _is_int(type_name):
        return (int(x), np.dtype(TYPES[type_name]).itemsize * 8)
    return TYPES[type_name](x)


def _plain(value):
    return value[0] if isinstance(value, tuple) else value


def _eval(node: Node, env: dict, t: str):
    kind, parts = node.kind, node.parts
    if kind == "param":
        return env[parts[0]]
    if kind == "const":
        return _leaf(parts[0], t)
    if kind == "logic":
        left, right = _eval(parts[1], env, t), _eval(parts[2], env, t)
        return {"and": lambda: left and right, "or": lambda: left or right, "==": lambda: left == right,
                "!=": lambda: left != right, "&": lambda: left & right, "|": lambda: left | right,
                "^": lambda: left ^ right}[parts[0]]()
    if kind == "not":
        return not _eval(parts[0], env, t)
    if kind == "choose":
        condition, yes, no = parts
        chosen = _eval(yes if _plain(_eval(condition, env, t)) else no, env, t)
        if not _is_int(t):
            return chosen
        return (chosen[0], max(_width(yes, env, t), _width(no, env, t)))
    values = [_eval(p, env, t) for p in parts if isinstance(p, Node)]
    if kind == "compare":
        return _COMPARE[parts[0]](*(_plain(v) for v in values))
    if _is_int(t):
        return _integer(kind, parts[0], values, signed=t[0] == "i")
    return _float(kind, parts[0], values, TYPES[t])


def _width(node: Node, env: dict, t: str) -> int:
    """The width numba gives an integer expression: ``T``'s, or 64 bits once an operation widened it."""
    kind, parts = node.kind, node.parts
    if kind == "param":
        return env[parts[0]][1]
    if kind == "const":
        return np.dtype(TYPES[t]).itemsize * 8
    if kind in ("binary", "neg"):
        return 64
    if kind == "abs":
        return _width(parts[0], env, t)
    if kind == "call":
        return max(_width(parts[1], env, t), _width(parts[2], env, t))
    return max(_width(parts[1], env, t), _width(parts[2], env, t))  # choose


_COMPARE = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq,
            "!=": operator.ne}


def _integer(kind: str, symbol, values: list, signed: bool) -> tuple[int, int]:
    """An integer operation as numba computes it: ``+ - * // %`` and negation in 64 bits (int64 when ``T`` is
    signed, else uint64), ``abs``, ``min`` and ``max`` in their operands' type."""
    if kind == "abs":
        value, bits = values[0]
        return _wrap(abs(value), bits, signed), bits
    if kind == "neg":  # numba negates in the operand's width, then widens ("negate before upcasting")
        value, bits = values[0]
        return _wrap(_wrap(-value, bits, signed), 64, signed), 64
    (x, x_bits), (y, y_bits) = values
    if kind == "call":
        return (min(x, y) if symbol == "min" else max(x, y)), max(x_bits, y_bits)
    if symbol in ("//", "%"):
        if y == 0:
            return 0, 64
        if signed and x == -(2**63) and y == -1:
            raise Undefined
        return _wrap(x // y if symbol == "//" else x % y, 64, signed), 64
    exact = {"+": operator.add, "-": operator.sub, "*": operator.mul}[symbol](x, y)
    if signed and not -(2**63) <= exact < 2**63:
        raise Undefined  # numba's signed + - * are LLVM's nsw: an overflow is undefined (a < a + c may fold)
    return _wrap(exact, 64, signed), 64


def _float(kind: str, symbol, values: list, scalar):
    """A float operation in ``T``."""
    with np.errstate(all="ignore"):
        if kind == "abs":
            return abs(values[0])
        if kind == "neg":
            return -values[0]
        x, y = values
        if kind == "call":
            if math.isnan(x) or math.isnan(y):
                raise Undefined  # which NaN min() and max() give is numba's choice
            return min(x, y) if symbol == "min" else max(x, y)
        if symbol in ("//", "%"):
            if y == 0 or not (math.isfinite(x) and math.isfinite(y)):
                raise Undefined
            return scalar(np.floor_divide(x, y) if symbol == "//" else np.remainder(x, y))
        return scalar({"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv}[symbol](x, y))


def inputs(type_name: str, n: int, data) -> np.ndarray:
    """``n`` items of ``T`` drawn by ``data``: edge values (its ends, 0, -0.0, inf, NaN) and small ones."""
    dtype = np.dtype(TYPES[type_name])
    if dtype.kind == "b":
        values = st.booleans()
    elif dtype.kind in "iu":
        info = np.iinfo(dtype)
        values = st.one_of(st.sampled_from([0, 1, info.max, info.min, max(info.min, -1)]),
                           st.integers(max(info.min, -20), min(info.max, 20)))
    else:
        values = st.one_of(st.sampled_from([0.0, -0.0, 1.0, -1.0, math.inf, -math.inf, math.nan,
                                            float(np.finfo(dtype).max)]),
                           st.floats(-100, 100, width=dtype.itemsize * 8))
    return np.array(data.draw(st.lists(values, min_size=n, max_size=n)), dtype=dtype)

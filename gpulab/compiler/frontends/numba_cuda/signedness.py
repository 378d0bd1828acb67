"""uint64 met with a signed integer: refused at the operation, on the host as on the device.

numba types an operation between a uint64 and a signed integer (a bool or
an int constant included) as int64: a uint64 from 2**63 up wraps to a
negative number, so ``a + b``, ``a // 2`` and ``a == b`` give other values
than NumPy's, which computes float64 (with a Python int, uint64). Every
other pair of element types numba computes in a type that holds NumPy's
result exactly (tests/nocuda/test_promotion.py checks every pair). Once
numba-cuda has typed a kernel (:func:`gpulab.compiler.frontends.numba_cuda.check` for
the host, the frontend of a build for a device), :func:`refuse` reads its
typed code and those of the kernels it calls, and names the first such
operation with what to write instead. ``/`` is left alone (both give
float64), and so is a comparison with a constant float64 holds exactly.
"""

from __future__ import annotations

import ast
import operator

import numpy as np

from ....errors import KernelTypeError, SourceLocation
from . import errors as numba_errors

_EXACT_CONSTANT = 2**53
"""A comparison of a uint64 with an int constant of at most this size is exact in float64, where numba makes it."""
_LEFT_ALONE = {operator.truediv, operator.itruediv}
_COMPARISONS = {operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne}
_SYMBOLS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "//", ast.Mod: "%", ast.Pow: "**",
            ast.LShift: "<<", ast.RShift: ">>", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^", ast.MatMult: "@",
            ast.Div: "/", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}


def refuse(kernel, dispatcher) -> None:
    """Raise when ``kernel``'s typed code (``dispatcher``'s, and that of the kernels it calls) mixes uint64 with
    a signed integer.

    Raises
    ------
    KernelTypeError
        At the first such operation: its types, what numba computes, and how to say which type is meant.
    """
    kernels = {(k.compiled_filename, k.name): k for k in _kernels(kernel)}
    seen, pending = set(), [dispatcher]
    while pending:
        found = pending.pop()
        if id(found) in seen:
            continue
        seen.add(id(found))
        function = found.py_func
        owner = kernels.get((function.__code__.co_filename, function.__name__), kernel)
        for result in found.overloads.values():
            typed = result.type_annotation.typemap
            for expression in result.type_annotation.calltypes:
                if getattr(expression, "op", None) in ("binop", "inplace_binop"):
                    _check(owner, expression, typed[expression.lhs.name], typed[expression.rhs.name])
            pending += [t.dispatcher for t in typed.values() if hasattr(t, "dispatcher")]


def _kernels(kernel):
    yield kernel
    for nested in kernel.analysis.kernels:
        yield from _kernels(nested)


def _check(kernel, expression, left, right) -> None:
    function = expression.immutable_fn if expression.op == "inplace_binop" else expression.fn
    unsigned_left = _mixed(left, right)
    if function in _LEFT_ALONE or not (unsigned_left or _mixed(right, left)):
        return
    compares = function in _COMPARISONS
    if compares and any(_small_constant(t) for t in (left, right)):
        return
    node, where = _expression(kernel, function.__name__, expression.loc.line)
    text = ast.unparse(node) if node is not None else where.text().strip()
    said = _said(right if unsigned_left else left, compares, *_sides(node, unsigned_left))
    raise KernelTypeError(f"`{text}` {said}", where)


def _said(signed, compares: bool, u: str, s: str, write) -> str:
    """What is wrong with an operation of a u64 ``u`` and ``s`` of numba type ``signed``, and what to write."""
    from numba.np.numpy_support import as_dtype

    constant = getattr(signed, "literal_value", None)
    if constant is not None:
        other = f"the constant {constant!r}"
    else:
        name = numba_errors.type_name(str(signed))
        other = f"a{'n' * (name[0] in 'aeio')} {name}"
    if constant is not None and constant >= 0:
        fix = f"write the constant as u64({int(constant)}) to {'compare' if compares else 'compute'} in u64"
    elif compares:
        fix = f"convert one side: {write(f'i64({u})', s)} for {u} below 2**63, {write(u, f'u64({s})')} for {s} " \
              "at least 0"
    elif constant is not None:
        fix = f"compute in i64 or f64: {write(f'i64({u})', s)}, {write(f'f64({u})', s)}"
    else:
        fix = (f"convert one side to say which you mean: {write(f'f64({u})', s)} computes in f64 as NumPy does, "
               f"{write(u, f'u64({s})')} in u64 (for {s} at least 0), {write(f'i64({u})', s)} in i64")
    if compares:
        return (f"compares a u64 with {other}: numba compares them as f64 values, which tell integers apart only up "
                f"to 2**53 (NumPy compares them exactly); {fix}")
    if constant is None:
        numpy = f"computes it in {numba_errors.type_name(np.result_type(np.uint64, as_dtype(signed)).name)}"
    else:
        numpy = "refuses it: a u64 holds no negative constant" if constant < 0 else "computes it in u64"
    return (f"mixes a u64 with {other}: numba computes it in i64, where a u64 from 2**63 up wraps to a negative "
            f"number (NumPy {numpy}); {fix}")


def _sides(node, unsigned_left: bool):
    """The texts of the u64 side and the other side of ``node``, and a function that writes the expression again
    from two sides in their order (``write("f64(a)", "b")`` is ``f64(a) + b``)."""
    if isinstance(node, ast.BinOp):
        left, symbol, right = node.left, _SYMBOLS[type(node.op)], node.right
    elif isinstance(node, ast.AugAssign):
        left, symbol, right = node.target, _SYMBOLS[type(node.op)] + "=", node.value
    elif isinstance(node, ast.Compare) and len(node.ops) == 1:
        left, symbol, right = node.left, _SYMBOLS[type(node.ops[0])], node.comparators[0]
    else:
        return "x", "y", lambda unsigned, signed: f"{unsigned} ... {signed}"
    unsigned, signed = (left, right) if unsigned_left else (right, left)
    return ast.unparse(unsigned), ast.unparse(signed), lambda u, s: (f"{u} {symbol} {s}" if unsigned_left
                                                                      else f"{s} {symbol} {u}")


def _mixed(unsigned, signed) -> bool:
    """Whether numba computes ``unsigned`` with ``signed`` in int64 though ``unsigned`` is a uint64."""
    from numba.core import types

    is_u64 = isinstance(unsigned, types.Integer) and not unsigned.signed and unsigned.bitwidth == 64
    return is_u64 and (isinstance(signed, types.Boolean) or (isinstance(signed, types.Integer) and signed.signed))


def _small_constant(numba_type) -> bool:
    value = getattr(numba_type, "literal_value", None)
    return isinstance(value, (bool, int)) and abs(value) <= _EXACT_CONSTANT


def _expression(kernel, name: str, line: int) -> tuple[ast.AST | None, SourceLocation]:
    """The first expression on ``line`` of ``kernel`` that makes numba look up ``name``, and its place."""
    parsed = numba_errors.function_tree(kernel)
    if parsed is not None:
        tree, indent = parsed
        nodes = sorted((node for node in ast.walk(tree) if numba_errors.uses(node, name)
                        and kernel.first_line + node.lineno - 1 == line), key=lambda n: (n.lineno, n.col_offset))
        if nodes:
            return nodes[0], SourceLocation(kernel.filename, line, nodes[0].col_offset + indent, kernel.line_offset)
    return None, kernel.location(line)

"""The operators of a kernel's interpreted host code, typed as numba-cuda types them.

The host runs a kernel compiled by numba for the CPU, or, when numba cannot
compile it (float16 arithmetic), in the interpreter on NumPy scalars. NumPy
types operations its own way: ``f16 * 0.1`` and ``f16 + u8`` in float16,
``f16 // f16`` in float16, where numba-cuda computes float64, float32 and
float32, so an interpreted result would differ from the device's (``x *
0.1`` for 19,896 of the 63,488 finite float16 values). In interpreted code
each arithmetic operator and comparison is therefore a call: ``a + b``
becomes ``_gpulab_add(a, b)``, which casts both operands to the
types of numba-cuda's signature for them, computes with NumPy and casts the
result to the signature's result type. Operands that are no numbers (a
record, a tuple) are computed as Python computes them; a NumPy array (the
host's portable tree calls an operator on whole arrays of pairs,
:mod:`gpulab.host.portable`) is typed as its items are.
"""

from __future__ import annotations

import ast
import functools
import operator

import numpy as np

PREFIX = "_gpulab_"
"""``a + b`` is ``_gpulab_add(a, b)`` in interpreted code, ``-a`` is ``_gpulab_neg(a)``."""
_BINARY = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "truediv", ast.FloorDiv: "floordiv",
           ast.Mod: "mod", ast.Pow: "pow", ast.LShift: "lshift", ast.RShift: "rshift", ast.BitAnd: "and_",
           ast.BitOr: "or_", ast.BitXor: "xor", ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge",
           ast.Eq: "eq", ast.NotEq: "ne"}
_UNARY = {ast.USub: "neg", ast.UAdd: "pos", ast.Invert: "invert"}
_PYTHON = {bool: "boolean", int: "int64", float: "float64", complex: "complex128"}
"""numba's types of Python values: a constant's (``Literal[int]`` types as int64 does) or a ``range``'s."""


def rewrite(definition: ast.FunctionDef) -> None:
    """Make each arithmetic operator and comparison of ``definition`` a call of its function in :func:`bindings`
    (in place, children before their parents and without recursion: an expression may nest ~800 deep; line
    numbers kept)."""
    replaced: dict[int, ast.AST] = {}
    for node in reversed(list(ast.walk(definition))):
        for field, value in ast.iter_fields(node):
            if isinstance(value, list):
                value[:] = [replaced.get(id(item), item) for item in value]
            elif isinstance(value, ast.AST) and id(value) in replaced:
                setattr(node, field, replaced[id(value)])
        typed = _typed_node(node)
        if typed is not node:
            replaced[id(node)] = ast.copy_location(typed, node)


def _typed_node(node: ast.AST) -> ast.AST:
    """``node`` as a call of its operator's function (its children already are), or ``node`` itself."""
    if isinstance(node, ast.BinOp):
        return _call(_BINARY[type(node.op)], [node.left, node.right], node)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _call(_UNARY[type(node.op)], [node.operand], node)
    if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
        value = _call(_BINARY[type(node.op)], [ast.copy_location(ast.Name(id=node.target.id, ctx=ast.Load()), node),
                                               node.value], node)
        return ast.Assign(targets=[node.target], value=value)
    if isinstance(node, ast.Compare) and all(type(op) in _BINARY for op in node.ops):  # not `is`, `in`
        operands = [node.left, *node.comparators]
        pairs = [_call(_BINARY[type(op)], [left, right], node)
                 for op, left, right in zip(node.ops, operands, operands[1:])]
        return pairs[0] if len(pairs) == 1 else ast.BoolOp(op=ast.And(), values=pairs)
    return node


def _call(name: str, args: list, where: ast.AST) -> ast.Call:
    function = ast.copy_location(ast.Name(id=PREFIX + name, ctx=ast.Load()), where)
    return ast.copy_location(ast.Call(func=function, args=args, keywords=[]), where)


def _operator(name: str, arity: int):
    """The function interpreted code calls for ``operator.<name>``: computed as numba-cuda types it, per the
    Python types of its operands."""
    known: dict = {}

    if arity == 1:
        def typed(a):
            types = _type_of(a)
            found = known.get(types) or known.setdefault(types, _typed(name, types))
            return found(a)
    else:
        def typed(a, b):
            types = (_type_of(a), _type_of(b))
            found = known.get(types) or known.setdefault(types, _typed(name, *types))
            return found(a, b)

    typed.__name__ = PREFIX + name
    return typed


def _type_of(value) -> type:
    """The type an operand is typed by: its own, or an array's items' (NumPy's scalar types cast arrays too)."""
    return value.dtype.type if isinstance(value, np.ndarray) else type(value)


@functools.cache
def bindings() -> dict[str, object]:
    """What interpreted code that :func:`rewrite` changed binds: a function per operator."""
    return {PREFIX + name: _operator(name, 1 if name in _UNARY.values() else 2)
            for name in (*_BINARY.values(), *_UNARY.values())}


def _typed(name: str, *operand_types: type):
    """A function of operands of these Python types that computes ``operator.<name>`` as numba-cuda's
    signature for them says (operands cast to its types, the result to its result type); the operator itself
    when one is no number or numba-cuda has no signature."""
    from numba.core import types
    from numba.cuda.descriptor import cuda_target
    from numba.np.numpy_support import as_dtype, from_dtype

    function = getattr(operator, name)
    numba_types = []
    for python_type in operand_types:
        if python_type in _PYTHON:
            numba_types.append(getattr(types, _PYTHON[python_type]))
        elif issubclass(python_type, np.number | np.bool_):
            numba_types.append(from_dtype(np.dtype(python_type)))
        else:
            return function
    context = cuda_target.typing_context
    context.refresh()
    try:
        signature = context.resolve_function_type(function, tuple(numba_types), {})
        casts = [as_dtype(t).type for t in signature.args]
        result = as_dtype(signature.return_type).type
    except Exception:  # noqa: BLE001 - no signature: the check refused such a kernel on the device as well
        return function
    natural = _natural(function, casts)
    if natural is None:  # NumPy has no such operation (a bool's negative): numba computes it in its result type
        casts, natural = [result] * len(casts), _natural(function, [result] * len(casts))
    if tuple(casts) == operand_types and natural is result:
        return function  # NumPy computes it so already
    if len(casts) == 1:
        only, = casts
        return lambda a: result(function(only(a)))
    left, right = casts
    return lambda a, b: result(function(left(a), right(b)))


def _natural(function, casts) -> type | None:
    """The type NumPy gives ``function`` of NumPy scalars of these types (``None`` where it has none)."""
    try:
        with np.errstate(all="ignore"):
            return type(function(*(cast(1) for cast in casts)))
    except Exception:  # noqa: BLE001 - NumPy has no such operation (a bool's negative)
        return None

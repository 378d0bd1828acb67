"""The purity check: what a kernel may read, call and change, decided from its AST.

It fails closed: a kernel may use only the statements and expressions listed
here, call only what is known pure by identity (the functions of
:data:`MATH_FUNCTIONS` and :data:`CMATH_FUNCTIONS`, the NumPy ufuncs of
:data:`NUMPY_UFUNCS`, the element types' scalar types, a few built-ins and
other checked kernels), and read only its own values, their attributes (a
record's fields, ``.real``), scalars and the constants of math, cmath and
NumPy. Everything else is refused before anything runs, with the file and
line. Free variables are classified here: scalars become *uniforms* (kernel
parameters set at launch); arrays become *captured arrays* (also passed at
launch; read item by item and measured, never written: :mod:`gpulab.captures`);
pure functions, constants and other kernels are
*references*, bound by value when the kernel is compiled (a module attribute
such as ``np.sqrt`` is resolved once, here, and never looked up again).

The check walks the tree with an explicit stack, so a long expression is no
deeper for it than a short one. ``docs/security.md`` says what it allows.
"""

from __future__ import annotations

import ast
import builtins
import cmath
import functools
import math
import os
import types
from dataclasses import dataclass, field

import numpy as np

from .captures import MEASURES, is_array
from .errors import ImpureKernelError, KernelNameError, KernelTypeError, LimitError, NestingError, SourceLocation
from .types import SCALAR_TYPES

ALLOWED_BUILTINS = frozenset(
    {"abs", "min", "max", "int", "float", "bool", "complex", "round", "pow", "divmod", "range", "len"}
)
BUILTIN_ARGUMENTS = {"abs": (1, 1), "min": (1, None), "max": (1, None), "int": (1, 1), "float": (1, 1),
                     "bool": (1, 1), "complex": (1, 2), "round": (1, 2), "pow": (2, 2), "divmod": (2, 2),
                     "range": (1, 3), "len": (1, 1)}
"""How many arguments each of :data:`ALLOWED_BUILTINS` takes in a kernel (fewest, most; None: no most)."""
IO_BUILTINS = frozenset({"print", "open", "input", "exec", "eval", "compile", "breakpoint", "__import__"})
ALLOWED_METHODS = frozenset({"conjugate"})

# What numba-cuda lowers for the device (tests/nocuda/security/test_purity.py compiles every one for sm_90).
MATH_FUNCTIONS = frozenset({
    "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "ceil", "copysign", "cos", "cosh", "degrees",
    "erf", "erfc", "exp", "expm1", "fabs", "floor", "fmod", "gamma", "hypot", "isfinite", "isinf", "isnan",
    "ldexp", "lgamma", "log", "log10", "log1p", "log2", "pow", "radians", "remainder", "sin", "sinh", "sqrt",
    "tan", "tanh", "trunc",
})
CMATH_FUNCTIONS = frozenset({
    "acos", "acosh", "asin", "asinh", "atan", "atanh", "cos", "cosh", "exp", "isfinite", "isinf", "isnan",
    "log", "log10", "phase", "rect", "sin", "sinh", "sqrt", "tan", "tanh",
})
# NumPy ufuncs numba-cuda lowers for scalars, and those the frontend maps to a math function
# (compiler/frontends/__init__.py, DEVICE_EQUIVALENTS).
NUMPY_UFUNCS = frozenset({
    "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctan2", "arctanh", "bitwise_and", "bitwise_or",
    "bitwise_xor", "conjugate", "cos", "cosh", "deg2rad", "degrees", "divide", "equal", "fmax", "fmin",
    "greater", "greater_equal", "hypot", "invert", "isnan", "left_shift", "less", "less_equal", "log",
    "log10", "log2", "logical_and", "logical_not", "logical_or", "logical_xor", "maximum", "minimum",
    "not_equal", "rad2deg", "radians", "right_shift", "sin", "sinh", "tan", "tanh",
    "sqrt", "exp", "expm1", "log1p", "fabs", "absolute", "copysign", "isinf", "isfinite",
})
MAX_NESTING = 800
"""How deeply a kernel's syntax may nest (a sum of n terms nests n deep): CPython compiles a tree of
about 1000 levels at most, and gpulab compiles the kernel again for each backend."""
MAX_NODES = 10_000
"""How many syntax nodes a kernel may have (a line such as ``y = y * 1.0001 + 2.5`` has 11): numba's
compile time grows with the square of a function's size (about a minute for 10,000 on a 2-core
x86-64 machine, hours for 100,000)."""
MAX_NAME_LENGTH = 255
"""The longest name a kernel may use: numba and the CUDA compilers make longer symbols of names (a
parameter named by 2000 characters broke LLVM's parser on the host and NVVM on the device)."""
CONSTANT_MODULES = (math, cmath, np)
"""Modules whose scalar attributes (``math.pi``, ``np.inf``) a kernel may read: they never change."""

_STATEMENTS = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.If, ast.For, ast.While, ast.Break,
               ast.Continue, ast.Pass, ast.Expr)
_EXPRESSIONS = (ast.BoolOp, ast.BinOp, ast.UnaryOp, ast.IfExp, ast.Compare, ast.Call, ast.Constant,
                ast.Attribute, ast.Subscript, ast.Name, ast.Tuple, ast.Starred, ast.Slice, ast.NamedExpr)
_PARTS = (ast.operator, ast.boolop, ast.unaryop, ast.cmpop, ast.expr_context, ast.keyword)
ALLOWED_NODES = _STATEMENTS + _EXPRESSIONS + _PARTS
"""Every kind of syntax a kernel may contain; anything else is refused."""

_REFUSALS = {
    ast.Global: "a kernel may not declare global variables; return a value instead",
    ast.Nonlocal: "a kernel may not declare nonlocal variables; return a value instead",
    ast.Import: "a kernel may not import; import at module level and use the module inside",
    ast.ImportFrom: "a kernel may not import; import at module level and use the module inside",
    ast.Delete: "a kernel may not delete names or items",
    ast.Raise: "a kernel may not raise; return a value that signals the case instead",
    ast.Assert: "a kernel may not assert (an assert raises); return a value that signals the case instead",
    ast.Try: "a kernel may not use try/except",
    ast.With: "a kernel may not use with (a context manager runs code the checker cannot see)",
    ast.FunctionDef: "define helpers at module level with @gpulab.kernel, not inside a kernel",
    ast.AsyncFunctionDef: "define helpers at module level with @gpulab.kernel, not inside a kernel",
    ast.Lambda: "define helpers at module level with @gpulab.kernel, not inside a kernel",
    ast.ClassDef: "define helpers at module level with @gpulab.kernel, not inside a kernel",
    ast.Yield: "a kernel returns one value; it may not yield",
    ast.YieldFrom: "a kernel returns one value; it may not yield",
    ast.Await: "a kernel returns one value; it may not await",
    ast.JoinedStr: "a kernel computes numbers; it may not format strings",
    ast.List: "a kernel may not build a list (the device has none); use a tuple",
    ast.ListComp: "a kernel may not build a list (the device has none); use a loop or a tuple",
    ast.Dict: "a kernel may not build a dict (the device has none)",
    ast.Set: "a kernel may not build a set (the device has none)",
}


@functools.cache
def pure_values() -> dict[int, object]:
    """Every function and type a kernel may call, by ``id``: checked by identity, never by kind."""
    found = [getattr(math, name) for name in MATH_FUNCTIONS]
    found += [getattr(cmath, name) for name in CMATH_FUNCTIONS]
    found += [getattr(np, name) for name in NUMPY_UFUNCS]
    found += list(SCALAR_TYPES)
    return {id(value): value for value in found}


def is_pure_callable(value) -> bool:
    """Whether ``value`` is one of :func:`pure_values` (a ``np.frompyfunc`` ufunc is not)."""
    return pure_values().get(id(value), _MISSING) is value  # not `None`, which a failed lookup would give


def is_scalar(value) -> bool:
    """Whether ``value`` can be a uniform: exactly a Python bool, int, float or complex, or a NumPy scalar
    of an element type (subclasses are refused: their arithmetic could run any code)."""
    return type(value) in (bool, int, float, complex) or type(value) in SCALAR_TYPES


@dataclass
class Analysis:
    """What a kernel's body refers to.

    Attributes
    ----------
    uniforms : list of str
        Free scalar variables, in order of first use: kernel parameters.
    references : dict
        Free names that are pure functions, nested kernels or frozen constants, and their values.
    attributes : dict
        Dotted module attributes the body uses (``"np.sqrt"``), resolved once, and their values.
    kernels : list
        Nested gpulab kernels the body calls.
    arrays : dict
        Captured arrays, in order of first use: name -> {number of indices of a read: its first line}.
    """

    uniforms: list[str] = field(default_factory=list)
    references: dict[str, object] = field(default_factory=dict)
    attributes: dict[str, object] = field(default_factory=dict)
    kernels: list = field(default_factory=list)
    arrays: dict[str, dict[int, int]] = field(default_factory=dict)


_ARRAY_USES = ("read item by item (x[i], x[i, j]) or measured (len(x), x.shape, x.ndim, x.size); pass what "
               "else you need as a scalar")


class _Checker:
    def __init__(self, function: ast.FunctionDef, filename: str, namespace, offset, constants, kernel_type,
                 this=None):
        self.name = function.name
        self.this = this
        self.filename = filename
        self.namespace = namespace
        self.offset = offset
        self.constants = set(constants)
        self.kernel_type = kernel_type
        self.locals = {a.arg for a in function.args.args}
        self.analysis = Analysis()
        for node in ast.walk(function):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                self.locals.add(node.id)

    def refuse(self, node: ast.AST, message: str, error=ImpureKernelError):
        location = SourceLocation(self.filename, node.lineno, node.col_offset, self.offset)
        raise error(message, location)

    def check(self, function: ast.FunctionDef) -> Analysis:
        """Check every node of ``function``, depth first in source order, with an explicit stack."""
        _check_size(self, function)
        stack = [(node, 1) for node in reversed(function.body)]
        while stack:
            node, depth = stack.pop()
            if depth > MAX_NESTING:
                self.refuse(node, f"this expression is nested more than {MAX_NESTING} levels deep, more than "
                                  "Python's compiler takes from gpulab: split it into several assignments "
                                  "(s = a + b, then s = s + c, ...)", NestingError)
            children = self.visit(node)
            children = list(ast.iter_child_nodes(node)) if children is None else children
            stack.extend((child, depth + 1) for child in reversed(children))
        return self.analysis

    def visit(self, node):
        """Refuse ``node`` or return the children still to check (``None``: all of them)."""
        if not isinstance(node, ALLOWED_NODES):
            message = _REFUSALS.get(type(node), f"a kernel may not use {type(node).__name__} "
                                                "(gpulab allows arithmetic, comparisons, if, for, while and calls "
                                                "of pure functions)")
            self.refuse(node, message)
        handler = getattr(self, f"visit_{type(node).__name__}", None)
        return handler(node) if handler else None

    # --- assignments -----------------------------------------------------------
    def _check_targets(self, targets):
        for target in targets:
            for node in ast.walk(target):
                if isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(node.ctx, ast.Store):
                    if isinstance(node.value, ast.Name) and self._is_array(node.value.id):
                        self.refuse(node, f"a kernel may not write to `{_text(node)}`: captured arrays are "
                                          "read-only. Return the value instead (map writes its results to out=)")
                    self.refuse(node, f"a kernel may not mutate `{_text(node)}`; kernels are pure: "
                                      "build and return a new value")

    def visit_Assign(self, node):
        self._check_targets(node.targets)

    def visit_AugAssign(self, node):
        self._check_targets([node.target])

    def visit_AnnAssign(self, node):
        self._check_targets([node.target])
        return [node.target] + ([node.value] if node.value is not None else [])  # not the annotation

    # --- calls -----------------------------------------------------------------
    def visit_Call(self, node):
        func = node.func
        arguments = [*node.args, *node.keywords]
        if isinstance(func, ast.Name):
            self._check_named_call(node, func.id)
            if (func.id == "len" and len(node.args) == 1 and not node.keywords and isinstance(node.args[0], ast.Name)
                    and self._is_array(node.args[0].id)):
                self._use_array(node, node.args[0].id)
                return []
            return arguments
        if isinstance(func, ast.Attribute):
            chain = _attribute_chain(func)
            if chain is not None and self._is_array(chain[0]):
                self.refuse(node, f"a kernel may not call `{_text(func)}()`: a captured array is only "
                                  f"{_ARRAY_USES}")
            if chain is None or chain[0] in self.locals or self._is_uniform(chain[0]):
                if func.attr not in ALLOWED_METHODS:
                    instead = (f": call math.{func.attr}({_text(func.value)}) instead"
                               if callable(getattr(math, func.attr, None)) else "")
                    self.refuse(node, f"a kernel may not call the method `.{func.attr}()`; "
                                      f"only {', '.join(sorted(ALLOWED_METHODS))} is known to be pure{instead}")
                self._check_arguments(node, f".{func.attr}", 0, 0)
                return [func.value, *arguments]
            self._check_callable(node, ".".join(chain), self._resolve_chain(func, chain))
            return arguments
        self.refuse(node, f"a kernel may not call `{_text(func)}`: call a named pure function")

    def _check_named_call(self, node, name):
        if name in self.locals:
            self.refuse(node, f"`{name}` is a local value, not a function the checker can see")
        if name == self.name and name != "_lambda":
            self.refuse(node, f"`{name}` calls itself: a kernel may not be recursive (the device gives it no "
                              "stack to recurse on). Write the repetition as a `while` or `for` loop")
        found, value = self._lookup(name)
        if not found:
            if name in ALLOWED_BUILTINS:
                self._check_arguments(node, name, *BUILTIN_ARGUMENTS[name])
                return
            self._refuse_unknown(node, name)
        self._check_callable(node, name, value)
        if name not in self.analysis.references:
            self.analysis.references[name] = value

    def _check_callable(self, node, name, value):
        if isinstance(value, self.kernel_type):
            count = len(value.param_names)
            self._check_arguments(node, name, count, count, f" ({', '.join(value.param_names)})")
            if value not in self.analysis.kernels:
                self.analysis.kernels.append(value)
            return
        if is_pure_callable(value):
            if isinstance(value, type):  # a scalar type converts one value
                self._check_arguments(node, name, 1, 1)
            return
        if isinstance(value, types.FunctionType):
            self._refuse_function(node, name, value)
        if isinstance(value, np.ufunc) and vars(np).get(value.__name__) is value:
            self.refuse(node, f"`{name}` is not a NumPy ufunc the device can compute (numba-cuda has no "
                              f"{value.__name__}); use a math function or arithmetic instead")
        self.refuse(node, f"a kernel may not call `{name}`: only the math and cmath functions, NumPy ufuncs "
                          "and scalar types the device supports, a few built-ins and other gpulab kernels "
                          "are known to be pure (docs/security.md lists them)")

    def _check_arguments(self, node: ast.Call, name: str, fewest: int, most: int | None, names: str = ""):
        """Refuse a call of ``name`` with a number of arguments it does not take (numba's words for it are
        an unbound signature, an unpacking error, or none)."""
        given = len(node.args) + len(node.keywords)
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            self.refuse(node, f"a kernel passes arguments one by one: `{name}(*...)` and `{name}(**...)` are not "
                              "compiled")
        if given < fewest or (most is not None and given > most):
            takes = (f"{fewest}" if fewest == most else f"{fewest} or more" if most is None
                     else f"{fewest} to {most}")
            self.refuse(node, f"`{name}` takes {takes} argument{'' if takes == '1' else 's'}{names}; this call "
                              f"gives {given}", KernelTypeError)

    def _refuse_function(self, node, name, function: types.FunctionType):
        """Refuse a call of a plain function, with the advice that can help: a recursion said as one, a
        library's function left to the library, and only a function of the user's own decorated."""
        if self.this is not None and _calls_back(function, self.this, self.kernel_type):
            self.refuse(node, f"`{name}` calls `{self.name}` back: kernels may not call each other in a cycle (the "
                              "device gives them no stack to recurse on). Write the repetition as a loop in one "
                              "kernel")
        library = _library_of(function)
        if library:
            self.refuse(node, f"`{name}` is a function of {library}, which gpulab cannot check or compile for the "
                              "device: compute it with arithmetic and math functions in this kernel, or in a "
                              "@gpulab.kernel of your own")
        self.refuse(node, f"`{name}` is a plain Python function; decorate it with @gpulab.kernel "
                          "so it is checked and compiled too")

    # --- captured arrays --------------------------------------------------------
    def _is_array(self, name) -> bool:
        if name in self.locals:
            return False
        found, value = self._lookup(name)
        return found and is_array(value)

    def _use_array(self, node, name):
        if name in self.constants:
            self.refuse(node, f"constants= freezes scalars into the code; `{name}` is an array, which a kernel "
                              "reads at launch: leave it out of constants=")
        self.analysis.arrays.setdefault(name, {})

    def visit_Subscript(self, node):
        if not (isinstance(node.value, ast.Name) and self._is_array(node.value.id)):
            return None
        name = node.value.id
        indices = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        for index in indices:
            if isinstance(index, (ast.Slice, ast.Starred)) or (isinstance(index, ast.Constant)
                                                                 and not isinstance(index.value, int)):
                self.refuse(index, f"a kernel reads one item of captured array `{name}` at a time, with an "
                                   f"integer index per dimension (`{name}[i]`, `{name}[i, j]`), not "
                                   f"`{_text(node)}`: slice the array outside the kernel")
        self._use_array(node, name)
        self.analysis.arrays[name].setdefault(len(indices), node.lineno)
        return indices

    # --- names and attributes --------------------------------------------------
    def visit_Name(self, node):
        if not isinstance(node.ctx, ast.Load) or node.id in self.locals:
            return
        found, value = self._lookup(node.id)
        if not found:
            if node.id in ALLOWED_BUILTINS:
                return
            self._refuse_unknown(node, node.id)
        if is_array(value):
            self.refuse(node, f"captured array `{node.id}` is used here as a value; in a kernel it may only be "
                              f"{_ARRAY_USES}")
        if is_scalar(value):
            if node.id in self.constants:
                self.analysis.references[node.id] = value
            elif node.id not in self.analysis.uniforms:
                self.analysis.uniforms.append(node.id)
            return
        if is_pure_callable(value) or isinstance(value, self.kernel_type):
            self.analysis.references[node.id] = value
            if isinstance(value, self.kernel_type) and value not in self.analysis.kernels:
                self.analysis.kernels.append(value)
            return
        if isinstance(value, types.ModuleType):
            self.refuse(node, f"`{node.id}` is a module: a kernel may use its pure functions and constants "
                              f"(`{node.id}.sqrt(x)`, `{node.id}.pi`), not the module itself")
        self.refuse(
            node,
            f"free variable `{node.id}` is a {type(value).__name__}; a kernel may capture only "
            "scalars (passed at launch as uniforms), arrays (NumPy or device arrays, read item by item), "
            "pure functions and other kernels",
        )

    def visit_Constant(self, node):
        if node.value is None:
            self.refuse(node, "a kernel computes numbers, bools and records, and None is none of them: give a "
                              "value on every path (a filter's predicate returns False to leave an item out)",
                        KernelTypeError)
        if node.value is Ellipsis:
            self.refuse(node, "a kernel computes numbers, bools and records, not `...`", KernelTypeError)

    def visit_Attribute(self, node):
        chain = _attribute_chain(node)
        if chain is not None and self._is_array(chain[0]):
            if len(chain) != 2 or chain[1] not in MEASURES:
                self.refuse(node, f"a kernel may not read `{'.'.join(chain)}`: a captured array is only "
                                  f"{_ARRAY_USES}")
            self._use_array(node, chain[0])
            return []
        if chain is None or chain[0] in self.locals or self._is_uniform(chain[0]):
            _refuse_dunder(self, node, chain)
            return None
        value = self._resolve_chain(node, chain)
        if not (_is_constant(chain, value, self.namespace) or is_pure_callable(value)
                or isinstance(value, self.kernel_type)):
            self.refuse(node, f"a kernel may not read `{'.'.join(chain)}`: of modules it may read only "
                              "pure functions and the constants of math, cmath and NumPy. Assign the value "
                              "to a name outside the kernel to pass it as a uniform")
        if isinstance(value, self.kernel_type) and value not in self.analysis.kernels:
            self.analysis.kernels.append(value)
        return []

    def _resolve_chain(self, node, chain):
        """The value of a dotted name rooted in a module, read from module dicts (no ``__getattr__`` runs)."""
        found, value = self._lookup(chain[0])
        if not found:
            self._refuse_unknown(node, chain[0])
        dotted = ".".join(chain)
        for depth, attr in enumerate(chain[1:], start=1):
            if not isinstance(value, types.ModuleType):
                self.refuse(node, f"a kernel may not read `{dotted}`: `{'.'.join(chain[:depth])}` is a "
                                  f"{type(value).__name__}; a kernel reads attributes of its own values "
                                  "and of modules only")
            if attr.startswith("_"):
                self.refuse(node, f"a kernel may not read `{dotted}`: `{attr}` is private to its module")
            module, value = value, vars(value).get(attr, _MISSING)
            if value is _MISSING and "__getattr__" in vars(module):
                self.refuse(node, f"a kernel may not read `{dotted}`: `{'.'.join(chain[:depth + 1])}` is no "
                                  "function gpulab knows to be pure (the module makes it on demand, if at all)")
            if value is _MISSING:
                self.refuse(node, f"`{'.'.join(chain[:depth + 1])}` is not defined", KernelNameError)
        if isinstance(value, types.ModuleType):
            self.refuse(node, f"`{dotted}` is a module: a kernel may use its pure functions and constants, "
                              "not the module itself")
        self.analysis.attributes[dotted] = value
        return value

    def _is_uniform(self, name) -> bool:
        found, value = self._lookup(name)
        if found and is_scalar(value):
            self.visit_Name(ast.Name(id=name, ctx=ast.Load()))
            return True
        return False

    def _refuse_unknown(self, node, name):
        if name in IO_BUILTINS:
            self.refuse(node, f"a kernel may not use `{name}` (I/O or dynamic code); kernels are pure")
        if hasattr(builtins, name):
            self.refuse(node, f"`{name}` is a built-in a kernel may not use; it may call "
                              f"{', '.join(sorted(ALLOWED_BUILTINS))}")
        self.refuse(node, f"name `{name}` is not defined", KernelNameError)

    def _lookup(self, name):
        if name in self.namespace:
            return True, self.namespace[name]
        return False, None


_MISSING = object()


_CALLS_SEARCHED = 64
"""How many plain functions :func:`_calls_back` follows, at most, looking for a cycle."""


def _calls_back(function: types.FunctionType, this: types.FunctionType, kernel_type) -> bool:
    """Whether plain ``function`` calls ``this`` (itself or through other plain functions or kernels)."""
    pending, seen = [function], set()
    while pending and len(seen) < _CALLS_SEARCHED:
        current = pending.pop()
        if current is this:
            return True
        if id(current) in seen:
            continue
        seen.add(id(current))
        for value in _names_of(current):
            value = value.pyfunc if isinstance(value, kernel_type) else value
            if isinstance(value, types.FunctionType):
                pending.append(value)
    return False


def _names_of(function: types.FunctionType):
    """The values of the global and closure names ``function``'s code (nested code too) reads."""
    codes, names = [function.__code__], set()
    while codes:
        code = codes.pop()
        names.update(code.co_names)
        codes += [c for c in code.co_consts if isinstance(c, types.CodeType)]
    cells = dict(zip(function.__code__.co_freevars, function.__closure__ or ()))
    for name in names | set(cells):
        if name in cells:
            try:
                yield cells[name].cell_contents
            except ValueError:  # an empty cell
                continue
        elif name in function.__globals__:
            yield function.__globals__[name]


@functools.cache
def _library_folders() -> tuple[str, ...]:
    """Where the standard library and installed packages live (their functions are not the user's to decorate)."""
    import site
    import sysconfig

    paths = sysconfig.get_paths()
    found = {paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths}
    found.update(site.getsitepackages() if hasattr(site, "getsitepackages") else ())
    found.add(site.getusersitepackages() if hasattr(site, "getusersitepackages") else "")
    return tuple(os.path.join(os.path.realpath(folder), "") for folder in found if folder)


def _library_of(function: types.FunctionType) -> str | None:
    """``"the library `statistics`"`` when ``function`` comes from the standard library or an installed package."""
    filename = function.__code__.co_filename
    if filename.startswith("<") or not os.path.isabs(filename):
        return None
    if not os.path.realpath(filename).startswith(_library_folders()):
        return None
    module = getattr(function, "__module__", None) or "an installed package"
    return f"the library `{module.split('.')[0]}`"


def _check_size(checker: _Checker, function: ast.FunctionDef) -> None:
    """Refuse a kernel of more than :data:`MAX_NODES` nodes, or a name longer than :data:`MAX_NAME_LENGTH`."""
    count = 0
    for node in ast.walk(function):
        count += 1
        name = _name_of(node)
        if name is not None and len(name) > MAX_NAME_LENGTH:
            checker.refuse(node, f"the name `{name[:20]}...` is {len(name):,} characters long; a kernel's names may "
                                 f"have up to {MAX_NAME_LENGTH} (numba and the CUDA compilers make longer symbols "
                                 "of them): use a shorter name", LimitError)
    if count > MAX_NODES:
        lines = (function.end_lineno or function.lineno) - function.lineno + 1
        checker.refuse(function, f"`{function.name}` has {count:,} syntax nodes ({lines:,} lines); a kernel may have "
                                 f"up to {MAX_NODES:,}: numba's compile time grows with the square of a function's "
                                 "size. Split it into @gpulab.kernel functions that call each other", LimitError)


def _name_of(node: ast.AST) -> str | None:
    """The name a node defines or reads (a variable, a parameter, an attribute, the function's own)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.arg):
        return node.arg
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, (ast.FunctionDef, ast.keyword)):
        return node.name if isinstance(node, ast.FunctionDef) else node.arg
    return None


def _refuse_dunder(checker: _Checker, node: ast.Attribute, chain):
    for attr in chain[1:] if chain else [node.attr]:
        if attr.startswith("__"):
            checker.refuse(node, f"a kernel may not read `.{attr}`; it reads its values' fields "
                                 "(a record's, `.real`, `.imag`) only")


def _is_constant(chain, value, namespace) -> bool:
    root = namespace.get(chain[0])
    return len(chain) == 2 and any(root is module for module in CONSTANT_MODULES) and (
        type(value) in (bool, int, float, complex))


def _attribute_chain(node: ast.Attribute):
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return parts[::-1]


def _text(node: ast.AST) -> str:
    """The source of a small node, for messages (a node too deep to unparse is named by its kind)."""
    try:
        return ast.unparse(node)
    except RecursionError:
        return type(node).__name__


def analyse(function: ast.FunctionDef, filename: str, namespace: dict, *, offset=0, constants=(),
            kernel_type=type(None), this=None) -> Analysis:
    """Check ``function`` for purity and classify its free variables.

    Parameters
    ----------
    function : ast.FunctionDef
        The kernel's definition, with line numbers of ``filename``.
    filename : str
        Where the source lives (for messages).
    namespace : dict
        Free names the body may see: closure cells over globals.
    offset : int
        Subtracted from line numbers in messages (cell-relative lines).
    constants : iterable of str
        Free scalars to freeze into the code instead of passing as uniforms.
    kernel_type : type
        The class of gpulab kernels (calls to them are allowed).
    this : function, optional
        The function being checked, to tell a call that comes back to it (a recursion).

    Raises
    ------
    ImpureKernelError
        On the first thing a kernel may not do, naming its line.
    KernelNameError
        For a name that is not defined.
    """
    return _Checker(function, filename, namespace, offset, constants, kernel_type, this).check(function)


def visible_names(fn) -> dict:
    """Return the free names ``fn`` can see: its globals, then its closure cells."""
    namespace = {k: v for k, v in fn.__globals__.items() if k != "__builtins__"}
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        try:
            namespace[name] = cell.cell_contents
        except ValueError:  # a cell not yet assigned
            pass
    return namespace

"""The purity check: what a kernel may read, call and change, decided from its AST.

It fails closed: anything it cannot prove harmless (an unknown call, a
mutation, I/O) is refused before numba runs, with the file and line.
Free variables are classified here: scalars become *uniforms* (kernel
parameters set at launch), modules and other kernels are *references*,
and anything else is refused.
"""

from __future__ import annotations

import ast
import numbers
import types
from dataclasses import dataclass, field

import numpy as np

from .errors import ImpureKernelError, SourceLocation

ALLOWED_BUILTINS = frozenset(
    {"abs", "min", "max", "int", "float", "bool", "complex", "round", "pow", "divmod", "range", "len"}
)
IO_BUILTINS = frozenset({"print", "open", "input", "exec", "eval", "compile", "breakpoint", "__import__"})
ALLOWED_METHODS = frozenset({"conjugate"})


@dataclass
class Analysis:
    """What a kernel's body refers to.

    Attributes
    ----------
    uniforms : list of str
        Free scalar variables, in order of first use: kernel parameters.
    references : dict
        Other free names (modules, pure functions, nested kernels, frozen
        constants) and their values, as the compiled code must see them.
    kernels : list
        Nested gpulab kernels the body calls.
    """

    uniforms: list[str] = field(default_factory=list)
    references: dict[str, object] = field(default_factory=dict)
    kernels: list = field(default_factory=list)


def is_scalar(value) -> bool:
    """Whether ``value`` can be a uniform (a Python or NumPy bool, int, float or complex)."""
    return isinstance(value, (bool, numbers.Number, np.generic)) and not isinstance(value, np.void)


def is_pure_callable(value) -> bool:
    """Whether ``value`` is a callable known to be pure (math, cmath, NumPy ufuncs and scalar types)."""
    if isinstance(value, np.ufunc):
        return True
    if isinstance(value, type) and issubclass(value, np.generic):
        return True
    if isinstance(value, types.BuiltinFunctionType) and value.__module__ in ("math", "cmath"):
        return True
    return False


class _Checker(ast.NodeVisitor):
    def __init__(self, function: ast.FunctionDef, filename: str, namespace, offset, constants, kernel_type):
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

    def refuse(self, node: ast.AST, message: str):
        location = SourceLocation(self.filename, node.lineno, node.col_offset, self.offset)
        raise ImpureKernelError(message, location)

    # --- statements a kernel may not contain -------------------------------
    def visit_Global(self, node):
        self.refuse(node, "a kernel may not declare global variables; return a value instead")

    def visit_Nonlocal(self, node):
        self.refuse(node, "a kernel may not declare nonlocal variables; return a value instead")

    def visit_Import(self, node):
        self.refuse(node, "a kernel may not import; import at module level and use the module inside")

    visit_ImportFrom = visit_Import

    def visit_Delete(self, node):
        self.refuse(node, "a kernel may not delete names or items")

    def visit_Raise(self, node):
        self.refuse(node, "a kernel may not raise; return a value that signals the case instead")

    def visit_Try(self, node):
        self.refuse(node, "a kernel may not use try/except")

    visit_With = visit_Try

    def _nested_definition(self, node):
        self.refuse(node, "define helpers at module level with @gpulab.kernel, not inside a kernel")

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = visit_ClassDef = _nested_definition

    def visit_Yield(self, node):
        self.refuse(node, "a kernel returns one value; it may not yield")

    visit_YieldFrom = visit_Await = visit_Yield

    def _check_targets(self, targets):
        for target in targets:
            for node in ast.walk(target):
                if isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(node.ctx, ast.Store):
                    what = ast.unparse(node)
                    self.refuse(
                        node,
                        f"a kernel may not mutate `{what}`; kernels are pure: build and return a new value",
                    )

    def visit_Assign(self, node):
        self._check_targets(node.targets)
        self.generic_visit(node)

    def visit_AugAssign(self, node):
        self._check_targets([node.target])
        self.generic_visit(node)

    def visit_AnnAssign(self, node):
        self._check_targets([node.target])
        if node.value is not None:
            self.visit(node.value)

    # --- calls ---------------------------------------------------------------
    def visit_Call(self, node):
        func = node.func
        if isinstance(func, ast.Name):
            self._check_named_call(node, func.id)
        elif isinstance(func, ast.Attribute):
            self._check_attribute_call(node, func)
        else:
            self.refuse(node, f"a kernel may not call `{ast.unparse(func)}`")
        for argument in [*node.args, *node.keywords]:
            self.visit(argument)
        if isinstance(func, ast.Attribute):
            self.visit(func.value)

    def _check_named_call(self, node, name):
        if name in self.locals:
            self.refuse(node, f"`{name}` is a local value, not a function the checker can see")
        found, value = self._lookup(name)
        if not found:
            if name in IO_BUILTINS:
                self.refuse(node, f"a kernel may not call `{name}` (I/O or dynamic code); kernels are pure")
            if name in ALLOWED_BUILTINS:
                return
            self.refuse(node, f"`{name}` is not defined, or is a built-in a kernel may not call")
        self._check_callable(node, name, value)

    def _check_attribute_call(self, node, func: ast.Attribute):
        chain = _attribute_chain(func)
        if chain is None or chain[0] in self.locals:
            if func.attr in ALLOWED_METHODS:
                return
            self.refuse(node, f"a kernel may not call the method `.{func.attr}()`")
        found, value = self._lookup(chain[0])
        if not found:
            self.refuse(node, f"`{chain[0]}` is not defined")
        for attr in chain[1:]:
            if not isinstance(value, types.ModuleType):
                self.refuse(node, f"a kernel may not call `{ast.unparse(func)}`")
            value = getattr(value, attr, None)
        self._reference(chain[0])
        self._check_callable(node, ast.unparse(func), value)

    def _check_callable(self, node, name, value):
        if isinstance(value, self.kernel_type):
            if value not in self.analysis.kernels:
                self.analysis.kernels.append(value)
            if "." not in name:
                self.analysis.references[name] = value
            return
        if is_pure_callable(value):
            if "." not in name:
                self.analysis.references[name] = value
            return
        if isinstance(value, types.FunctionType):
            self.refuse(
                node,
                f"`{name}` is a plain Python function; decorate it with @gpulab.kernel "
                "so it is checked and compiled too",
            )
        self.refuse(node, f"a kernel may not call `{name}`: only math, cmath, NumPy ufuncs, "
                          "NumPy scalar types and other gpulab kernels are known to be pure")

    # --- free variables ------------------------------------------------------
    def visit_Name(self, node):
        if not isinstance(node.ctx, ast.Load) or node.id in self.locals:
            return
        found, value = self._lookup(node.id)
        if not found:
            if node.id in ALLOWED_BUILTINS or node.id in ("True", "False", "None"):
                return
            self.refuse(node, f"`{node.id}` is not defined")
        if is_scalar(value):
            if node.id in self.constants:
                self.analysis.references[node.id] = value
            elif node.id not in self.analysis.uniforms:
                self.analysis.uniforms.append(node.id)
            return
        if isinstance(value, types.ModuleType) or is_pure_callable(value) or isinstance(value, self.kernel_type):
            self.analysis.references[node.id] = value
            return
        self.refuse(
            node,
            f"free variable `{node.id}` is a {type(value).__name__}; a kernel may capture only "
            "scalars (passed at launch as uniforms), math/NumPy modules and other kernels. "
            "Pass arrays as inputs of the primitive instead",
        )

    def visit_Attribute(self, node):
        chain = _attribute_chain(node)
        if chain and chain[0] not in self.locals:
            found, value = self._lookup(chain[0])
            if found and isinstance(value, types.ModuleType):
                self._reference(chain[0])
                return
        self.generic_visit(node)

    def _reference(self, name):
        found, value = self._lookup(name)
        if found:
            self.analysis.references[name] = value

    def _lookup(self, name):
        if name in self.namespace:
            return True, self.namespace[name]
        return False, None


def _attribute_chain(node: ast.Attribute):
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return parts[::-1]


def analyse(function: ast.FunctionDef, filename: str, namespace: dict, *, offset=0, constants=(), kernel_type=type(None)) -> Analysis:
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

    Raises
    ------
    ImpureKernelError
        On the first thing a kernel may not do, naming its line.
    """
    checker = _Checker(function, filename, namespace, offset, constants, kernel_type)
    for statement in function.body:
        checker.visit(statement)
    return checker.analysis


def visible_names(fn) -> dict:
    """Return the free names ``fn`` can see: its globals, then its closure cells."""
    namespace = {k: v for k, v in fn.__globals__.items() if k != "__builtins__"}
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        try:
            namespace[name] = cell.cell_contents
        except ValueError:  # a cell not yet assigned
            pass
    return namespace

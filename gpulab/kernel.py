"""Kernel: a pure, typed Python function that gpulab can compile and run."""

from __future__ import annotations

import __future__
import ast
import builtins
import dis
import functools
import hashlib
import inspect
import json
import linecache
import textwrap
import threading
import types as pytypes
import weakref
from dataclasses import dataclass

import numpy as np

from . import captures, interpreted, stops
from .errors import (HostArrayError, KernelNameError, KernelTypeError, LimitError, NestingError, SourceLocation,
                     SourceMismatchError)
from .purity import ALLOWED_BUILTINS, Analysis, analyse, is_scalar, visible_names
from .types import ElementType, element_type

LAMBDA_NAME = "_lambda"
MAX_CALL_DEPTH = 20
"""How deeply kernels may call kernels, counting the first: numba-cuda compiles a nested call within
the one that makes it, and a chain of 60 went past Python's recursion limit."""

AST_LOCK = threading.RLock()
"""Held while gpulab turns source into an AST or an AST into code. CPython 3.11 keeps the AST converter's
recursion count per interpreter, not per thread (gh-106905): two threads converting at once can fail with
``SystemError: AST constructor recursion depth mismatch`` (16 threads calling one new kernel did)."""


def parse(text: str, mode: str = "exec") -> ast.AST:
    """``ast.parse(text, mode=mode)``, one thread at a time (:data:`AST_LOCK`)."""
    with AST_LOCK:
        return ast.parse(text, mode=mode)


def compile_tree(tree: ast.AST, filename: str, **options) -> pytypes.CodeType:
    """``compile(tree, filename, "exec", **options)``, one thread at a time (:data:`AST_LOCK`)."""
    with AST_LOCK:
        return compile(tree, filename, "exec", **options)


@dataclass(frozen=True)
class Signature:
    """Element types of a kernel's parameters, and of its result when declared."""

    args: tuple[ElementType, ...]
    result: ElementType | None = None

    def __str__(self) -> str:
        result = self.result.name if self.result else "?"
        return f"({', '.join(t.name for t in self.args)}) -> {result}"


class Kernel:
    """A pure Python function with element types, checked when it is created.

    Parameters
    ----------
    fn : function
        The function. Its parameters' annotations name element types
        (``np.float32``, ``"f32"``, ``gpulab.i64``, a structured dtype)
        unless ``types`` does.
    types : sequence or str, optional
        Parameter types when ``fn`` has no annotations, e.g.
        ``(np.float32, np.float32)`` or ``"f32, f32 -> f32"``.
    constants : sequence of str
        Free scalar variables to freeze into the code. Other free scalars
        are *uniforms*: passed at launch, so changing them needs no rebuild.
    line_offset : int
        Subtracted from line numbers in error messages (cell-relative lines).

    Raises
    ------
    ImpureKernelError
        When the body does something a kernel may not (I/O, mutation,
        calls the checker cannot see), naming the line.
    KernelTypeError
        When an annotation is not an element type.
    LimitError
        When it is larger than gpulab compiles (names, size, nesting; see :mod:`gpulab.purity`),
        or calls kernels more than :data:`MAX_CALL_DEPTH` - 1 deep.
    """

    def __init__(self, fn, *, types=None, constants=(), line_offset: int = 0):
        if isinstance(fn, Kernel):
            fn = fn.pyfunc
        if not isinstance(fn, pytypes.FunctionType):
            raise KernelTypeError(f"a kernel is made from a Python function, not {type(fn).__name__}")
        self.pyfunc = fn
        self.name = LAMBDA_NAME if fn.__name__ == "<lambda>" else fn.__name__
        self.filename = fn.__code__.co_filename
        self.line_offset = line_offset
        self.constants = tuple(constants)
        self.source, self.first_line, self._definition = _parse(fn)
        self._check_parameters()
        self.analysis: Analysis = analyse(
            self._definition, self.filename, visible_names(fn),
            offset=line_offset, constants=self.constants, kernel_type=Kernel, this=fn,
        )
        _check_returns(self)
        _check_source_matches(fn, self.source, self.first_line)
        self.depth = 1 + max((nested.depth for nested in self.analysis.kernels), default=0)
        if self.depth > MAX_CALL_DEPTH:
            raise LimitError(f"`{self.name}` calls kernels that call kernels {self.depth - 1} deep; kernels may call "
                             f"each other up to {MAX_CALL_DEPTH - 1} deep (numba compiles each call within the one "
                             "that makes it): call several kernels one after another instead of each inside the "
                             "next", self.location())
        for nested in self.analysis.kernels:
            if nested.uniforms or nested.arrays:
                raise KernelTypeError(
                    f"kernel `{self.name}` calls `{nested.name}`, which reads the free variable(s) "
                    f"{', '.join((*nested.uniforms, *nested.arrays))}; pass scalars to it as arguments, and read "
                    "captured arrays in the kernel a primitive calls",
                    self.location(),
                )
        self.declared = _declared_signature(fn, types, self.param_names, self.location())

    # --- what the kernel is ----------------------------------------------------
    @property
    def param_names(self) -> list[str]:
        """Names of the parameters, in order."""
        return [a.arg for a in self._definition.args.args]

    @property
    def uniforms(self) -> tuple[str, ...]:
        """Names of the free scalar variables passed at launch."""
        return tuple(self.analysis.uniforms)

    @property
    def arrays(self) -> tuple[str, ...]:
        """Names of the captured arrays (free names of arrays it reads), passed at launch after the uniforms."""
        return tuple(self.analysis.arrays)

    def location(self, line: int | None = None) -> SourceLocation:
        """Return a :class:`SourceLocation` in the kernel's file (its ``def`` line by default)."""
        return SourceLocation(self.filename, line or self._definition.lineno, None, self.line_offset)

    def signature(self, types=None) -> Signature:
        """Return the parameter types: ``types`` if given, else the declared ones.

        Raises
        ------
        KernelTypeError
            When neither annotations nor ``types`` give every parameter a type.
        """
        if types is not None:
            return _with_result(_parse_types(types, self.param_names, self.location()), self.pyfunc,
                                self.location())
        if self.declared is None:
            raise KernelTypeError(
                f"`{self.name}` has no element types: annotate its parameters "
                "(def f(a: gpulab.f32, b: gpulab.f32)) or pass types=",
                self.location(),
            )
        return self.declared

    def uniform_values(self) -> tuple:
        """Return the uniforms' current values, read from the function's closure and globals."""
        return self._free_values(self.uniforms)

    def array_values(self) -> tuple:
        """Return the captured arrays' current values, read from the function's closure and globals."""
        return self._free_values(self.arrays)

    def array_types(self) -> tuple[captures.ArrayType, ...]:
        """Return the captured arrays' element types and dimensions, from their current values.

        Raises
        ------
        KernelTypeError
            When one is no longer an array of an element type, or no longer has
            the dimensions the kernel's reads index.
        """
        return tuple(captures.array_type(value, name, self) for name, value in zip(self.arrays, self.array_values()))

    def _free_values(self, names) -> tuple:
        """The current values of free names, from the function's closure cells, else its globals.

        Raises
        ------
        KernelNameError
            When a name is gone (``del x`` after the kernel was checked).
        """
        code, closure = self.pyfunc.__code__, self.pyfunc.__closure__ or ()
        cells = dict(zip(code.co_freevars, closure))
        values = []
        for name in names:
            try:
                values.append(cells[name].cell_contents if name in cells else self.pyfunc.__globals__[name])
            except (KeyError, ValueError):  # a deleted global; an emptied closure cell
                raise KernelNameError(f"`{self.name}` reads `{name}`, which is no longer defined (it was deleted "
                                      f"after `{self.name}` was checked): define `{name}` again",
                                      self.location()) from None
        return tuple(values)

    def uniform_types(self) -> tuple[ElementType, ...]:
        """Return the uniforms' element types, from their current values."""
        return self.uniform_arguments()[0]

    def uniform_arguments(self) -> tuple[tuple[ElementType, ...], tuple]:
        """Return the uniforms' element types and their current values as NumPy scalars of those types.

        Raises
        ------
        KernelTypeError
            When a uniform is no longer a scalar (rebound to a string or an
            array after the kernel was checked) or its value does not fit its type.
        """
        values = self.uniform_values()
        types = tuple(uniform_type(value, name, self) for name, value in zip(self.uniforms, values))
        return types, tuple(uniform_scalar(value, element, name, self)
                            for name, value, element in zip(self.uniforms, values, types))

    def host_arguments(self) -> tuple:
        """What a host call of :meth:`python_function` or :meth:`cpu_function` passes after the items: the
        uniforms' current values (see :meth:`uniform_arguments`), then the captured arrays and, when there are
        any, a placeholder for where the device records a read out of bounds (the host raises instead).

        Raises
        ------
        HostArrayError
            When a captured array lives on a device.
        KernelTypeError
            When a uniform or a captured array no longer holds what the kernel was checked with.
        """
        self.array_types()  # each still an array of an element type, of the dimensions the kernel reads
        arrays = []
        for name, value in zip(self.arrays, self.array_values()):
            if captures.is_device_array(value):
                raise HostArrayError(f"`{self.name}` captures `{name}`, a device array, but this call runs on the "
                                     f"host; capture a host copy (gpulab.to_host({name})) or run on a GPU device")
            arrays.append(captures.as_array(value))
        return self.uniform_arguments()[1] + tuple(arrays) + ((0,) if arrays else ())

    @functools.cached_property
    def identity(self) -> dict:
        """What identifies the kernel's code: source, bytecode, constants, references, nested kernels.

        Uniforms and captured arrays count by name only (their values are launch
        arguments), so a kernel is identified by what it computes, not by the function object.
        """
        return {
            "source": self.source,
            "first_line": self.first_line,
            "code": _code_fingerprint(self.pyfunc.__code__),
            "uniforms": list(self.uniforms),
            "arrays": list(self.arrays),
            "references": {name: _reference(value) for name, value in sorted(self.analysis.references.items())},
            "attributes": {name: _reference(value) for name, value in sorted(self.analysis.attributes.items())},
        }

    @functools.cached_property
    def watched_names(self) -> tuple:
        """``(cell, namespace, name, attributes, value)`` per name (or module attribute) the function reads.

        Where to look it up again: a closure's cell (``namespace`` unused) or
        the function's globals (``cell`` None); the attributes read from it
        (``np.sqrt``: ``("sqrt",)``); and the object found when the kernel was checked.
        """
        code, closure = self.pyfunc.__code__, self.pyfunc.__closure__ or ()
        cells = dict(zip(code.co_freevars, closure))
        watched = [(name, (), value) for name, value in self.analysis.references.items()]
        watched += [(dotted.split(".")[0], tuple(dotted.split(".")[1:]), value)
                    for dotted, value in self.analysis.attributes.items()]
        return tuple((cells.get(name), self.pyfunc.__globals__, name, path, value) for name, path, value in watched)

    @functools.cached_property
    def fingerprint(self) -> str:
        """A digest of :attr:`identity`: what in-process caches of compiled operators are keyed by."""
        return hashlib.sha256(json.dumps(self.identity, sort_keys=True).encode()).hexdigest()

    def __call__(self, *args):
        return self.pyfunc(*args)

    def __repr__(self) -> str:
        return f"<gpulab.Kernel {self.name}{self.declared or '(untyped)'}>"

    # --- what numba compiles -----------------------------------------------------
    def definition(self) -> ast.FunctionDef:
        """The checked definition, parsed afresh from the checked source (callers may change it)."""
        return _definition(self.source, self.first_line, self.pyfunc)

    def python_function(self) -> pytypes.FunctionType:
        """:meth:`parametrized` for the interpreter: nested kernels as their own python functions; its loops
        check a flag passed last (:mod:`gpulab.stops`); its operators compute as numba-cuda types them
        (:mod:`gpulab.interpreted`)."""
        return self.parametrized(Kernel.python_function, readers=captures.host_readers(),
                                 loop_checks=stops.python_checks(), typed_operators=True)

    def cpu_function(self):
        """:meth:`parametrized` jitted by numba for the CPU, nested kernels too (numba imported on first use);
        its loops check a flag passed last (:mod:`gpulab.stops`).

        NumPy's error model, as on the device: ``x / 0`` is ``inf`` and ``n // 0`` is 0, not an exception.
        """
        import numba

        return numba.njit(error_model="numpy")(self.parametrized(Kernel.cpu_function, readers=captures.cpu_readers(),
                                                                 loop_checks=stops.cpu_checks()))

    @property
    def parameters(self) -> list[str]:
        """What :meth:`parametrized` takes: the parameters, the uniforms, the captured arrays and, when there
        are any, where a read out of bounds is recorded."""
        hidden = [captures.BOUNDS_NAME] if self.arrays else []
        return [*self.param_names, *self.uniforms, *self.arrays, *hidden]

    def parametrized(self, wrap_kernel, equivalents=None, readers=None, first_array: int = 0,
                     loop_checks=None, typed_operators: bool = False) -> pytypes.FunctionType:
        """Return the function with its uniforms and captured arrays appended as parameters (:attr:`parameters`).

        Parameters
        ----------
        wrap_kernel : callable
            Turns a nested :class:`Kernel` into what the compiler calls
            (a numba device function, a CPU jitted function).
        equivalents : dict, optional
            Pure functions to call in place of others (``{np.sqrt: math.sqrt}``
            for a device that lacks a ufunc).
        readers : dict, optional
            The readers of captured arrays, by name (see :mod:`gpulab.captures`);
            needed when the kernel captures arrays.
        first_array : int
            The number of its first captured array among those of a build.
        loop_checks : dict, optional
            The host's loop checks (:mod:`gpulab.stops`): when given, every loop
            checks a flag taken as one more, last parameter, and calls of nested
            kernels pass it on.
        typed_operators : bool
            Whether each operator is a call that computes it in the types
            numba-cuda gives it (:mod:`gpulab.interpreted`: for the interpreter).

        Returns
        -------
        function
            Compiled from the checked source, with the original file name
            and line numbers (so line info points at the user's lines).
            Free names other than uniforms, and module attributes such as
            ``np.sqrt``, are bound to the values the check resolved: the
            function reads no module and no global at run time.
        """
        equivalents = equivalents or {}
        definition = self.definition()
        bound = _bind_attributes(definition, self.analysis.attributes, set(self.param_names))
        if self.arrays:
            captures.rewrite_reads(definition, self.arrays, first_array)
            bound.update(readers)
        values = {**self.analysis.references, **bound}
        parameters = list(self.parameters)
        if loop_checks is not None:
            stops.rewrite_loops(definition, {name for name, value in values.items() if isinstance(value, Kernel)})
            values.update(loop_checks)
            parameters.append(stops.FLAG_NAME)
        if typed_operators:
            interpreted.rewrite(definition)
            values.update(interpreted.bindings())
        function = ast.FunctionDef(
            name=definition.name,
            args=ast.arguments(
                posonlyargs=[],
                args=[ast.arg(arg=name) for name in parameters],
                kwonlyargs=[], kw_defaults=[], defaults=[],
            ),
            body=definition.body,
            decorator_list=[],
            returns=None,
            type_params=[],
        )
        for node in (function, *function.args.args):
            ast.copy_location(node, definition)
        module = ast.Module(body=[function], type_ignores=[])
        namespace = {"__builtins__": _BUILTINS}
        for name, value in values.items():
            if isinstance(value, Kernel):
                value = wrap_kernel(value)
            elif callable(value):
                value = equivalents.get(value, value)
            namespace[name] = value
        exec(compile_tree(module, self.compiled_filename, dont_inherit=True), namespace)
        return namespace[definition.name]

    @property
    def compiled_filename(self) -> str:
        """The file name compiled code reports: the user's file, or for a lambda a synthetic one.

        numba reads a function's source back to emit line info; a lambda's
        line may be part of a statement it cannot parse, so its body is
        registered under a name of its own, on the same line number.
        """
        if self._definition.name != LAMBDA_NAME:
            return self.filename
        name = f"<gpulab-lambda-{self.filename}:{self._definition.lineno}>"
        text = "\n" * (self._definition.lineno - 1) + ast.unparse(self._definition) + "\n"
        linecache.cache[name] = (len(text), None, text.splitlines(True), name)
        return name

    def _check_parameters(self):
        args = self._definition.args
        if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs or args.defaults:
            raise KernelTypeError(
                f"`{self.name}` must take plain positional parameters (no *args, **kwargs, "
                "defaults or keyword-only parameters)",
                self.location(),
            )


def kernel(fn=None, *, types=None, constants=()):
    """Decorator form of :class:`Kernel`: ``@gpulab.kernel`` or ``@gpulab.kernel(types=...)``."""
    if fn is None:
        return lambda f: Kernel(f, types=types, constants=constants)
    return Kernel(fn, types=types, constants=constants)


_CHECKED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def as_kernel(fn, **options) -> Kernel:
    """Return ``fn`` if it is a :class:`Kernel`, else check and wrap it.

    A plain function is checked once and its :class:`Kernel` reused while the
    names it refers to (other than uniforms) still hold the same objects, so a
    one-shot primitive call does not re-read and re-check its source.
    """
    if isinstance(fn, Kernel):
        return fn
    if options or not isinstance(fn, pytypes.FunctionType):
        return Kernel(fn, **options)
    cached = _CHECKED.get(fn)
    if cached is not None and references_unchanged(cached):
        return cached
    checked = Kernel(fn)
    _CHECKED[fn] = checked
    return checked


def references_unchanged(kernel: Kernel) -> bool:
    """Whether every name ``kernel``'s function refers to (other than uniforms) still holds the object it held."""
    for cell, namespace, name, path, value in kernel.watched_names:
        current = namespace.get(name, _MISSING) if cell is None else cell.cell_contents
        for attribute in path:  # a module attribute the kernel reads (np.sqrt), resolved again
            current = vars(current).get(attribute, _MISSING) if isinstance(current, pytypes.ModuleType) else _MISSING
        if current is not value:
            return False
    return True


_MISSING = object()


def _code_fingerprint(code: pytypes.CodeType) -> str:
    digest = hashlib.sha256(code.co_code)
    for constant in code.co_consts:
        digest.update((_code_fingerprint(constant) if isinstance(constant, pytypes.CodeType)
                       else repr(constant)).encode())
    digest.update(repr(code.co_names).encode())
    return digest.hexdigest()


def _reference(value):
    if isinstance(value, Kernel):
        return {"kernel": value.identity}
    if isinstance(value, pytypes.ModuleType):
        return {"module": value.__name__}
    if callable(value):
        return {"callable": f"{getattr(value, '__module__', '')}.{getattr(value, '__qualname__', repr(value))}"}
    return {"constant": repr(value), "type": type(value).__name__}


def uniform_type(value, name: str = "", kernel=None) -> ElementType:
    """Return the element type a uniform of this value is passed as.

    Raises
    ------
    KernelTypeError
        When ``value`` is not a scalar (a uniform rebound to a string or an array).
    """
    if not is_scalar(value):
        where = f"uniform `{name}` of `{kernel.name}`" if kernel is not None else "a uniform"
        raise KernelTypeError(
            f"{where} now holds a {type(value).__name__}; a uniform must stay a scalar (bool, int, float, "
            "complex or a NumPy scalar). Pass arrays as inputs of the primitive, or give the kernel's free "
            "variable a scalar again", kernel.location() if kernel is not None else None)
    if isinstance(value, (bool, int, float, complex)):
        return element_type(type(value))
    return element_type(value.dtype)


def uniform_scalar(value, element: ElementType, name: str = "", kernel=None):
    """``value`` as a NumPy scalar of ``element`` (what a launch passes).

    Raises
    ------
    KernelTypeError
        When the value does not fit (a Python int beyond int64).
    """
    try:
        return element.dtype.type(value)
    except OverflowError:
        where = f"uniform `{name}` of `{kernel.name}`" if kernel is not None else "a uniform"
        raise KernelTypeError(
            f"{where} = {value} does not fit in {element.name} (a Python int is passed as int64); "
            f"use a value from {np.iinfo(element.dtype).min} to {np.iinfo(element.dtype).max}, or a float",
            kernel.location() if kernel is not None else None) from None


_BUILTINS = {name: getattr(builtins, name) for name in ALLOWED_BUILTINS}
"""The only built-ins compiled kernel code can see (the check allows no others)."""
_BOUND_PREFIX = "_gpulab_"


def _bind_attributes(definition: ast.FunctionDef, attributes: dict, params: set) -> dict:
    """Replace each checked module attribute (``np.sqrt``) in ``definition`` by a name; return their values."""
    bound = {}
    for node in ast.walk(definition):
        for field, child in ast.iter_fields(node):
            children = child if isinstance(child, list) else [child]
            for index, item in enumerate(children):
                dotted = _dotted(item)
                if dotted is None or dotted not in attributes or dotted.split(".")[0] in params:
                    continue
                name = _BOUND_PREFIX + dotted.replace("_", "__").replace(".", "_")
                bound[name] = attributes[dotted]
                replacement = ast.copy_location(ast.Name(id=name, ctx=ast.Load()), item)
                if isinstance(child, list):
                    child[index] = replacement
                else:
                    setattr(node, field, replacement)
    return bound


def _dotted(node) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
        parts.append(node.attr)
        node = node.value
    if not parts or not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def _parse(fn):
    """The function's source, first line and definition."""
    try:
        lines, first_line = _source_lines(fn)
    except (OSError, TypeError) as exc:
        if getattr(getattr(fn, "__code__", None), "co_filename", None) == "<stdin>":
            raise KernelTypeError(
                f"gpulab needs the source of `{fn.__name__}`, and Python's prompt keeps none of what is typed "
                "(or piped) into it before Python 3.13: put the function in a file and import or run it, or "
                "use IPython, a notebook, or Python 3.13's prompt"
            ) from exc
        raise KernelTypeError(
            f"gpulab needs the source of `{fn.__name__}`: define it in a file or a notebook cell "
            "(a function made by exec() of a string has none unless its file name is in linecache)"
        ) from exc
    source = "".join(lines)
    return source, first_line, _definition(source, first_line, fn)


def _definition(source: str, first_line: int, fn) -> ast.FunctionDef:
    """Parse ``source`` (lines from ``first_line``) into the function's definition, fresh each call."""
    tree = _parse_fragment(textwrap.dedent(source), fn)
    ast.increment_lineno(tree, first_line - 1)
    definition = tree.body[0]
    if not isinstance(definition, ast.FunctionDef):
        definition = _lambda_definition(fn, tree)
    return definition


def _check_source_matches(fn, source: str, first_line: int) -> None:
    """Refuse source that no longer compiles to ``fn``'s code (its file was edited after the import).

    The source is compiled again, as Python compiled it (same file name, lines and
    ``__future__`` flags), and its instructions, names, constants and lines compared.
    """
    code = fn.__code__
    tree = _parse_fragment(textwrap.dedent(source), fn)
    ast.increment_lineno(tree, first_line - 1)
    if code.co_freevars:  # compiled inside a function that has them as locals, so they stay free
        outer = parse(f"def _gpulab_outer():\n    {' = '.join(code.co_freevars)} = None\n")
        outer.body[0].body.extend(tree.body)
        tree = outer
    flags = code.co_flags & _FUTURE_FLAGS
    try:
        compiled = compile_tree(tree, code.co_filename, flags=flags, dont_inherit=True)
    except RecursionError:
        raise NestingError(f"`{fn.__name__}` is nested too deeply for Python to compile it again: split its "
                           "longest expression into several assignments",
                           SourceLocation(code.co_filename, code.co_firstlineno)) from None
    except (SyntaxError, ValueError):
        compiled = None
    candidates = [c for c in _code_objects(compiled) if c.co_name == code.co_name] if compiled else []
    if not any(_same_code(c, code) for c in candidates):
        raise SourceMismatchError(
            f"the source of `{fn.__name__}` in {code.co_filename} (line {code.co_firstlineno}) no longer "
            "matches the function Python runs: the file was edited after it was imported. Re-import the "
            "module (importlib.reload) or re-run the cell, so that gpulab compiles what Python runs",
            SourceLocation(code.co_filename, code.co_firstlineno))


_FUTURE_FLAGS = functools.reduce(lambda a, b: a | b, (getattr(__future__, name).compiler_flag
                                                      for name in __future__.all_feature_names))


def _code_objects(code: pytypes.CodeType):
    """``code`` and every code object nested in it, outermost first."""
    stack = [code]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(c for c in current.co_consts if isinstance(c, pytypes.CodeType))


def _same_code(a: pytypes.CodeType, b: pytypes.CodeType) -> bool:
    """Whether two code objects run the same instructions on the same lines (and so do their nested ones)."""
    if (a.co_names, a.co_varnames, a.co_freevars, a.co_firstlineno) != (
            b.co_names, b.co_varnames, b.co_freevars, b.co_firstlineno):
        return False
    ours, theirs = _instructions(a), _instructions(b)
    if len(ours) != len(theirs):
        return False
    for x, y in zip(ours, theirs):
        if isinstance(x[1], pytypes.CodeType) and isinstance(y[1], pytypes.CodeType):
            if x[0] != y[0] or x[2] != y[2] or not _same_code(x[1], y[1]):
                return False
        elif x != y or type(x[1]) is not type(y[1]):
            return False
    return True


_SAME_OPERATION = {"LOAD_METHOD": "LOAD_ATTR"}
"""CPython emits either for ``module.function(...)``, depending on how the module's name was bound
(and pushes the NULL of a call separately or not): the same operation."""
_IGNORED = frozenset({"CACHE", "PUSH_NULL"})


def _instructions(code: pytypes.CodeType) -> list[tuple]:
    """``(operation, argument, line)`` per instruction, jumps as instruction indices, caches and NULLs left out."""
    instructions = [i for i in dis.get_instructions(code) if i.opname not in _IGNORED]
    index = {instruction.offset: n for n, instruction in enumerate(instructions)}
    return [(_SAME_OPERATION.get(i.opname, i.opname),
             index.get(i.argval) if i.opcode in dis.hasjrel or i.opcode in dis.hasjabs else i.argval,
             i.positions.lineno if i.positions else None)
            for i in instructions]


def _source_lines(fn) -> tuple[list[str], int]:
    """``inspect.getsourcelines(fn)`` for a ``def``, found by parsing its file (C) rather than tokenizing it.

    Python 3.11's tokenizer compiles its regular expressions on first use
    (~20 ms, once per process); a lambda, or a file that does not parse on its
    own, still goes through ``inspect``.
    """
    all_lines, _ = inspect.findsource(fn)
    first = fn.__code__.co_firstlineno
    try:
        tree = parse("".join(all_lines))
    except (SyntaxError, ValueError):
        return inspect.getsourcelines(fn)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == fn.__name__ and first == (
                node.decorator_list[0].lineno if node.decorator_list else node.lineno):
            return all_lines[first - 1:node.end_lineno], first
    return inspect.getsourcelines(fn)


def _parse_fragment(text: str, fn) -> ast.Module:
    """Parse a function's source lines; a lambda's lines may be part of a larger statement."""
    candidates = (text, text.rstrip() + "\n    pass\n", "(\n" + text.strip().rstrip(",;:") + "\n)")
    for shift, candidate in zip((0, 0, -1), candidates):
        try:
            tree = parse(candidate)
        except SyntaxError:
            continue
        ast.increment_lineno(tree, shift)
        return tree
    raise KernelTypeError(f"gpulab could not read the source of `{fn.__name__}`; define it with `def`")


def _lambda_definition(fn, tree) -> ast.FunctionDef:
    """The one lambda in ``tree`` with ``fn``'s parameters, as ``def _lambda(...): return ...``."""
    names = list(fn.__code__.co_varnames[: fn.__code__.co_argcount])
    lambdas = [node for node in ast.walk(tree) if isinstance(node, ast.Lambda)
               and [a.arg for a in node.args.args] == names]
    if len(lambdas) != 1:
        raise KernelTypeError(
            f"gpulab cannot tell which lambda on line {fn.__code__.co_firstlineno} is `{fn.__name__}`; "
            "define the function with `def`"
        )
    node = lambdas[0]
    definition = ast.FunctionDef(name=LAMBDA_NAME, args=node.args, body=[ast.Return(node.body)],
                                 decorator_list=[], returns=None, type_params=[])
    ast.copy_location(definition.body[0], node.body)
    return ast.copy_location(definition, node)


def _declared_signature(fn, types, names, location) -> Signature | None:
    if types is not None:
        return _with_result(_parse_types(types, names, location), fn, location)
    annotations = _annotations(fn, location)
    if not all(name in annotations for name in names):
        return None
    result = annotations.get("return")
    try:
        return Signature(
            tuple(element_type(annotations[name]) for name in names),
            element_type(result) if result is not None else None,
        )
    except KernelTypeError as exc:
        raise KernelTypeError(exc.message, location) from None


def _with_result(signature: Signature, fn, location) -> Signature:
    """``signature``, with the annotated return type when ``types=`` gave none."""
    if signature.result is not None:
        return signature
    result = _annotations(fn, location).get("return")
    try:
        return Signature(signature.args, element_type(result)) if result is not None else signature
    except KernelTypeError as exc:
        raise KernelTypeError(exc.message, location) from None


def _annotations(fn, location) -> dict:
    return {name: _annotation_value(fn, value, location) for name, value in inspect.get_annotations(fn).items()}


def _annotation_value(fn, annotation, location):
    """A string annotation is a type name (``"f32"``) or a dotted name (``"np.float32"``), never evaluated.

    ``from __future__ import annotations`` makes every annotation a string; the
    name is looked up in the function's closure and globals and in module dicts.
    """
    if not isinstance(annotation, str):
        return annotation
    try:
        return element_type(annotation)
    except KernelTypeError:
        pass
    try:
        node = parse(annotation.strip(), mode="eval").body
    except SyntaxError:
        node = None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):  # "'f32'": a quoted name, postponed
        return _annotation_value(fn, node.value, location)
    dotted = _dotted(node) if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else None
    missing = object()
    value = missing
    if dotted is not None:
        root, *path = dotted.split(".")
        value = visible_names(fn).get(root, missing)
        for attr in path:
            value = vars(value).get(attr, missing) if isinstance(value, pytypes.ModuleType) else missing
    if value is missing:
        raise KernelTypeError(
            f"the annotation {annotation!r} is not an element type: use a type name ('f32', 'float32') or a "
            "name bound to a dtype (np.float32, gpulab.f32, a structured dtype assigned to a name)", location)
    return value


def _parse_types(types, names, location) -> Signature:
    result = None
    if isinstance(types, str):
        args_text, _, result_text = types.partition("->")
        types = [t.strip() for t in args_text.split(",") if t.strip()]
        result = result_text.strip() or None
    elif isinstance(types, Signature):
        return types
    types = list(types)
    if len(types) != len(names):
        raise KernelTypeError(
            f"{len(types)} type(s) given for {len(names)} parameter(s) ({', '.join(names)})", location
        )
    try:
        return Signature(tuple(element_type(t) for t in types), element_type(result) if result else None)
    except KernelTypeError as exc:
        raise KernelTypeError(exc.message, location) from None


def _check_returns(kernel: Kernel) -> None:
    """Refuse a body that can end without ``return value`` (the host would make NaN, the device refuses)."""
    definition = kernel._definition
    if not _always_returns(definition.body):
        last = definition.body[-1]
        raise KernelTypeError(
            f"`{kernel.name}` can reach its end without returning a value: every path of a kernel must "
            "end in `return <value>`", kernel.location(getattr(last, "end_lineno", None) or last.lineno))
    for node in ast.walk(definition):
        if isinstance(node, ast.Return) and node.value is None:
            raise KernelTypeError(f"`{kernel.name}` returns nothing here: a kernel returns a value",
                                  kernel.location(node.lineno))


def _always_returns(body) -> bool:
    """Whether every path through the statements ``body`` ends in a ``return``."""
    for statement in body:
        if isinstance(statement, ast.Return):
            return True
        if isinstance(statement, ast.If) and _always_returns(statement.body) and _always_returns(statement.orelse):
            return True
        if (isinstance(statement, ast.While) and isinstance(statement.test, ast.Constant) and statement.test.value
                and not any(isinstance(n, ast.Break) for n in ast.walk(statement))):
            return True  # `while True:` without break leaves only by return
    return False

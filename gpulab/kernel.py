"""Kernel: a pure, typed Python function that gpulab can compile and run."""

from __future__ import annotations

import ast
import functools
import hashlib
import inspect
import json
import linecache
import textwrap
import weakref
import types as pytypes
from dataclasses import dataclass

from .errors import KernelTypeError, SourceLocation
from .purity import Analysis, analyse, visible_names
from .types import ElementType, element_type

LAMBDA_NAME = "_lambda"


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
            offset=line_offset, constants=self.constants, kernel_type=Kernel,
        )
        for nested in self.analysis.kernels:
            if nested.uniforms:
                raise KernelTypeError(
                    f"kernel `{self.name}` calls `{nested.name}`, which reads the free variable(s) "
                    f"{', '.join(nested.uniforms)}; pass them to it as arguments instead",
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
            return _parse_types(types, self.param_names, self.location())
        if self.declared is None:
            raise KernelTypeError(
                f"`{self.name}` has no element types: annotate its parameters "
                "(def f(a: gpulab.f32, b: gpulab.f32)) or pass types=",
                self.location(),
            )
        return self.declared

    def uniform_values(self) -> tuple:
        """Return the uniforms' current values, read from the function's closure and globals."""
        code, closure = self.pyfunc.__code__, self.pyfunc.__closure__ or ()
        cells = dict(zip(code.co_freevars, closure))
        return tuple(cells[name].cell_contents if name in cells else self.pyfunc.__globals__[name]
                     for name in self.uniforms)

    def uniform_types(self) -> tuple[ElementType, ...]:
        """Return the uniforms' element types, from their current values."""
        return tuple(uniform_type(value) for value in self.uniform_values())

    @functools.cached_property
    def identity(self) -> dict:
        """What identifies the kernel's code: source, bytecode, constants, references, nested kernels.

        Uniforms count by name only (their values are launch arguments), so a
        kernel is identified by what it computes, not by the function object.
        """
        return {
            "source": self.source,
            "first_line": self.first_line,
            "code": _code_fingerprint(self.pyfunc.__code__),
            "uniforms": list(self.uniforms),
            "references": {name: _reference(value) for name, value in sorted(self.analysis.references.items())},
        }

    @functools.cached_property
    def fingerprint(self) -> str:
        """A digest of :attr:`identity`: what in-process caches of compiled operators are keyed by."""
        return hashlib.sha256(json.dumps(self.identity, sort_keys=True).encode()).hexdigest()

    def __call__(self, *args):
        return self.pyfunc(*args)

    def __repr__(self) -> str:
        return f"<gpulab.Kernel {self.name}{self.declared or '(untyped)'}>"

    # --- what numba compiles -----------------------------------------------------
    def parametrized(self, wrap_kernel) -> pytypes.FunctionType:
        """Return the function with its uniforms appended as parameters.

        Parameters
        ----------
        wrap_kernel : callable
            Turns a nested :class:`Kernel` into what the compiler calls
            (a numba device function, a CPU jitted function).

        Returns
        -------
        function
            Compiled from the original source, with the original file name
            and line numbers (so line info points at the user's lines);
            free names other than uniforms are bound to their current values.
        """
        definition = ast.FunctionDef(
            name=self._definition.name,
            args=ast.arguments(
                posonlyargs=[],
                args=[ast.arg(arg=name) for name in [*self.param_names, *self.uniforms]],
                kwonlyargs=[], kw_defaults=[], defaults=[],
            ),
            body=self._definition.body,
            decorator_list=[],
            returns=None,
            type_params=[],
        )
        ast.copy_location(definition, self._definition)
        module = ast.fix_missing_locations(ast.Module(body=[definition], type_ignores=[]))
        namespace = {
            name: wrap_kernel(value) if isinstance(value, Kernel) else value
            for name, value in self.analysis.references.items()
        }
        exec(compile(module, self.compiled_filename, "exec"), namespace)
        return namespace[self._definition.name]

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
    if cached is not None and _references_unchanged(cached):
        return cached
    checked = Kernel(fn)
    _CHECKED[fn] = checked
    return checked


def _references_unchanged(kernel: Kernel) -> bool:
    code, closure = kernel.pyfunc.__code__, kernel.pyfunc.__closure__ or ()
    cells = dict(zip(code.co_freevars, closure))
    missing = object()
    for name, value in kernel.analysis.references.items():
        current = cells[name].cell_contents if name in cells else kernel.pyfunc.__globals__.get(name, missing)
        if current is not value:
            return False
    return True


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


def uniform_type(value) -> ElementType:
    """Return the element type a uniform of this value is passed as."""
    if isinstance(value, (bool, int, float, complex)):
        return element_type(type(value))
    return element_type(value.dtype)


def _parse(fn):
    try:
        lines, first_line = inspect.getsourcelines(fn)
    except (OSError, TypeError) as exc:
        raise KernelTypeError(
            f"gpulab needs the source of `{fn.__name__}`: define it in a file or a notebook cell "
            "(a function made by exec() of a string has none unless its file name is in linecache)"
        ) from exc
    source = "".join(lines)
    tree = _parse_fragment(textwrap.dedent(source), fn)
    ast.increment_lineno(tree, first_line - 1)
    definition = tree.body[0]
    if not isinstance(definition, ast.FunctionDef):
        definition = _lambda_definition(fn, tree)
    return source, first_line, definition


def _parse_fragment(text: str, fn) -> ast.Module:
    """Parse a function's source lines; a lambda's lines may be part of a larger statement."""
    candidates = (text, text.rstrip() + "\n    pass\n", "(\n" + text.strip().rstrip(",;:") + "\n)")
    for shift, candidate in zip((0, 0, -1), candidates):
        try:
            tree = ast.parse(candidate)
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
    return ast.fix_missing_locations(ast.copy_location(definition, node))


def _declared_signature(fn, types, names, location) -> Signature | None:
    if types is not None:
        return _parse_types(types, names, location)
    annotations = {name: _annotation_value(fn, value) for name, value in inspect.get_annotations(fn).items()}
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


def _annotation_value(fn, annotation):
    """A string annotation is a type name (``"f32"``) or, failing that, an expression."""
    if not isinstance(annotation, str):
        return annotation
    try:
        return element_type(annotation)
    except KernelTypeError:
        return eval(annotation, fn.__globals__)  # what `from __future__ import annotations` defers


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

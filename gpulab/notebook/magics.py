"""IPython magics: ``%%gpukernel`` shows, runs and times a cell's function; ``%gpulab`` runs the session.

A thin adapter: options are parsed here and the work is done by
:func:`~gpulab.notebook.result.run_cell` and :mod:`~gpulab.notebook.session`.
Load them with ``%load_ext gpulab``; ``%%gpukernel?`` and ``%gpulab?`` show
every option.
"""

from __future__ import annotations

import ast
import sys
import warnings
from contextlib import contextmanager

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import display
from numba.core.errors import NumbaError

from .. import cache, registry
from ..bench import item_count
from ..compiler.bundle import PANES
from ..compiler.frontends import other_frontend
from ..compiler.target import Target, parse_target
from ..device import current_device, use
from ..device import device as find_device
from ..display.errors import format_error
from ..errors import (USER_ERRORS, ArgumentError, AssociativityWarning, GpulabError, KernelTypeError, TargetError,
                      UserCodeError, described)
from ..kernel import AST_LOCK, Kernel
from ..options import FRONTENDS, ORDERS
from . import formatters, session, tracebacks
from .result import run_cell

__all__ = ["GpulabMagics", "load_ipython_extension"]


# ---------------------------------------------------------------- parsing


def _count(text: str) -> int:
    try:
        return item_count(text, "a number of items")
    except ArgumentError as exc:
        raise UsageError(str(exc)) from None


def _sizes(text: str) -> list[int]:
    return [_count(part) for part in text.split(",") if part.strip()]


def _panes(text: str) -> tuple[str, ...]:
    panes = tuple(part.strip() for part in text.split(",") if part.strip())
    unknown = sorted(set(panes) - set(PANES))
    if unknown or not panes:
        raise UsageError(f"--show takes panes from {','.join(PANES)}; got {text!r}")
    return panes


def _range(text: str) -> tuple:
    try:
        low, high = (ast.literal_eval(part.strip()) for part in text.split(","))
    except (ValueError, SyntaxError):
        raise UsageError(f"--range takes two numbers, LOW,HIGH (such as 0,256); got {text!r}") from None
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (low, high)):
        raise UsageError(f"--range takes two numbers, LOW,HIGH (such as 0,256); got {text!r}")
    return low, high


def _target(option: str):
    """A parser of ``option``'s value: the :class:`~gpulab.compiler.target.Target` it names, parsed once, here."""

    def parse(text: str) -> Target:
        try:
            return parse_target(text)
        except TargetError as exc:
            raise UsageError(f"{option}: {exc}") from None

    return parse


def _function_name(tree: ast.Module, name: str | None) -> str:
    """``name``, else the last function the cell defines (a ``def`` or ``f = lambda ...``)."""
    if name:
        return name
    found = None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            found = node.name
        elif (isinstance(node, ast.Assign) and isinstance(node.value, ast.Lambda) and len(node.targets) == 1
              and isinstance(node.targets[0], ast.Name)):
            found = node.targets[0].id
    if found is None:
        raise UsageError("the cell defines no function: define one with def, or name one with --name")
    return found


def _primitive(name: str) -> registry.Primitive:
    try:
        return registry.primitive(name)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _kernel(function, types) -> Kernel:
    if isinstance(function, Kernel):
        kernel = function if types is None else Kernel(function.pyfunc, types=types, constants=function.constants)
    else:
        kernel = Kernel(function, types=types)
    if kernel.declared is None:  # said here in the magic's terms, --types rather than types=
        raise KernelTypeError(f"`{kernel.name}` has no element types: annotate its parameters "
                              "(def f(a: f32, b: f32)) or give them with --types, e.g. --types f32,f32",
                              kernel.location())
    return kernel


@contextmanager
def _associativity_at_cell_lines(filename: str, silenced: bool):
    """Show each :class:`~gpulab.errors.AssociativityWarning` the cell's builds, runs and plans raise once, at its
    cell line, every time the cell runs (none with ``silenced``: --associative); other warnings as they are."""
    shown: set[str] = set()
    original = warnings.showwarning

    def show(message, category, *where, **more):
        if not issubclass(category, AssociativityWarning):
            return original(message, category, *where, **more)
        text = format_error(message, filename)
        if text not in shown:
            shown.add(text)
            print(text, file=sys.stderr)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore" if silenced else "always", AssociativityWarning)
        warnings.showwarning = show
        yield


def _cell_number(shell) -> int:
    """The number of the running cell (its prompt's), whatever IPython has done to ``execution_count`` by now.

    The cell's own code called this magic, so one of the frames above is
    the cell, in a file the shell's compiler numbered.
    """
    numbers = getattr(shell.compile, "_filename_map", {})
    frame = sys._getframe(1)
    while frame is not None:
        number = numbers.get(frame.f_code.co_filename)
        if number is not None:
            return number
        frame = frame.f_back
    return shell.execution_count


# ---------------------------------------------------------------- magics


@magics_class
class GpulabMagics(Magics):
    """``%%gpukernel`` and ``%gpulab``."""

    @magic_arguments(name="%gpukernel")
    @argument("primitive", help=f"what to wrap the function in: {', '.join(registry.PRIMITIVES)}")
    @argument("--name", help="the function to use (default: the last one the cell defines)")
    @argument("--types", help='parameter types when the function has no annotations, e.g. "f32,f32"')
    @argument("--target", type=_target("--target"), metavar="TARGET",
              help="compute capability to compile for, e.g. sm_90 (default: the current GPU)")
    @argument("--device",
              help="where --run, --bench, --compare and --profile run: host or cuda:N (default: the current one)")
    @argument("--lto", dest="lto", action="store_const", const=True, default=None,
              help="link with LTO, the operator inlined (the default)")
    @argument("--no-lto", dest="lto", action="store_const", const=False, help="link PTX: the operator is a CALL")
    @argument("--fma", dest="fma", action="store_const", const=True, default=None,
              help="contract a * b + c into FMA (the default)")
    @argument("--no-fma", dest="fma", action="store_const", const=False, help="keep multiply and add apart")
    @argument("--frontend", choices=FRONTENDS,
              help="what compiles the Python function (default: numba-cuda; numba-cuda-mlir with gpulab[mlir])")
    @argument("--no-boundscheck", dest="boundscheck", action="store_false",
              help="leave reads of captured arrays unchecked (compare the SASS: the checks' cost); --run checks")
    @argument("--exclusive", action="store_true", help="scan: an exclusive scan (needs --initial)")
    @argument("--order", choices=ORDERS,
              help="a primitive that folds: its tree; device (the default: the build's own), portable (fixed by "
                   "the items' positions: the same bits on every GPU and the host) or sequential (the host's, "
                   "left to right)")
    @argument("--associative", action="store_true",
              help="a primitive that folds (reduce, scan, ...): you know the operator is associative, or accept "
                   "the device's grouping; gpulab does not try it for a counterexample, nor warn")
    @argument("--initial", help="reduce or scan initial value, a Python expression (reduce default: 0)")
    @argument("--bins", type=_count, metavar="N", help="histogram: the number of bins (the function gives an "
              "item's bin, or a value binned over --range)")
    @argument("--range", type=_range, metavar="LOW,HIGH",
              help="histogram: bin the function's values evenly from LOW to HIGH, as numpy.histogram")
    @argument("--descending", action="store_true", help="sort: the largest key first (equal keys keep their order)")
    @argument("--show", help="panes to show, from python,cuda,ptx,sass (default: all)")
    @argument("--compare", action="store_true",
              help="also build the function linked the other way and compare CALLs, SASS, registers and, on a "
                   "GPU, time at 2^24 items (or --run's N if larger)")
    @argument("--diff", choices=("fma", "lto"),
              help="also build with that option flipped and show the two SASS listings aligned (gpulab.diff)")
    @argument("--diff-target", type=_target("--diff-target"), metavar="TARGET",
              help="also build for TARGET (e.g. sm_80) and show the two SASS listings aligned (gpulab.diff)")
    @argument("--compare-frontends", action="store_true",
              help="also build with the other frontend (numba-cuda or numba-cuda-mlir) and show the two SASS "
                   "listings aligned (gpulab.diff)")
    @argument("--run", type=_count, metavar="N", help="run on N random items and check against the host backend")
    @argument("--profile", type=_count, metavar="N",
              help="measure the kernel on N random items under the GPU's profiler (Nsight Compute): stall samples "
                   "by reason beside each Python line, the verdict in the header (docs/profiling.md)")
    @argument("--bench", type=_sizes, metavar="SIZES",
              help='time the device and the host at these sizes, e.g. "1e3,1e5,1e7", and plot')
    @argument("-o", "--output", action="store_true",
              help="show nothing while it works; return a result object (builds, run check, bench) that "
                   "displays itself, as %%timeit -o does (the cell's value: keep it with r = _)")
    @cell_magic
    def gpukernel(self, line: str, cell: str):
        """Compile the function this cell defines and show its CUDA C++, PTX and SASS.

        The cell runs as a normal cell would (its functions stay defined);
        then its last function (or --name) is compiled for PRIMITIVE and
        shown side by side, each Python line coloured where it lands.
        Errors in the function are reported at their cell line, without
        a traceback; an error the cell's own code raises is shown as for
        any cell. Either stops Run All there, as an error in any cell does. The element types (``f32``, ``i32``...) come from gpulab:
        ``from gpulab import f32, i32``, in the cell or before it. Without
        a GPU, --run and --bench run on the host, and --profile says what
        it needs under the view.

        Reduce, scan, segmented_reduce and reduce_by_key fold the items in a
        tree on a device, so their operator must be associative (never
        commutative): gpulab tries it on a few values of its type and, where
        ``f(f(a, b), c)`` and ``f(a, f(b, c))`` differ, warns at its line
        with the counterexample (in the view's diagnostics too).
        --associative says you know.

        Examples
        --------
        ::

            %%gpukernel reduce --target sm_90 --compare
            from gpulab import f32

            def add(a: f32, b: f32) -> f32:
                return a + b

            %%gpukernel map --types f64 --run 1e6 --bench 1e3,1e5,1e7
            def square(x):
                return x * x

            %%gpukernel map --diff-target sm_80
            def axpb(x: f32) -> f32:
                return x * f32(2) + f32(1)

            %%gpukernel map --compare-frontends
            def axpb(x: f32) -> f32:
                return x * f32(2) + f32(1)

            %%gpukernel scan -o --target sm_80
            from gpulab import i32

            def add(a: i32, b: i32) -> i32:
                return a + b

            %%gpukernel histogram --bins 16 --run 1e6
            from gpulab import f32, i32

            def bin_of(x: f32) -> i32:
                return i32((x + f32(1)) * f32(8))

            %%gpukernel map --profile 1e6
            import math
            from gpulab import f64

            def heavy(x: f64) -> f64:
                return math.exp(x * 2.0) + 1.0
        """
        args = _arguments(self.gpukernel, line)
        defaults = session.defaults
        panes = _panes(args.show) if args.show else defaults.show
        record = _primitive(args.primitive)
        try:
            options = defaults.cell_options(record, lto=args.lto, fma=args.fma, boundscheck=args.boundscheck,
                                            exclusive=args.exclusive, order=args.order, frontend=args.frontend)
        except ArgumentError as exc:
            raise UsageError(str(exc)) from None
        arguments = {name: value for name, value in (("bins", args.bins), ("range", args.range),
                                                     ("descending", args.descending or None)) if value is not None}
        for name in arguments:
            if name not in record.call_options:
                raise UsageError(f"--{name} is not an option of {record.name}")
        if "bins" in record.call_options and "bins" not in arguments and (args.run or args.bench or args.compare):
            raise UsageError(f"{record.name} runs with --bins N (how many bins)")
        if sum(map(bool, (args.diff, args.diff_target, args.compare_frontends))) > 1:
            raise UsageError("give one of --diff, --diff-target and --compare-frontends: each compares this build "
                             "with one other")
        initial = self._evaluate(args.initial)
        filename, tree = self._execute(cell)
        try:
            kernel = _kernel(self._lookup(_function_name(tree, args.name)), args.types)
            device = find_device(args.device) if args.device else current_device()
            diff = ({"target": args.diff_target} if args.diff_target
                    else {args.diff: not getattr(options, args.diff)} if args.diff
                    else {"frontend": other_frontend(options.frontend)} if args.compare_frontends else None)
            with _associativity_at_cell_lines(filename, silenced=args.associative):
                result = run_cell(kernel, args.primitive, target=session.target_for(args.target, device),
                                  device=device, options=options, arguments=arguments, panes=panes,
                                  compare=args.compare, run=args.run, bench_sizes=args.bench, initial=initial,
                                  diff=diff, profile=args.profile, associative=args.associative,
                                  show=(lambda part: None) if args.output else display)
        except (GpulabError, NumbaError) as exc:  # raised, so Run All stops here; shown as the short message
            raise tracebacks.shown_as(exc, format_error(exc, filename).splitlines())
        return result if args.output else None

    def _evaluate(self, expression: str | None):
        if expression is None:
            return None
        try:
            return eval(expression, self.shell.user_global_ns, self.shell.user_ns)
        except Exception as exc:
            raise UsageError(f"--initial {expression!r}: {type(exc).__name__}: {exc}") from None

    def _execute(self, cell: str):
        """Run the cell in the user's namespace; return its file name and AST.

        The code gets one blank line in front, standing for the ``%%gpukernel``
        line, so line numbers everywhere (errors, the Python pane) are the
        cell's own, and it is filed under the running cell's number, so a
        traceback says ``Cell In[N]`` as the prompt does. An error the cell's
        code raises is raised, shown as IPython shows one of a normal cell:
        from the cell's own frame on, none of gpulab's.
        """
        shell = self.shell
        source = "\n" + shell.transform_cell(cell)
        filename = shell.compile.cache(source, _cell_number(shell), raw_code="\n" + cell)
        try:
            with AST_LOCK:
                tree = shell.transform_ast(shell.compile.ast_parse(source, filename))
                code = shell.compile(tree, filename, "exec")
        except SyntaxError as exc:
            raise tracebacks.shown_as(exc, shell.SyntaxTB.structured_traceback(SyntaxError, exc, [])) from None
        try:
            exec(code, shell.user_global_ns, shell.user_ns)
        except UserCodeError as exc:  # e.g. @gpulab.kernel on an impure function
            raise tracebacks.shown_as(exc, format_error(exc, filename).splitlines())
        except Exception:
            kind, error, frames = sys.exc_info()
            # from the cell's frame on (this one is exec's); a gpulab error about what the cell wrote, without
            # gpulab's frames at all (gpulab.f23: its module __getattr__)
            shown = tracebacks.without_gpulab_frames(frames) if isinstance(error, USER_ERRORS) else frames.tb_next
            raise tracebacks.shown_as(error, lambda: shell.InteractiveTB.structured_traceback(kind, error, shown))
        return filename, tree

    def _lookup(self, name: str):
        if name not in self.shell.user_ns:
            raise UsageError(f"there is no function named {name!r}")
        return self.shell.user_ns[name]

    @magic_arguments()
    @argument("command", nargs="?", default="help", choices=["devices", "use", "cache", "defaults", "help"],
              help="devices: list them; use NAME: make one current; cache [clear]: the build cache; "
                   "defaults [options]: %%%%gpukernel's session defaults; help: this text")
    @argument("arguments", nargs="*", help="use: a device name (host, cuda:N); cache: clear")
    @argument("--target", help="defaults: compile target, e.g. sm_90 ('auto' for the current GPU)")
    @argument("--lto", dest="lto", action="store_const", const=True, default=None, help="defaults: link with LTO")
    @argument("--no-lto", dest="lto", action="store_const", const=False, help="defaults: link PTX")
    @argument("--fma", dest="fma", action="store_const", const=True, default=None, help="defaults: contract FMA")
    @argument("--no-fma", dest="fma", action="store_const", const=False, help="defaults: no FMA contraction")
    @argument("--show", help="defaults: panes, from python,cuda,ptx,sass")
    @argument("--reset", action="store_true", help="defaults: back to the built-in ones")
    @line_magic
    def gpulab(self, line: str):
        """Devices, the build cache and session defaults of gpulab.

        ``%gpulab use NAME`` takes a name that ``%gpulab devices`` lists:
        ``host``, or ``cuda:0`` and so on where there is a GPU.

        Examples
        --------
        ::

            %gpulab devices
            %gpulab use host
            %gpulab cache
            %gpulab cache clear
            %gpulab defaults --target sm_100 --no-lto
        """
        args = _arguments(self.gpulab, line)
        try:
            if args.command == "devices":
                display(session.devices_table())
            elif args.command == "use":
                if len(args.arguments) != 1:
                    raise UsageError("usage: %gpulab use NAME (host or cuda:N)")
                chosen = use(args.arguments[0]).device
                print(f"gpulab: the current device is {chosen}")
            elif args.command == "cache":
                self._cache(args.arguments)
            elif args.command == "defaults":
                session.defaults.update(reset=args.reset, target=args.target, lto=args.lto, fma=args.fma,
                                        show=_panes(args.show) if args.show is not None else None)
                display(session.defaults.table())
            else:
                print(self.gpulab.__doc__)
                print("%%gpukernel? shows the options of the cell magic.")
        except GpulabError as exc:
            raise tracebacks.shown_as(exc, format_error(exc).splitlines())

    @staticmethod
    def _cache(arguments: list[str]) -> None:
        if arguments == ["clear"]:
            before = cache.cache_info()
            cache.clear_cache()
            print(f"gpulab: cleared the build cache ({before.disk_entries} entries on disk, "
                  f"{before.memory_entries} in memory)")
        elif not arguments:
            info = cache.cache_info()
            display({"text/plain": str(info), "text/html": info._repr_html_()}, raw=True)
        else:
            raise UsageError("usage: %gpulab cache [clear]")


def _arguments(magic, line: str):
    """``line`` read as ``magic``'s options; a UsageError where it is not one (a quote left open)."""
    try:
        return parse_argstring(magic, line)
    except ValueError as exc:  # shlex's "No closing quotation"
        raise UsageError(f"cannot read the options {line.strip()!r}: {exc}") from None


def load_ipython_extension(ipython) -> None:
    """Register ``%%gpukernel`` and ``%gpulab``, and how builds display (what ``%load_ext gpulab`` calls).

    Raises
    ------
    ArgumentError
        When ``ipython`` is not an IPython shell.
    """
    from IPython.core.interactiveshell import InteractiveShellABC

    if not isinstance(ipython, InteractiveShellABC):
        raise ArgumentError(f"gpulab.load_ipython_extension is IPython's hook, given its shell: run %load_ext gpulab "
                            f"in IPython or Jupyter instead (it was given {described(ipython)})")
    ipython.register_magics(GpulabMagics)
    formatters.register()
    tracebacks.register(ipython)

"""IPython magics: ``%%gpukernel`` shows, runs and times a cell's function; ``%gpulab`` runs the session.

Load them with ``%load_ext gpulab``; ``%%gpukernel?`` and ``%gpulab?`` show
every option.
"""

from __future__ import annotations

import ast
import html
import sys
from dataclasses import dataclass, fields

import numpy as np
from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import display
from numba.core.errors import NumbaError

from . import cache
from .bench import PRIMITIVES, Table, bench, random_inputs
from .compiler.build import Build
from .compiler.build import compile as compile_build
from .compiler.target import SUPPORTED, Target, parse_target
from .display.view import PANES, BuildView
from .errors import GpulabError, UserCodeError
from .kernel import Kernel
from .runtime.devices import Device, current_device, devices, use
from .runtime.devices import device as find_device
from .types import element_type

__all__ = ["GpulabMagics", "SessionDefaults", "compare_table", "compile_targets", "defaults", "devices_table",
           "format_error", "load_ipython_extension", "run_check"]

DEFAULT_TARGET = "sm_90"
# Items timed per build by --compare on a GPU (or --run's size, if larger): enough that the
# kernel, not the per-call cost of a launch (~10-20 us), decides the time.
COMPARE_SIZE = 2**24
_said_default_target = False


@dataclass
class SessionDefaults:
    """Options ``%%gpukernel`` uses where a cell gives none (``%gpulab defaults`` sets them).

    Attributes
    ----------
    target : str or None
        Compile target; ``None`` means the current GPU (``sm_90`` without one).
    lto : bool
        Link with LTO (the operator inlined) or link PTX (a ``CALL``).
    fma : bool
        Contract ``a * b + c`` into FMA instructions.
    show : tuple of str
        Which panes, in order.
    """

    target: str | None = None
    lto: bool = True
    fma: bool = True
    show: tuple[str, ...] = PANES

    def table(self) -> Table:
        """The defaults as a table."""
        target = self.target or f"current GPU ({DEFAULT_TARGET} without one)"
        rows = [["target", target], ["lto", self.lto], ["fma", self.fma], ["show", ",".join(self.show)]]
        return Table(["option", "value"], rows, "%%gpukernel session defaults")


defaults = SessionDefaults()


def compile_targets() -> list[Target]:
    """The targets of ``target.SUPPORTED`` that the installed NVRTC accepts."""
    try:
        from cuda.bindings import nvrtc

        _, archs = nvrtc.nvrtcGetSupportedArchs()
    except ImportError:
        return []
    return [Target(*cc) for cc in SUPPORTED if cc[0] * 10 + cc[1] in archs]


# ---------------------------------------------------------------- errors


def format_error(exc: Exception, cell_file: str | None = None) -> str:
    """Describe an error in the user's code in a few lines: the message, the line and a caret.

    Parameters
    ----------
    exc : Exception
        A :class:`~gpulab.errors.UserCodeError` (shown with its location),
        or any other error (its message only).
    cell_file : str, optional
        The file name of the cell being run; a location in it is called
        ``cell line N``.
    """
    message = exc.message if isinstance(exc, UserCodeError) else str(exc)
    lines = [f"{type(exc).__name__}: {message}"]
    location = getattr(exc, "location", None)
    if location is None:
        return "\n".join(lines)
    number = location.line - location.offset
    where = f"cell line {number}" if location.filename == cell_file else f"{location.filename}, line {number}"
    lines.append(f"  at {where}:")
    text = location.text()
    if text:
        stripped = text.lstrip()
        lines.append(f"    {stripped}")
        if location.column is not None:
            lines.append("    " + " " * max(0, location.column - (len(text) - len(stripped))) + "^")
    return "\n".join(lines)


def _note(message: str) -> None:
    display({"text/plain": message,
             "text/html": f"<div style='font-size:small;color:#777'>{html.escape(message)}</div>"}, raw=True)


# ---------------------------------------------------------------- parsing


def _count(text: str) -> int:
    try:
        value = float(text)
    except ValueError:
        raise UsageError(f"{text!r} is not a number of items") from None
    if value < 1 or value != int(value):
        raise UsageError(f"{text!r} is not a positive whole number of items")
    return int(value)


def _sizes(text: str) -> list[int]:
    return [_count(part) for part in text.split(",") if part.strip()]


def _panes(text: str) -> tuple[str, ...]:
    panes = tuple(part.strip() for part in text.split(",") if part.strip())
    unknown = sorted(set(panes) - set(PANES))
    if unknown or not panes:
        raise UsageError(f"--show takes panes from {','.join(PANES)}; got {text!r}")
    return panes


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


def _kernel(function, types) -> Kernel:
    if isinstance(function, Kernel):
        return function if types is None else Kernel(function.pyfunc, types=types, constants=function.constants)
    return Kernel(function, types=types)


# ---------------------------------------------------------------- run and compare


def _preview(values) -> str:
    array = np.asarray(values)
    if array.ndim == 0:
        return str(array[()])
    text = np.array2string(array, threshold=6, edgeitems=3, max_line_width=10**6, precision=6)
    return f"{text} ({array.size:,} items)"


def _call(primitive: str, kernel: Kernel, inputs, initial, exclusive: bool, device: str):
    from . import primitives

    if primitive == "map":
        return primitives.map(kernel, *inputs, device=device)
    if primitive == "reduce":
        return primitives.reduce(kernel, inputs[0], initial, device=device)
    if primitive == "scan":
        return primitives.scan(kernel, inputs[0], initial, exclusive=exclusive, device=device)
    return primitives.filter(kernel, inputs[0], device=device)


def run_check(kernel: Kernel, primitive: str, n: int, device: Device, initial=None, exclusive: bool = False,
              seed: int = 0) -> Table:
    """Run ``primitive(kernel)`` on ``n`` random items on ``device`` and check it against the host backend.

    Returns
    -------
    Table
        The result, the host reference's result and whether they agree
        (exactly, or by how much they differ).
    """
    from .host import compare, float64_reference
    from .runtime.arrays import to_host

    inputs = random_inputs(kernel, primitive, n, np.random.default_rng(seed))
    if primitive == "reduce" and initial is None:
        initial = np.zeros((), dtype=inputs[0].dtype)[()]
    on_device = inputs
    if device.is_gpu:
        import cupy

        with cupy.cuda.Device(device.ordinal):
            on_device = [cupy.asarray(x) for x in inputs]
    got = to_host(_call(primitive, kernel, on_device, initial, exclusive, device.name))
    want = np.asarray(_call(primitive, kernel, inputs, initial, exclusive, "host"))
    reference = None
    if want.dtype in _WIDENED:
        reference = float64_reference(primitive, kernel, *_host_arguments(primitive, inputs, initial, exclusive))
    check = compare(got, want, element_type(want.dtype), reference)
    rows = [["result", _preview(got), _preview(want)], ["check", _verdict(check), ""]]
    if check.float64_rel_error is not None:
        rows.append(["rel. error vs float64", f"{check.float64_rel_error:.3g}", f"{check.host_float64_rel_error:.3g}"])
    caption = f"{primitive}({kernel.name}) of {n:,} random {inputs[0].dtype} items"
    if not device.is_gpu:
        caption += " (no GPU: both columns ran the host backend)"
    return Table(["", device.name, "host reference"], rows, caption)


_WIDENED = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.complex64))


def _host_arguments(primitive: str, inputs, initial, exclusive: bool) -> tuple:
    if primitive == "reduce":
        return (inputs[0], initial)
    if primitive == "scan":
        return (inputs[0], initial, exclusive)
    return tuple(inputs)


def _verdict(check) -> str:
    if check.exact:
        return "exact"
    if check.ulps is None:
        return check.message
    return f"max abs error {check.max_abs_error:.3g}, max rel error {check.max_rel_error:.3g}, {check.ulps} ulps"


def compare_table(build: Build, other: Build, seconds: dict | None = None) -> Table:
    """The LTO and PTX-linked builds side by side: operator CALLs, SASS size, registers, time.

    Parameters
    ----------
    build, other : Build
        The same function linked both ways (in either order).
    seconds : dict, optional
        ``{"lto": s, "ptx": s, "where": "n=..., cuda:0"}`` measured on a GPU.
    """
    lto, ptx = (build, other) if build.options.lto else (other, build)
    rows = [["operator CALLs", lto.operator_calls, ptx.operator_calls],
            ["SASS instructions", lto.sass_instructions, ptx.sass_instructions]]
    for kernel in lto.resources:
        rows.append([f"registers {kernel}", lto.resources[kernel].registers,
                     ptx.resources[kernel].registers if kernel in ptx.resources else "-"])
    if seconds:
        from .bench import format_seconds

        rows.append([f"time ({seconds['where']})", format_seconds(seconds["lto"]), format_seconds(seconds["ptx"])])
    return Table(["", "LTO", "PTX link"], rows, f"{build.primitive}({build.name}) on {build.target}: LTO vs PTX link")


# ---------------------------------------------------------------- magics


@magics_class
class GpulabMagics(Magics):
    """``%%gpukernel`` and ``%gpulab``."""

    @magic_arguments(name="%gpukernel")
    @argument("primitive", choices=PRIMITIVES, help="what to wrap the function in")
    @argument("--name", help="the function to use (default: the last one the cell defines)")
    @argument("--types", help='parameter types when the function has no annotations, e.g. "f32,f32"')
    @argument("--target", help="compute capability to compile for, e.g. sm_90 (default: the current GPU)")
    @argument("--device", help="where --run, --bench and --compare run: host or cuda:N (default: the current one)")
    @argument("--lto", dest="lto", action="store_const", const=True, default=None,
              help="link with LTO, the operator inlined (the default)")
    @argument("--no-lto", dest="lto", action="store_const", const=False, help="link PTX: the operator is a CALL")
    @argument("--fma", dest="fma", action="store_const", const=True, default=None,
              help="contract a * b + c into FMA (the default)")
    @argument("--no-fma", dest="fma", action="store_const", const=False, help="keep multiply and add apart")
    @argument("--exclusive", action="store_true", help="scan: an exclusive scan (needs --initial)")
    @argument("--initial", help="reduce or scan initial value, a Python expression (reduce default: 0)")
    @argument("--show", help="panes to show, from python,cuda,ptx,sass (default: all)")
    @argument("--compare", action="store_true",
              help="also build the function linked the other way and compare CALLs, SASS, registers and, on a "
                   "GPU, time at 2^24 items (or --run's N if larger)")
    @argument("--run", type=_count, metavar="N", help="run on N random items and check against the host backend")
    @argument("--bench", type=_sizes, metavar="SIZES",
              help='time the device and the host at these sizes, e.g. "1e3,1e5,1e7", and plot')
    @cell_magic
    def gpukernel(self, line: str, cell: str):
        """Compile the function this cell defines and show its CUDA C++, PTX and SASS.

        The cell runs as a normal cell would (its functions stay defined);
        then its last function (or --name) is compiled for PRIMITIVE and
        shown side by side, each Python line coloured where it lands.
        Errors in the function are reported at their cell line, without
        a traceback.

        Examples
        --------
        ::

            %%gpukernel reduce --target sm_90 --compare
            def add(a: f32, b: f32) -> f32:
                return a + b

            %%gpukernel map --types f64 --run 1e6 --bench 1e3,1e5,1e7
            def square(x):
                return x * x
        """
        args = parse_argstring(self.gpukernel, line)
        panes = _panes(args.show) if args.show else defaults.show
        if args.exclusive and args.primitive != "scan":
            raise UsageError("--exclusive is an option of scan")
        initial = self._evaluate(args.initial)
        executed = self._execute(cell)
        if executed is None:
            return
        filename, tree = executed
        try:
            kernel = _kernel(self._lookup(_function_name(tree, args.name)), args.types)
            device = find_device(args.device) if args.device else current_device()
            options = {"lto": defaults.lto if args.lto is None else args.lto,
                       "fma": defaults.fma if args.fma is None else args.fma, "exclusive": args.exclusive}
            target = _target(args.target, device)
            build = compile_build(args.primitive, kernel, target=target, **options)
            other = None
            if args.compare:
                other = compile_build(args.primitive, kernel, target=target, **{**options, "lto": not options["lto"]})
                seconds = _compare_seconds(kernel, args, device, initial) if device.is_gpu else None
                display(compare_table(build, other, seconds))
            display(BuildView(build, panes=panes, compare=other))
            if args.run:
                display(run_check(kernel, args.primitive, args.run, device, initial, args.exclusive))
            if args.bench:
                names = ["host"] if not device.is_gpu else ["host", device.name]
                result = bench(kernel, args.primitive, args.bench, devices=names, initial=initial,
                               exclusive=args.exclusive, lto=options["lto"], fma=options["fma"])
                display(result)
                display(result.plot())
        except (GpulabError, NumbaError) as exc:
            print(format_error(exc, filename), file=sys.stderr)

    def _evaluate(self, expression: str | None):
        if expression is None:
            return None
        try:
            return eval(expression, self.shell.user_global_ns, self.shell.user_ns)
        except Exception as exc:
            raise UsageError(f"--initial {expression!r}: {type(exc).__name__}: {exc}") from None

    def _execute(self, cell: str):
        """Run the cell in the user's namespace; return its file name and AST, or None when it failed.

        The code gets one blank line in front, standing for the ``%%gpukernel``
        line, so line numbers everywhere (errors, the Python pane) are the
        cell's own.
        """
        shell = self.shell
        source = "\n" + shell.transform_cell(cell)
        filename = shell.compile.cache(source, shell.execution_count, raw_code="\n" + cell)
        try:
            tree = shell.transform_ast(shell.compile.ast_parse(source, filename))
            code = shell.compile(tree, filename, "exec")
        except SyntaxError:
            shell.showsyntaxerror(filename)
            return None
        try:
            exec(code, shell.user_global_ns, shell.user_ns)
        except UserCodeError as exc:  # e.g. @gpulab.kernel on an impure function
            print(format_error(exc, filename), file=sys.stderr)
            return None
        except Exception:
            shell.showtraceback()
            return None
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

        Examples
        --------
        ::

            %gpulab devices
            %gpulab use cuda:0
            %gpulab cache
            %gpulab cache clear
            %gpulab defaults --target sm_100 --no-lto
        """
        args = parse_argstring(self.gpulab, line)
        try:
            if args.command == "devices":
                display(devices_table())
            elif args.command == "use":
                if len(args.arguments) != 1:
                    raise UsageError("usage: %gpulab use NAME (host or cuda:N)")
                chosen = use(args.arguments[0]).device
                print(f"gpulab: the current device is {chosen}")
            elif args.command == "cache":
                self._cache(args.arguments)
            elif args.command == "defaults":
                _set_defaults(args)
                display(defaults.table())
            else:
                print(self.gpulab.__doc__)
                print("%%gpukernel? shows the options of the cell magic.")
        except GpulabError as exc:
            print(format_error(exc), file=sys.stderr)

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


def _target(explicit: str | None, device: Device):
    """The target of a build: explicit, the session's, the device's, the first GPU's, else sm_90 (said once)."""
    global _said_default_target
    if explicit or defaults.target:
        return explicit or defaults.target
    gpu = device if device.is_gpu else next((d for d in devices() if d.is_gpu), None)
    if gpu is not None:
        return gpu.compute_capability
    if not _said_default_target:
        _said_default_target = True
        _note(f"gpulab: no GPU here, so compiling for {DEFAULT_TARGET} "
              "(choose with --target, or %gpulab defaults --target)")
    return DEFAULT_TARGET


def _compare_seconds(kernel: Kernel, args, device: Device, initial) -> dict:
    n = max(args.run or 0, COMPARE_SIZE)
    seconds = {}
    for key, lto in (("lto", True), ("ptx", False)):
        result = bench(kernel, args.primitive, [n], devices=[device.name], initial=initial, exclusive=args.exclusive,
                       progress=False, lto=lto, fma=defaults.fma if args.fma is None else args.fma)
        seconds[key] = result.rows[0]["seconds"]
    seconds["where"] = f"n={n:,}, {device.name}"
    return seconds


def _set_defaults(args) -> None:
    if args.reset:
        for option in fields(SessionDefaults):
            setattr(defaults, option.name, option.default)
    if args.target is not None:
        defaults.target = None if args.target.lower() in ("auto", "none") else parse_target(args.target).arch
    if args.lto is not None:
        defaults.lto = args.lto
    if args.fma is not None:
        defaults.fma = args.fma
    if args.show is not None:
        defaults.show = _panes(args.show)


def devices_table() -> Table:
    """Every device (``*`` marks the current one) and the targets one can compile for."""
    current = current_device().name
    rows = []
    for d in devices():
        cc = f"{d.compute_capability[0]}.{d.compute_capability[1]}" if d.is_gpu else "-"
        memory = f"{d.memory_bytes / 2**30:.0f} GiB" if d.memory_bytes else "-"
        rows.append(["*" if d.name == current else "", d.name, d.description, cc, memory, d.multiprocessors or "-"])
    targets = ", ".join(t.arch for t in compile_targets())
    return Table(["", "device", "description", "compute capability", "memory", "SMs"], rows,
                 f"gpulab devices (* current); compile targets: {targets}")


def load_ipython_extension(ipython) -> None:
    """Register ``%%gpukernel`` and ``%gpulab`` (what ``%load_ext gpulab`` calls)."""
    ipython.register_magics(GpulabMagics)

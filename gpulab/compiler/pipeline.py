"""The pipeline: check a function for a primitive (its spec), run the stages, keep the :class:`~.build.Build`.

Each stage is a function from the previous artifacts to new ones, timed:
frontend (the operator), codegen (the kernel's C++), NVRTC, link, resources;
the disassembly waits until it is asked for (:mod:`.disassembly`). Builds are
cached by their spec's key, in memory and on disk.
"""

from __future__ import annotations

import functools
import linecache
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import replace

from .. import cache, registry
from ..errors import ArgumentError, KernelTypeError, LimitError, LinkError
from ..kernel import Kernel, as_kernel
from ..lru import LRU
from ..mapped import Mapped, walk
from ..options import BuildOptions, build_options, check_flags
from ..progress import Progress
from ..types import ElementType
from . import associativity, codegen, disasm, flags, frontends, linemap, link, nvrtc, serialize
from .artifacts import Artifact
from .build import Build
from .spec import BuildSpec, mapped_spec
from .target import parse_target
from .toolchain import require_buildable

PIPELINE_STAGES = ("frontend", "codegen", "nvrtc", "link", "resources")
"""The stages a build runs (the check comes before, the disassembly when it is asked for): a build past
``progress.DELAY`` seconds shows a bar that counts them and names the one running."""


@contextmanager
def _stage(timings: dict, name: str, progress: Progress | None = None):
    if progress is not None:
        progress.begin(name)
    start = time.perf_counter()
    yield
    timings[name] = timings.get(name, 0.0) + time.perf_counter() - start
    if progress is not None:
        progress.end(name)


def make_spec(primitive: str, fn, *, types=None, target=None, mapped=(), keys=None,
              options: BuildOptions | None = None, **given) -> BuildSpec:
    """Check ``fn`` for ``primitive`` and return its :class:`BuildSpec`.

    ``options`` (a :class:`~gpulab.options.BuildOptions`) with the options
    ``given`` by name changed are the build's options. ``mapped`` gives, per
    input of the primitive, the :func:`gpulab.mapped` input (or its
    ``shape``) it is, or ``None``. ``keys`` is a keyed primitive's key type
    (int32 when not given).

    Raises
    ------
    ArgumentError
        For an unknown primitive or option, an option's value of the wrong kind, or an order no device
        build folds in (``"sequential"``).
    KernelTypeError, ImpureKernelError
        When the function does not fit the primitive or is not pure.
    """
    record = registry.primitive(primitive)
    options = build_options(record, options, **given)
    codegen.check_order(record, options.order)
    kernel = as_kernel(fn)
    signature = kernel.signature(types)
    inputs, result = signature.args, signature.result
    record.check_operator(kernel, inputs, result)
    result = record.stored_result(inputs, result)
    uniforms = tuple(zip(kernel.uniforms, kernel.uniform_types()))
    arrays = tuple(zip(kernel.arrays, kernel.array_types()))
    keys = record.key_type(keys)
    specs = _mapped_specs(record, kernel, inputs, mapped, keys)
    reads = arrays or any(spec.arrays for _, spec in walk(specs))
    if options.iota and len(options.iota) != len(inputs):
        raise ArgumentError(f"iota= gives {len(options.iota)} flag(s); {record.name} of `{kernel.name}` takes "
                            f"{len(inputs)} input(s)")
    options = replace(options, iota=options.iota or (False,) * len(inputs),
                      boundscheck=options.boundscheck or not reads,  # no reads to check: one build
                      frontend=frontends.resolve(options.frontend))
    return BuildSpec(primitive, kernel, tuple(inputs), result, uniforms, parse_target(target), options, arrays,
                     specs, keys)


def _mapped_specs(record: registry.Primitive, kernel: Kernel, inputs, mapped, keys=None) -> tuple:
    """Per input, the :class:`MappedSpec` of its mapped input or ``None`` (``()`` when no input is mapped)."""
    shapes = tuple(m.shape if isinstance(m, Mapped) else m for m in mapped)
    if not any(shapes):
        return ()
    count = record.input_count(len(inputs))
    if len(shapes) != count:
        raise ArgumentError(f"mapped= gives {len(shapes)} input(s); {record.name} of `{kernel.name}` takes {count}")
    for shape, wanted in zip(shapes, [keys, inputs[0]] if record.keyed else inputs):
        if shape is not None and shape.result != wanted:
            raise KernelTypeError(f"mapped `{shape.kernel.name}` makes {shape.result.name} items, but `{kernel.name}` "
                                  f"takes {wanted.name}: declare `{shape.kernel.name}` -> {wanted.name}",
                                  kernel.location())
    return tuple(mapped_spec(shape) if shape is not None else None for shape in shapes)


def run_pipeline(spec: BuildSpec, check_seconds: float | None = None) -> Build:
    """Run frontend, codegen, NVRTC and link for ``spec`` (disassembly waits until it is asked for);
    ``check_seconds``, how long making ``spec`` took, is kept among its timings as the ``check`` stage.

    When the operator's result type is known before numba runs (every
    primitive but a map of undeclared result), the kernel's C++ is written and
    handed to NVRTC in a worker thread first, so that NVRTC (which releases the
    GIL) and numba run at once; their timings then overlap.
    """
    require_buildable(spec.target)
    with Progress(f"compile {spec.primitive}({spec.kernel.name})", len(PIPELINE_STAGES), "stages",
                  ticking=True) as progress:
        return _run_pipeline(spec, progress, {} if check_seconds is None else {"check": check_seconds})


def _run_pipeline(spec: BuildSpec, progress: Progress, timings: dict[str, float]) -> Build:
    kernel, options = spec.kernel, spec.options
    pending = None
    if spec.result is not None:
        shrink = _known_shrink(spec, spec.result)
        generated = _generate(spec, spec.result, timings, progress=progress, shrink=shrink)
        pending = _worker().submit(_compile_kernel, spec, spec.result, timings, progress, shrink)
    with _stage(timings, "frontend", progress):
        operator = frontends.lower(
            kernel, spec.inputs, [t for _, t in spec.uniforms], result=spec.result, target=spec.target,
            options=options, array_types=[a for _, a in spec.arrays])
        if spec.result is None:  # numba inferred the result: held to the record as a declared one is
            spec.record.check_operator(kernel, spec.inputs, operator.result)
        inputs = _input_operators(spec)
    if pending is None:
        shrink = _known_shrink(spec, operator.result)
        generated = _generate(spec, operator.result, timings, progress=progress, shrink=shrink)
        kernel_code = _compile_kernel(spec, operator.result, timings, progress, shrink)
    else:
        kernel_code = pending.result()
    with _stage(timings, "link", progress):
        linked, generated = _link_fitting(spec, generated, kernel_code, operator, inputs, timings, shrink)
    python_source, python_first_line = _python_pane(spec)
    with _stage(timings, "resources", progress):
        sources = linemap.Sources(kernel.compiled_filename, python_first_line, len(python_source.splitlines()))
        ptx, ptx_keys = linemap.map_ptx(linked.ptx, sources)
        resources = disasm.resource_usage(linked.cubin, linked.info_log, generated.kernels)
    return Build(
        key=spec.key, primitive=spec.primitive, name=kernel.name, target=spec.target, options=options,
        inputs=spec.inputs, result=operator.result, uniforms=spec.uniforms, arrays=spec.arrays,
        python_source=python_source, python_first_line=python_first_line, python_file=kernel.compiled_filename,
        artifacts={"cuda": Artifact("cuda", generated.text.encode(), "kernel"), "operator": operator.ptx,
                   "ptx": Artifact("ptx", ptx.encode(), "kernel"), "cubin": Artifact("cubin", linked.cubin, "kernel")},
        ptx_keys=ptx_keys, resources=resources, kernels=generated.kernels, geometry=generated.geometry,
        parameters=generated.parameters, register_cap=generated.register_cap, timings=timings,
        built_at=time.time(),
    )


def _link_fitting(spec: BuildSpec, generated: codegen.Source, kernel_code: Artifact, operator, inputs: list,
                  timings: dict, shrink: int) -> tuple[link.Linked, codegen.Source]:
    """Link the kernel (generated in tiles halved ``shrink`` times) with the operators; where ptxas finds the
    kernel's shared memory more than a block may declare (a tile of large records), generate and link it in
    smaller tiles (codegen's ``shrink``) until it fits, remembering how small, or say that it cannot."""
    options = spec.options
    libraries = tuple(dict.fromkeys(library for op in (operator, *inputs) for library in op.libraries))
    first = shrink
    while True:
        try:
            linked = link.link(kernel_code, operator.code(options.code_kind), spec.target, options,
                               libraries=libraries, max_registers=generated.register_cap,
                               more=tuple(op.code(options.code_kind) for op in inputs))
            if shrink != first:
                FITTING_SHRINK.put(_kernel_text(spec, operator.result), shrink)
            return linked, generated
        except LinkError as exc:
            overflow = link.shared_overflow(exc)
            if overflow is None:
                raise
            shrink += 1
            smaller = _generate(spec, operator.result, {}, shrink=shrink)
            if smaller.geometry == generated.geometry:
                raise LimitError(
                    f"{spec.primitive} of {_items_named(spec)} needs {overflow[0]:,} bytes of shared memory per "
                    f"block even in its smallest tiles, more than the {overflow[1]:,} a kernel may declare: use "
                    "smaller items (fewer or narrower fields), or keep the large fields in an array the operator "
                    "reads by index (a captured array)", spec.kernel.location()) from None
            generated = smaller
            kernel_code = _compile_kernel(spec, operator.result, timings, shrink=shrink)


def _items_named(spec: BuildSpec) -> str:
    """``64-byte record items`` or ``16-byte complex128 items``: what a tile holds, as a message says it."""
    dtype = spec.inputs[0].dtype
    return f"{dtype.itemsize}-byte {'record' if dtype.names else dtype.name} items"


def _python_pane(spec: BuildSpec) -> tuple[str, int]:
    """The Python pane's text and first line: the kernel's source, or, when its mapped inputs' functions are
    in the same file, the lines from the first of them to the last (so the view colours each where it lands)."""
    kernel = spec.kernel
    others = [mapped.kernel for _, mapped in walk(spec.kinds)]
    if not others or any(k.compiled_filename != kernel.compiled_filename for k in others):
        return kernel.source, kernel.first_line
    spans = [(k.first_line, k.first_line + len(k.source.splitlines()) - 1) for k in (kernel, *others)]
    first, last = min(a for a, _ in spans), max(b for _, b in spans)
    lines = linecache.getlines(kernel.compiled_filename)[first - 1:last]
    if len(lines) != last - first + 1:
        return kernel.source, kernel.first_line
    return "".join(lines), first


def _input_operators(spec: BuildSpec) -> list:
    """The operators of the spec's mapped inputs, named and numbered as codegen declares them."""
    found, first_array = [], len(spec.arrays)
    for path, mapped in walk(spec.kinds):
        found.append(frontends.lower(
            mapped.kernel, mapped.args, [t for _, t in mapped.uniforms], result=mapped.result, target=spec.target,
            options=spec.options, array_types=[a for _, a in mapped.arrays], name=f"{frontends.OP_NAME}_{path}",
            first_array=first_array))
        first_array += len(mapped.arrays)
    return found


def _generate(spec: BuildSpec, result: ElementType, timings: dict, name: str | None = None,
              progress: Progress | None = None, shrink: int = 0) -> codegen.Source:
    options = spec.options
    with _stage(timings, "codegen", progress):
        return codegen.generate(spec.record, name or spec.kernel.name, spec.target, list(spec.inputs), result,
                                list(spec.uniforms), iota=options.iota, index_bits=options.index_bits,
                                exclusive=options.exclusive, arrays=list(spec.arrays), mapped=spec.mapped,
                                keys=spec.keys, payload=options.payload, order=options.order, shrink=shrink)


FITTING_SHRINK: LRU[int] = LRU(64)
"""How many times a kernel's tiles were halved before their shared memory fitted, by the kernel's usual text and
NVRTC flags (:func:`_kernel_text` of no halving): another operator on the same large items is built in fitting
tiles at once, without linking the refused shapes again (~1 s each)."""


def _known_shrink(spec: BuildSpec, result: ElementType) -> int:
    """How many times ``spec``'s tiles must be halved, as far as this process has learnt (0 when unknown)."""
    if not len(FITTING_SHRINK):  # nothing learnt yet: spare every build the kernel text's ~1.5 ms
        return 0
    return FITTING_SHRINK.get(_kernel_text(spec, result), 0)


KERNEL_CODE: LRU = LRU(64)
"""NVRTC's output by kernel text and flags (the target's and the options'). The kernel around an operator
does not depend on the operator (only comments name it), so each primitive, element types, uniforms and
options are compiled by NVRTC once per process, whatever functions they are built for."""
_ANONYMOUS = "op"  # the name the text NVRTC compiles gives every operator (same lines as the shown text)


def _compile_kernel(spec: BuildSpec, result: ElementType, timings: dict, progress: Progress | None = None,
                    shrink: int = 0):
    text, nvrtc_flags = _kernel_text(spec, result, shrink)
    with _stage(timings, "nvrtc", progress):
        return KERNEL_CODE.get_or_make(
            (text, nvrtc_flags), lambda: nvrtc.compile_kernel(text, nvrtc_flags, output=spec.options.code_kind))


def _kernel_text(spec: BuildSpec, result: ElementType, shrink: int = 0) -> tuple[str, tuple]:
    """The kernel's text as NVRTC compiles it (its operator anonymous) and NVRTC's flags."""
    return _generate(spec, result, {}, name=_ANONYMOUS, shrink=shrink).text, flags.nvrtc(spec.options, spec.target)


@functools.lru_cache(maxsize=1)
def _worker() -> ThreadPoolExecutor:
    """The thread NVRTC runs in beside numba (one: builds of other specs queue behind it)."""
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="gpulab-nvrtc")


def compile(primitive: str, fn, *, types=None, target=None, keys=None, options: BuildOptions | None = None,
            associative: bool = False, **given) -> Build:
    """Compile ``fn`` for ``primitive``: generated CUDA C++, PTX, SASS and the cubin.

    Parameters
    ----------
    primitive : str
        A name of :data:`gpulab.registry.PRIMITIVES`: ``map``, ``reduce``, ``scan``, ``filter``,
        ``segmented_reduce``, ``reduce_by_key``, ``histogram``, ``sort``.
    fn : function or Kernel
        A pure function with annotated element types (or ``types=``).
        Map takes 1-3 inputs; reduce, scan, segmented_reduce and
        reduce_by_key an operator ``(T, T) -> T``; filter a predicate ``T -> bool``;
        histogram and sort a key ``T -> K`` (a bin or a value to bin; a sort key).
    types : sequence or str, optional
        Parameter types when ``fn`` has no annotations.
    target : str, tuple, int or Target, optional
        Compute capability (``"sm_90"``, ``(9, 0)``, ``90``); ``None``
        means the current GPU. With a target no GPU is needed.
    keys : dtype, optional
        reduce_by_key's key type (int32 by default).
    options : BuildOptions, optional
        Build options made earlier; those ``given`` by name change them.
    associative : bool
        A primitive that folds (reduce, scan, ...): your word that ``fn`` is
        associative, or that you accept what the device's grouping gives.
        Otherwise gpulab tries it on the host and warns
        (:class:`~gpulab.errors.AssociativityWarning`) where
        ``fn(fn(a, b), c) != fn(a, fn(b, c))``. Not a build option: the
        build is the same.
    **given
        Build options (:class:`~gpulab.options.BuildOptions`): ``lto`` (link
        with link-time optimisation, the operator inlined, default True; False
        links PTX: a ``CALL``), ``lineinfo`` (keep source lines through every
        stage), ``fma`` (contract ``a * b + c``, default True), ``boundscheck``
        (check every read of a captured array against its shape, default
        True), ``index_bits`` (32 or 64), ``frontend``, ``exclusive`` (scan),
        ``iota`` (which map inputs are iota).

    Returns
    -------
    Build
        Cached: the same spec returns the same build, from memory or disk.

    Raises
    ------
    ArgumentError
        For an unknown option or a value of the wrong kind.
    """
    check_flags(associative=associative)
    with _stage(timings := {}, "check"):
        spec = make_spec(primitive, fn, types=types, target=target, keys=keys, options=options, **given)
    build = build_for(spec, check_seconds=timings["check"], associative=associative)
    build.disassembled()
    associativity.warn(build.associativity, primitive, spec.kernel)
    return build


def build_for(spec: BuildSpec, check_seconds: float | None = None, associative: bool = False) -> Build:
    """Return the build of ``spec``, from the cache when it has it; its ``origin`` says where it came from.

    ``check_seconds``, how long making ``spec`` took, is kept among the
    build's timings (and in its cache entry) as the ``check`` stage. Its
    ``associativity`` is what :func:`.associativity.probe` finds now (with the
    uniforms' values of now), unless ``associative``.
    """
    origin = "memory"

    def built() -> Build:
        nonlocal origin
        origin = "built"
        return run_pipeline(spec, check_seconds)

    def loaded(meta, blobs) -> Build:
        nonlocal origin
        origin = "disk"
        return serialize.decode(meta, blobs)

    build = cache.default_cache().get_or_build(spec.key, built, encode=serialize.encode, decode=loaded)
    timings = build.timings
    if check_seconds is not None and "check" not in timings:  # a build first made without a check of its own
        timings = {**timings, "check": check_seconds}
    found = associativity.finding(spec.record, spec.kernel, spec.inputs[0], associative)
    return replace(build, origin=origin, timings=timings, spec=spec, associativity=found)

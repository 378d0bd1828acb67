"""Codegen: the readable CUDA C++ kernel around the operator, from gpulab's templates.

The generated file reads top to bottom: tuning constants, element types,
how inputs and outputs are read and written, the operator's declaration,
shared helpers, then the primitive's kernels. Templates live in
``templates/*.cu``; what a primitive needs of them, and how its kernel calls
the operator, its record in :mod:`gpulab.registry` says. ``$NAME``
placeholders of a primitive's own template are filled with its inputs here.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from string import Template

from .. import cxx
from ..captures import RECORD_FIELDS, ArrayType
from ..errors import ArgumentError
from ..mapped import input_kinds, walk
from ..registry import Primitive
from ..types import ElementType, cxx_definitions
from .parameters import Parameter, kernel_parameters
from .target import Target

BLOCK_THREADS = 256
MAP_UNROLL = 2  # measured on an H200: 2 vectors in flight per lane beat 4 and 8 (bench/results)
REDUCE_THREAD_BYTES = 256  # bytes each reduce thread reads, all loads in flight at once (reduce.cu)
MAX_REDUCE_ITEMS = 64  # items per reduce thread (1-byte items come 16 to a vector)
MAX_REDUCE_ROWS = 16  # loads per reduce thread: more cost registers (and compile time)
MAX_SCALAR_REDUCE_ROWS = 4  # the same for items read one at a time (records of odd sizes, 16-byte items)
REDUCE_ROWS_IN_FLIGHT = 0  # loads a reduce thread issues before it folds them (0: all UNROLL at once; fold_range.cu)
# Reduce blocks per SM that the registers must allow (__launch_bounds__): with one (188 registers)
# each block's fence-and-atomic tail left the SM idle; two (128, no spills with LTO) reached
# 0.98 / 0.95 of copy speed against 0.71-0.78 on an H200 (bench/results run 16).
REDUCE_MIN_BLOCKS = 2
# Scan and filter tiles: 256 threads of 128 bytes each, measured best of the shapes tried on an
# H200 (bench/results).
SCAN_BLOCK_THREADS = 256
SCAN_THREAD_BYTES = 128  # bytes each thread owns in scan and filter (tile.cu)
MAX_SCAN_ITEMS = 32
# Scan and filter registers are capped (__launch_bounds__) so that this many threads fit on an SM.
# Scan of items up to 4 bytes: 1280 (48 registers) ran 1.05x / 1.03x (float32 / int32) its speed at
# 1024 on an H200 (bench/results run 21). Filter lost at 1280 (0.58 against 0.64 of copy; with its kept
# flags in one word, run 39 on an H100, 1280 is within the spread of 1024) and 8-byte items spill under
# 48 registers, so they keep 1024 (64 registers); items over 8 bytes get no cap.
SCAN_RESIDENT_THREADS = 1280
TILE_RESIDENT_THREADS = 1024
LOOKBACK_TILES = 256  # the look-back window: tiles whose status each tile reads (lookback.cu)
LOOKBACK_GROUP = 16  # window slots one thread folds before thread 0 folds the groups (lookback.cu)
# A tile whose shared memory is more than a block may declare (records of 32 bytes and more) is halved until
# it fits (pipeline: the link says so): items per thread first, then threads, down to this many. The
# segmented reduce's search needs its 256 threads (segmented_reduce.cu).
MIN_SHRUNK_THREADS = 64
FIXED_BLOCK = frozenset({"segmented_reduce"})
# Histogram: shared-memory words of privatised counts per block (histogram.cu); more bins are counted in
# global memory. 32 KiB holds 32 conflict-free copies of 256 bins.
SHARED_BIN_WORDS = 8192
# Sort: 8-bit digits (256 of them, a thread each in a tile) and SORT_THREAD_BYTES of items a thread, at
# most 16 (sort.cu: 16 float64 items spilled under the register cap); a tile's items, then its values,
# pass through shared memory. A launch sorts at most SORT_PORTION_TILES tiles (its digit counts then fit
# 32 bits beside the look-back's epoch).
RADIX_BITS = 8
SORT_BLOCK_THREADS = 256
MAX_SORT_ITEMS = 16
SORT_THREAD_BYTES = 64
SORT_PORTION_TILES = 32768
SORT_MIN_BLOCKS = 3  # sort blocks per SM the registers must allow: 80 registers (64 spilled int32 keys with int64 values)
# Histogram blocks per SM the registers must allow: uncapped, ptxas held all 16 float keys' edge loads at
# once (148 registers, one block of 256 threads per SM).
HISTOGRAM_MIN_BLOCKS = 4
# Segmented reduce: 1 issues a whole tile's loads before the block searches the offsets and stores them to
# shared memory after it, so that the search runs while they arrive (segmented_reduce.cu); 0 loads the tile
# first. 1 holds the loads' 32 registers through the search: no spill under the cap of 64 on sm_80-90, 80
# bytes on sm_100. Not measured on a GPU yet, so 0 for now (bench/sweep_variants.py: segments-early-loads).
SEGMENT_EARLY_LOADS = 0
MAX_THREAD_REGISTERS = 255


def check_order(primitive: Primitive, order: str) -> None:
    """Refuse a fold ``order`` that no build of ``primitive`` folds in.

    Raises
    ------
    ArgumentError
        For ``"sequential"``: the host's.
    """
    if order == "sequential":
        raise ArgumentError(f"order='sequential' is the host's left-to-right fold; a device folds {primitive.name} "
                            "in a tree: run it with device='host', or build order='portable' (a tree whose bits "
                            "the host replays) or order='device'")


def fingerprint() -> str:
    """A digest of what shapes generated code: this module, its tuning constants and the templates."""
    digest = hashlib.sha256(Path(__file__).read_bytes())
    digest.update(repr(_tuning()).encode())
    for template in sorted(resources.files(__package__).joinpath("templates").iterdir(), key=lambda t: t.name):
        digest.update(template.name.encode() + template.read_bytes())
    return digest.hexdigest()[:16]


def _tuning() -> tuple:
    return (BLOCK_THREADS, MAP_UNROLL, REDUCE_THREAD_BYTES, MAX_REDUCE_ITEMS, MAX_REDUCE_ROWS, MAX_SCALAR_REDUCE_ROWS,
            REDUCE_ROWS_IN_FLIGHT, REDUCE_MIN_BLOCKS, SCAN_BLOCK_THREADS, SCAN_THREAD_BYTES, MAX_SCAN_ITEMS,
            SCAN_RESIDENT_THREADS, TILE_RESIDENT_THREADS, LOOKBACK_TILES, LOOKBACK_GROUP, SHARED_BIN_WORDS,
            HISTOGRAM_MIN_BLOCKS, SEGMENT_EARLY_LOADS, RADIX_BITS, SORT_BLOCK_THREADS, MAX_SORT_ITEMS,
            SORT_THREAD_BYTES, SORT_PORTION_TILES, SORT_MIN_BLOCKS, MIN_SHRUNK_THREADS)


@dataclass(frozen=True)
class Geometry:
    """How work is cut into threads, vectors and tiles (the host launches with it)."""

    block_threads: int
    vec: int
    unroll: int
    scan_items: int

    @property
    def tile(self) -> int:
        """Items per block for map and reduce (``unroll`` vectors per thread)."""
        return self.block_threads * self.vec * self.unroll

    @property
    def small_items(self) -> int:
        """Items per thread of a scan or filter whose input is one short tile (tile.cu): a vector, or 4 items."""
        return min(self.scan_items, max(4, self.vec))

    @property
    def scan_tile(self) -> int:
        """Items per block for scan and filter (and a sort's tile)."""
        return self.block_threads * self.scan_items


@dataclass(frozen=True)
class Source:
    """The generated kernel file, and each kernel's parameters as its text declares them."""

    text: str
    kernels: tuple[str, ...]
    geometry: Geometry
    parameters: dict[str, tuple[Parameter, ...]]
    register_cap: int | None = None  # registers per thread the kernels' __launch_bounds__ allow


def register_cap(target: Target, block_threads: int, min_blocks: int) -> int | None:
    """Registers per thread that ``__launch_bounds__(block_threads, min_blocks)`` leaves on ``target``; None where
    that is no cap."""
    per_thread = target.limits.registers // (block_threads * min_blocks)
    per_thread -= per_thread % 8
    return per_thread if per_thread < MAX_THREAD_REGISTERS else None


def geometry_for(types: list[ElementType], primitive: Primitive, payload: int = 0,
                 portable: bool = False, shrink: int = 0) -> Geometry:
    """Choose block size, vector width and items per thread for ``primitive`` on the widest of ``types``.

    The record's ``geometry`` says how the primitive cuts its work: blocks of
    vectors (map, and a histogram's, counted in bins), blocks of vectors
    folded in order (reduce), look-back tiles in shared memory (scan,
    filter), or tiles of ``scan_items`` items a thread ranked by radix digits
    (sort, whose items, then values of ``payload`` bytes, pass through shared
    memory). A ``portable`` fold's tiles, threads and rows are powers of two
    (templates/order.cu): its counts are rounded down to one. ``shrink``
    halves a tile that many times (:func:`_shrunk`), for items too large for
    its shared memory.
    """
    widest = max(t.itemsize for t in types)
    vectorisable = all(t.itemsize & (t.itemsize - 1) == 0 for t in types) and widest <= 16
    vec = 16 // widest if vectorisable else 1
    if primitive.geometry == "radix":
        items = max(1, min(MAX_SORT_ITEMS, SORT_THREAD_BYTES // max(widest, payload)))
        return Geometry(SORT_BLOCK_THREADS, 1, 1, items)
    # A thread of a "pairs" tile owns a key and an item per place: SCAN_THREAD_BYTES of both together.
    scan_items = max(1, min(MAX_SCAN_ITEMS, SCAN_THREAD_BYTES // (2 * widest if primitive.geometry == "pairs"
                                                                   else widest)))
    scan_items = max(vec, scan_items - scan_items % vec)
    block_threads = SCAN_BLOCK_THREADS if primitive.geometry in ("tile", "pairs") else BLOCK_THREADS
    unroll = MAP_UNROLL
    if primitive.geometry == "fold":
        rows = MAX_REDUCE_ROWS if vec > 1 else MAX_SCALAR_REDUCE_ROWS
        unroll = max(1, min(REDUCE_THREAD_BYTES // (vec * widest), rows, MAX_REDUCE_ITEMS // vec))
    if portable:
        unroll, scan_items = _power_of_two(unroll), max(vec, _power_of_two(scan_items))
    geometry = Geometry(block_threads, vec, unroll, scan_items)
    for _ in range(shrink if primitive.geometry in ("tile", "pairs") else 0):
        geometry = _shrunk(geometry, primitive)
    return geometry


def _shrunk(geometry: Geometry, primitive: Primitive) -> Geometry:
    """A tile half the size: half the items per thread, down to one (or a vector), then half the threads, down to
    :data:`MIN_SHRUNK_THREADS` (which also halves the look-back window: :func:`_lookback_tiles`); the same tile
    when it can shrink no more. Halving keeps a portable tile's powers of two."""
    if geometry.scan_items > geometry.vec:
        return replace(geometry, scan_items=max(geometry.vec, geometry.scan_items // 2))
    if geometry.block_threads > MIN_SHRUNK_THREADS and primitive.name not in FIXED_BLOCK:
        return replace(geometry, block_threads=geometry.block_threads // 2)
    return geometry


def _lookback_tiles(geometry: Geometry) -> int:
    """The look-back window: :data:`LOOKBACK_TILES`, or fewer in a block of fewer threads (a shrunk tile's)."""
    return min(LOOKBACK_TILES, geometry.block_threads)


def _power_of_two(count: int) -> int:
    """The largest power of two up to ``count`` (at least 1)."""
    return 1 << max(0, count.bit_length() - 1)


def _scan_min_blocks(primitive: Primitive, types: list[ElementType], geometry: Geometry) -> int:
    """Blocks per SM that the scan and filter kernels' registers must allow (``__launch_bounds__``).

    The same for both link modes, so that they differ in how they link alone:
    under the cap a called (PTX-linked) operator spills where an inlined one fits.
    """
    widest = max(t.itemsize for t in types)
    if widest > 8:
        return 1
    threads = SCAN_RESIDENT_THREADS if primitive.name == "scan" and widest <= 4 else TILE_RESIDENT_THREADS
    return max(1, threads // geometry.block_threads)


def generate(primitive: Primitive, name: str, target: Target, inputs: list[ElementType], result: ElementType,
             uniforms: list[tuple[str, ElementType]], *, iota: tuple[bool, ...] = (), index_bits: int = 32,
             exclusive: bool = False, arrays: list[tuple[str, ArrayType]] = (), mapped: tuple = (),
             keys: ElementType | None = None, payload: int = 0, order: str = "device", shrink: int = 0) -> Source:
    """Generate the CUDA C++ for one primitive around the operator ``gpulab_op``.

    Parameters
    ----------
    primitive : Primitive
        Its registry record.
    name : str
        The Python function's name (for comments).
    target : Target
        What it is compiled for (the register cap; named in comments).
    inputs : list of ElementType
        Element types of the inputs (one for reduce, scan and filter).
    result : ElementType
        What the operator returns (bool for filter).
    uniforms : list of (str, ElementType)
        Uniform names and types, in the operator's parameter order.
    arrays : list of (str, ArrayType)
        The captured arrays' names and types, in the operator's parameter order (after the uniforms).
    iota : tuple of bool
        Which inputs are ``iota`` (computed from the index, never stored).
    mapped : tuple of MappedSpec or None
        Per input, the mapped input it is (computed by an operator of its own when read), if any.
    index_bits : {32, 64}
        Width of indices and sizes.
    exclusive : bool
        For scan: exclusive instead of inclusive.
    keys : ElementType, optional
        A keyed primitive's key type (``key_t``, the type of input 0).
    payload : int
        For sort: bytes of the value moved with each item (0: none).
    order : {"device", "portable"}
        For the primitives that fold: their tree (``"portable"``: templates/order.cu).
    shrink : int
        How many times a tile is halved (:func:`geometry_for`): a tile of large items whose shared memory is
        more than a block may declare is built again smaller.
    """
    count = primitive.input_count(len(inputs))
    kinds = input_kinds(count, iota, mapped)
    operators = [spec for _, spec in walk(kinds)]
    items = _input_types(primitive, inputs, keys)
    read = [*items, *(t for spec in operators for t in (*spec.args, spec.result))]
    element_types = [*items, *inputs, result, *read[len(items):]]
    # What the kernels load and store decides their shape: a map stores its results; the other primitives'
    # operator results (a fold's are its inputs' type) never reach memory.
    check_order(primitive, order)
    geometry = geometry_for([*read, result] if primitive.elementwise else read, primitive, payload,
                            portable=order == "portable", shrink=shrink)
    scan_min_blocks = _scan_min_blocks(primitive, element_types, geometry)
    min_blocks = {"fold": REDUCE_MIN_BLOCKS, "tile": scan_min_blocks, "pairs": scan_min_blocks,
                  "bins": HISTOGRAM_MIN_BLOCKS, "radix": SORT_MIN_BLOCKS}.get(primitive.geometry)
    all_uniforms = [*uniforms, *(u for spec in operators for u in spec.uniforms)]
    all_arrays = [*arrays, *(a for spec in operators for a in spec.arrays)]
    sections = [
        _header(primitive.name, name, target.arch, index_bits),
        _constants(geometry, scan_min_blocks, index_bits, exclusive, order, shrink) +
        _own_constants(primitive, payload),
        _types(primitive, inputs, result, uniforms, arrays, element_types, all_uniforms, all_arrays, keys, payload),
        _piece("common"),
        _accessors(primitive, items, kinds, len(arrays)),
        *([_same_key(keys)] if primitive.keyed else []),
        _operator(primitive, name, inputs, result, uniforms, arrays),
    ]
    sections += [_piece(helper) for helper in (primitive.portable_helpers if order == "portable"
                                               else primitive.helpers)]
    sections.append(Template(primitive.template_text()).substitute(_input_fields(len(inputs))))
    text = "\n".join(sections)
    elements = {t.cxx: t for t in (*element_types, *(t for _, t in all_uniforms), *(a.element for _, a in all_arrays))}
    elements.update(_typedefs(primitive, inputs, result, keys))
    return Source(text, primitive.kernels, geometry,
                  kernel_parameters(text, primitive.kernels, elements, index_bits),
                  register_cap(target, geometry.block_threads, min_blocks) if min_blocks else None)


def _piece(name: str) -> str:
    return resources.files(__package__).joinpath("templates", f"{name}.cu").read_text()


def _header(primitive, name, target, index_bits) -> str:
    name = cxx.comment(name)
    return (
        f"// gpulab: {primitive} with `{name}`, for {target}. Generated CUDA C++.\n"
        f"// The operator `{name}` is compiled from Python separately (numba) and\n"
        "// linked in by nvJitLink; with link-time optimisation it is inlined.\n"
        f"// Indices are {index_bits}-bit.\n"
    )


def _constants(geometry: Geometry, min_blocks: int, index_bits: int, exclusive: bool, order: str,
               shrink: int = 0) -> str:
    index_type = "int" if index_bits == 32 else "long long"
    halved = (f"// The tile is halved {shrink} time(s) from its usual shape: for items this large, that shape's "
              "shared memory\n// was more than the 48 KiB a kernel may declare.\n" if shrink else "")
    return (
        "// ---- Tuning -------------------------------------------------------------------\n" + halved +
        f"#define BLOCK_THREADS {geometry.block_threads}\n"
        "#define WARP_THREADS 32\n"
        "#define WARPS_PER_BLOCK (BLOCK_THREADS / WARP_THREADS)\n"
        f"#define VEC {geometry.vec}      // items per vector load (16 bytes of the widest type)\n"
        f"#define UNROLL {geometry.unroll}   // vectors each thread of map and reduce keeps in flight\n"
        f"#define ROWS_IN_FLIGHT {min(REDUCE_ROWS_IN_FLIGHT or geometry.unroll, geometry.unroll)}"
        "  // of them, loaded before the reduce folds them\n"
        f"#define REDUCE_MIN_BLOCKS {REDUCE_MIN_BLOCKS}  // reduce blocks per SM the registers must allow\n"
        "#define WARP_TILE (WARP_THREADS * VEC * UNROLL)\n"
        "#define REDUCE_ROW (BLOCK_THREADS * VEC)  // a vector per thread: what a small reduce reads (fold_range.cu)\n"
        "#define TILE (BLOCK_THREADS * VEC * UNROLL)\n"
        f"#define SCAN_ITEMS {geometry.scan_items}  // contiguous items per thread in scan and filter\n"
        "#define SCAN_TILE (BLOCK_THREADS * SCAN_ITEMS)\n"
        f"#define SMALL_ITEMS {geometry.small_items}  // items per thread of a scan or filter of one short tile\n"
        "#define SMALL_TILE (BLOCK_THREADS * SMALL_ITEMS)  // what takes that path (tile.cu)\n"
        f"#define SCAN_MIN_BLOCKS {min_blocks}  // blocks per SM scan and filter must fit\n"
        f"#define LOOKBACK_TILES {_lookback_tiles(geometry)}  // the look-back window, in tiles\n"
        f"#define LOOKBACK_GROUP {LOOKBACK_GROUP}  // window slots folded by one thread\n"
        f"#define EXCLUSIVE {'true' if exclusive else 'false'}\n"
        f"#define PORTABLE_ORDER {int(order == 'portable')}  // folds in the portable tree (order.cu), else the "
        "device's own\n"
        f"typedef {index_type} index_t;\n"
    )


def _own_constants(primitive: Primitive, payload: int) -> str:
    """The constants of the histogram's and the sort's templates, which their plans read too, and of the
    segmented reduce's."""
    if primitive.name == "segmented_reduce":
        return f"#define SEGMENT_EARLY_LOADS {SEGMENT_EARLY_LOADS}  // the tile's loads before the search\n"
    if primitive.geometry == "bins":
        return (f"#define SHARED_BIN_WORDS {SHARED_BIN_WORDS}  // privatised counts per block (histogram.cu)\n"
                f"#define HISTOGRAM_MIN_BLOCKS {HISTOGRAM_MIN_BLOCKS}  // histogram blocks per SM the registers must "
                "allow\n")
    if primitive.geometry == "radix":
        return (f"#define RADIX_BITS {RADIX_BITS}  // bits of the key sorted by one pass\n"
                f"#define PAYLOAD_BYTES {payload}  // bytes of the value moved with each item (0: none)\n"
                f"#define PORTION_TILES {SORT_PORTION_TILES}  // tiles of one pass's launch, at most\n"
                f"#define SORT_MIN_BLOCKS {SORT_MIN_BLOCKS}  // sort blocks per SM the registers must allow\n")
    return ""


def _payload(payload: int) -> str:
    """``payload_t``: the value a sort moves with each item, by its size alone (it is never looked at)."""
    if payload in (1, 2, 4, 8):
        scalar = {1: "unsigned char", 2: "unsigned short", 4: "unsigned int", 8: "unsigned long long"}[payload]
        return f"typedef {scalar} payload_t;  // the values moved with the items: {payload} bytes each"
    if payload == 0:
        return "typedef unsigned char payload_t;  // no values are moved with the items"
    return (f"struct alignas({min(16, payload & -payload)}) payload_t {{  // the values moved with the items: "
            f"{payload} bytes each\n    unsigned char bytes[{payload}];\n}};")


def _types(primitive, inputs, result, uniforms, arrays, element_types, all_uniforms, all_arrays, keys,
           payload=0) -> str:
    lines = ["// ---- Element types ------------------------------------------------------------"]
    definitions = cxx_definitions([*element_types, *(t for _, t in all_uniforms), *(a.element for _, a in all_arrays)])
    if definitions:
        lines.append(definitions)
    typedefs = _typedefs(primitive, inputs, result, keys)
    for name, element in typedefs.items():
        if name == "out_t" and "value_t" in typedefs:
            lines.append("typedef value_t out_t;")
        else:
            lines.append(f"typedef {element.cxx} {name};  // {element.name}")
    if primitive.geometry == "radix":
        lines.append(_payload(payload))
    lines.append("")
    if all_arrays:
        lines.append(BOUNDS_CHECK)
    lines.append(_uniforms("Uniforms", uniforms, arrays))
    return "\n".join(lines) + "\n"


def _uniforms(struct: str, uniforms, arrays, first_array: int = 0) -> str:
    """``struct`` of an operator's uniforms: its free scalars, then its captured arrays and where reads fail."""
    lines = []
    if arrays:
        lines.append("// Captured arrays: device arrays the function reads by name, passed at launch like uniforms.")
        lines += [_captured(first_array + k, n, a) for k, (n, a) in enumerate(arrays)]
    lines.append("// Uniforms: the function's free scalar variables" + (" and arrays" if arrays else "") +
                 ", passed at launch.")
    fields = [_uniform_member(i, name, element) for i, (name, element) in enumerate(uniforms)]
    fields += [f"    Captured{first_array + k} {_array_field(first_array + k, n)};  // {cxx.comment(n)}"
               for k, (n, _) in enumerate(arrays)]
    fields += ["    BoundsCheck bounds;  // where a read outside an array is recorded"] if arrays else []
    lines.append(f"struct {struct} {{" + ("\n" + "\n".join(fields) + "\n" if fields else "") + "};")
    return "\n".join(lines)


def _captured(number: int, name: str, array: ArrayType) -> str:
    """``struct CapturedK``: what the operator reads a captured array through (see compiler/frontends/numba_cuda/reads.py)."""
    fields = [f"    const {array.element.cxx}* data;"]
    fields += [f"    long long shape{k};" for k in range(array.ndim)]
    fields += [f"    long long stride{k};  // in bytes, as NumPy's" for k in range(array.ndim)]
    return (f"struct Captured{number} {{  // {cxx.comment(name)}: {array.name}\n" + "\n".join(fields) + "\n};")


BOUNDS_CHECK = (
    "// The first read outside a captured array claims `claimed` (an atomic compare-and-swap) and\n"
    "// writes its Python line, column, array and index to `record`, which the host reads after\n"
    f"// the launch: {', '.join(RECORD_FIELDS[:5])}, then the index, 64 bits each.\n"
    "struct BoundsCheck {\n"
    "    unsigned int* claimed;  // device memory, 0 until a read fails\n"
    "    long long* record;      // host memory the device writes through\n"
    "};"
)


def _typedefs(primitive, inputs, result, keys=None) -> dict[str, ElementType]:
    """The element types that :func:`_types` names ``in0_t``, ``out_t``, ``value_t`` (and ``key_t``: a keyed
    primitive's keys, or a histogram's or sort's operator result)."""
    if primitive.elementwise:
        return {**{f"in{i}_t": t for i, t in enumerate(inputs)}, "out_t": result}
    typedefs = {**({"key_t": keys} if primitive.keyed else {}), "value_t": inputs[0], "out_t": inputs[0]}
    if primitive.result == "declared":
        typedefs[primitive.operator.returns] = result
    return typedefs


def _input_types(primitive, inputs, keys) -> list[ElementType]:
    """The item type of each of the kernel's inputs: one per parameter for an element-wise primitive, the keys'
    and the operator's for a keyed one, else the operator's."""
    if primitive.elementwise:
        return list(inputs)
    return [keys, inputs[0]] if primitive.keyed else [inputs[0]]


def _same_key(keys: ElementType) -> str:
    """``same_key(a, b)``: whether two keys are equal as Python's ``==`` says of NumPy scalars (a NaN equals
    nothing, -0.0 equals 0.0). float16 and complex are storage structs here, compared by their parts."""
    if keys.dtype.kind == "c":
        test = "a.re == b.re && a.im == b.im"
    elif keys.dtype.kind == "f" and keys.itemsize == 2:  # IEEE half: compared by its bits
        test = "(a.bits & 0x7fffu) <= 0x7c00u && (a.bits == b.bits || ((a.bits | b.bits) & 0x7fffu) == 0)"
    else:
        test = "a == b"
    return ("// Whether two keys are equal, as `==` says in Python: runs of equal keys are folded together.\n"
            f"__device__ __forceinline__ bool same_key(key_t a, key_t b) {{ return {test}; }}\n")


def _uniform_member(index: int, name: str, element: ElementType) -> str:
    """The ``struct Uniforms`` line of uniform ``name``; a renamed one (``u<index>``) says its name in a comment."""
    member = _uniform_field(index, name)
    renamed = "" if member == f"u_{name}" else f"  // {cxx.comment(name)}"
    return f"    {element.cxx} {member};{renamed}"


def _uniform_field(index: int, name: str) -> str:
    """The C++ member of uniform ``name``: ``u_<name>`` when that is a plain identifier, else ``u<index>``."""
    return cxx.identifier(f"u_{name}", f"u{index}")


def _array_field(number: int, name: str) -> str:
    """The C++ member of captured array ``name``: ``a_<name>`` when that is a plain identifier, else ``c<number>``
    (``a<number>`` names the operator's inputs)."""
    return cxx.identifier(f"a_{name}", f"c{number}")


def _accessors(primitive, items, kinds, first_array: int) -> str:
    """How each input is read (``items``: each input's item type), and how the output is written."""
    parts = ["// ---- Reading inputs, writing the output --------------------------------------"]
    value_names = ([f"in{i}_t" for i in range(len(items))] if primitive.elementwise
                   else ["key_t", "value_t"] if primitive.keyed else ["value_t"])
    for i, (element, kind, value) in enumerate(zip(items, kinds, value_names)):
        part, first_array = _input(str(i), element, kind, value, first_array)
        parts.append(part)
    parts.append(_output("out_t"))
    if primitive.keyed:
        parts.append(_output("key_t", "KeyOutput"))
    return "\n".join(parts)


def _input(path: str, element, kind, value: str, first_array: int) -> tuple[str, int]:
    """The accessors of input ``path`` of ``kind``, and the number of the next operator's first captured array."""
    if kind == "iota":
        return _iota_input(path, value), first_array
    if kind == "array":
        return _array_input(path, element, value), first_array
    return _mapped_input(path, kind, value, first_array)


def _mapped_input(path: str, spec, value: str, first_array: int) -> tuple[str, int]:
    """A mapped input: its inputs' accessors, its operator ``gpulab_op_<path>`` and its uniforms, then how it
    is read: item i is the operator of its inputs' items i, one at a time or a vector at a time."""
    parts, next_array = [], first_array + len(spec.arrays)
    subs = [(f"{path}_{k}", f"in{path}_{k}_t") for k in range(len(spec.kinds))]
    for (sub, sub_value), arg, kind in zip(subs, spec.args, spec.kinds):
        parts.append(f"typedef {arg.cxx} {sub_value};  // {arg.name}")
        part, next_array = _input(sub, arg, kind, sub_value, next_array)
        parts.append(part)
    name, operator = cxx.comment(spec.kernel.name), f"gpulab_op_{path}"
    parts.append(_uniforms(f"Uniforms{path}", spec.uniforms, spec.arrays, first_array))
    pointers, arguments = _uniform_pointers(spec.uniforms, spec.arrays, "in.u", first_array)
    parameters = [f"{value}* result", *(f"const {v}* a{k}" for k, (_, v) in enumerate(subs)), *pointers]
    members = "".join(f"    Input{sub} in{k};\n" for k, (sub, _) in enumerate(subs))
    loads = "".join(f"    const {v} a{k} = load(in.in{k}, i);\n" for k, (_, v) in enumerate(subs))
    vectors = "".join(f"    const Vector<{v}, VEC> v{k} = load_vector(in.in{k}, i);\n" for k, (_, v) in enumerate(subs))
    items = ", ".join(f"&v{k}.item[j]" for k in range(len(subs)))
    ready = " && ".join(f"can_vectorize(in.in{k})" for k in range(len(subs)))
    parts.append(
        f"// Input {path.replace('_', '.')}: mapped: item i is `{name}` of its inputs' items i, computed when read,\n"
        f"// never stored. `{name}` is compiled from Python by numba, as the primitive's operator is.\n"
        f"extern \"C\" __device__ long long {operator}({', '.join(parameters)});\n"
        f"struct Input{path} {{\n{members}    Uniforms{path} u;\n}};\n"
        f"__device__ __forceinline__ {value} load(const Input{path}& in, index_t i) {{\n{loads}"
        f"    {value} result;\n    {operator}({', '.join(['&result', *(f'&a{k}' for k in range(len(subs))), *arguments])});\n"
        "    return result;\n}\n"
        f"__device__ __forceinline__ bool can_vectorize(const Input{path}& in) {{ return {ready}; }}\n"
        f"__device__ __forceinline__ Vector<{value}, VEC> load_vector(const Input{path}& in, index_t i) {{\n{vectors}"
        f"    Vector<{value}, VEC> v;\n    #pragma unroll\n"
        f"    for (int j = 0; j < VEC; ++j) {operator}({', '.join(['&v.item[j]', items, *arguments])});\n"
        "    return v;\n}\n")
    return "\n".join(parts), next_array


def _array_input(i, element, value) -> str:
    return (
        f"// Input {i}: an array of {element.name} (a 1-D or 2-D affine view).\n"
        f"struct Input{i} {{\n    const {value}* data;\n    Layout layout;\n}};\n"
        f"__device__ __forceinline__ {value} load(const Input{i}& in, index_t i) {{\n"
        "    return in.data[offset_of(in.layout, i)];\n}\n"
        f"__device__ __forceinline__ bool can_vectorize(const Input{i}& in) {{\n"
        "    return is_contiguous(in.layout) &&\n"
        f"           reinterpret_cast<unsigned long long>(in.data) % (sizeof({value}) * VEC) == 0;\n}}\n"
        f"__device__ __forceinline__ Vector<{value}, VEC> load_vector(const Input{i}& in, index_t i) {{\n"
        f"    return *reinterpret_cast<const Vector<{value}, VEC>*>(in.data + i);\n}}\n"
    )


def _iota_input(i, value) -> str:
    return (
        f"// Input {i}: iota: item i is start + i, computed, never stored.\n"
        f"struct Input{i} {{\n    long long start;\n}};\n"
        f"__device__ __forceinline__ {value} load(const Input{i}& in, index_t i) {{ return ({value})(in.start + i); }}\n"
        f"__device__ __forceinline__ bool can_vectorize(const Input{i}&) {{ return true; }}\n"
        f"__device__ __forceinline__ Vector<{value}, VEC> load_vector(const Input{i}& in, index_t i) {{\n"
        f"    Vector<{value}, VEC> v;\n"
        "    #pragma unroll\n"
        f"    for (int j = 0; j < VEC; ++j) v.item[j] = ({value})(in.start + i + j);\n"
        "    return v;\n}\n"
    )


def _output(value, struct: str = "Output") -> str:
    what = "The output" if struct == "Output" else "The output of keys"
    return (
        f"// {what}: an array (a 1-D or 2-D affine view).\n"
        f"struct {struct} {{\n    {value}* data;\n    Layout layout;\n}};\n"
        f"__device__ __forceinline__ void store(const {struct}& out, index_t i, {value} v) {{\n"
        "    out.data[offset_of(out.layout, i)] = v;\n}\n"
        f"__device__ __forceinline__ bool can_vectorize(const {struct}& out) {{\n"
        "    return is_contiguous(out.layout) &&\n"
        f"           reinterpret_cast<unsigned long long>(out.data) % (sizeof({value}) * VEC) == 0;\n}}\n"
        f"__device__ __forceinline__ void store_vector(const {struct}& out, index_t i, "
        f"const Vector<{value}, VEC>& v) {{\n"
        f"    *reinterpret_cast<Vector<{value}, VEC>*>(out.data + i) = v;\n}}\n"
    )


def _operator(primitive, name, inputs, result, uniforms, arrays) -> str:
    call = primitive.operator
    if primitive.elementwise:
        params = [(f"in{i}_t", f"a{i}") for i in range(len(inputs))]
    else:
        params = [("value_t", param) for param in call.params]
    result_type, wrapper = call.returns, call.wrapper
    pointer_params = [f"{result_type}* result"] + [f"const {t}* {n}" for t, n in params]
    arguments = ["&result"] + [f"&{n}" for _, n in params]
    more_params, more_arguments = _uniform_pointers(uniforms, arrays, "u")
    pointer_params += more_params
    arguments += more_arguments
    value_params = ", ".join(f"{t} {n}" for t, n in params)
    return (
        "// ---- The operator ---------------------------------------------------------------\n"
        f"// `{cxx.comment(name)}`, compiled from Python by numba into op.ltoir (or op.ptx). It takes\n"
        "// every value by pointer; the status word of numba's C ABI is not used.\n"
        f"extern \"C\" __device__ long long gpulab_op({', '.join(pointer_params)});\n\n"
        f"__device__ __forceinline__ {result_type} {wrapper}({value_params}, const Uniforms& u) {{\n"
        f"    {result_type} result;\n"
        f"    gpulab_op({', '.join(arguments)});\n"
        "    return result;\n}\n"
    )


def _uniform_pointers(uniforms, arrays, struct: str, first_array: int = 0) -> tuple[list[str], list[str]]:
    """The operator's parameters for its uniforms and captured arrays, and the arguments ``&struct.member``."""
    members = [(t.cxx, _uniform_field(i, n)) for i, (n, t) in enumerate(uniforms)]
    members += [(f"Captured{first_array + k}", _array_field(first_array + k, n)) for k, (n, _) in enumerate(arrays)]
    members += [("BoundsCheck", "bounds")] if arrays else []
    return ([f"const {t}* {member}" for t, member in members], [f"&{struct}.{member}" for _, member in members])


def _input_fields(count: int) -> dict:
    """What a primitive's own template may name of its ``count`` inputs: ``$PARAMS``, ``$LOAD_VECTORS``..."""
    indices = range(count)
    return {
        "PARAMS": ", ".join(f"Input{i} in{i}" for i in indices),
        "CAN_VECTORIZE": " && ".join([f"can_vectorize(in{i})" for i in indices] + ["can_vectorize(out)"]),
        "LOAD_VECTORS": "\n".join(
            f"                const Vector<in{i}_t, VEC> v{i} = load_vector(in{i}, i);" for i in indices
        ),
        "VECTOR_ITEMS": ", ".join(f"v{i}.item[j]" for i in indices),
        "SCALAR_ITEMS": ", ".join(f"load(in{i}, i)" for i in indices),
    }

"""segmented_reduce, reduce_by_key and unique_by_key with no GPU: what they mean on the host, and their builds.

Every build of a new primitive, for every element type it takes and every
target family, links with LTO into SASS with no CALL (no called operator, no
emulated shuffle, no library division); the host reference says what each
call means, in the words of functools.reduce and itertools.groupby.
"""

import functools
import itertools

import numpy as np
import pytest
from operators import last, last_marked

import gpulab
from gpulab.errors import ConversionError, DeviceError, KernelTypeError, LengthMismatchError, OffsetsError

PAIR = np.dtype([("value", np.float32), ("index", np.int32)], align=True)


def add(a, b):
    return a + b


def argmin(a, b):
    return a if a.value <= b.value else b


def square(x: gpulab.f32) -> gpulab.f32:
    return x * x


def tens(x: gpulab.i64) -> gpulab.i32:
    return gpulab.i32(x // 10)


def _pairs(n, seed=0):
    rng = np.random.default_rng(seed)
    items = np.zeros(n, PAIR)
    items["value"], items["index"] = rng.standard_normal(n), rng.integers(0, 100, n)
    return items


# --- what segmented_reduce means ----------------------------------------------------------------------------------
def test_each_segment_is_a_left_fold_from_initial():
    xs = np.arange(10, dtype=np.int64)
    got = gpulab.segmented_reduce(add, xs, [0, 3, 3, 10], 100, device="host")
    assert got.tolist() == [100 + 0 + 1 + 2, 100, 100 + sum(range(3, 10))]
    assert got.dtype == np.int64


def test_items_are_folded_in_order():
    xs = np.arange(300, dtype=np.int64) * 3
    offsets = np.array([0, 1, 17, 17, 200, 300])
    assert gpulab.segmented_reduce(last, xs, offsets, -1, device="host").tolist() == [0, 48, -1, 597, 897]
    items = _pairs(300)
    got = gpulab.segmented_reduce(last_marked, items, offsets, (0.5, -7), device="host")
    want = [functools.reduce(lambda a, b: b if b["index"] % 7 == 0 else a, items[offsets[k]:offsets[k + 1]],
                             np.array((0.5, -7), PAIR)[()]) for k in range(5)]
    assert got.tolist() == [tuple(w.tolist()) for w in want]


def test_offsets_need_not_start_at_zero_nor_end_at_the_last_item():
    xs = np.arange(20, dtype=np.int32)
    got = gpulab.segmented_reduce(add, xs, np.array([5, 8, 12], np.int32), 0, device="host")
    assert got.tolist() == [5 + 6 + 7, 8 + 9 + 10 + 11]


@pytest.mark.parametrize("offsets, meaning", [
    ([0], "no segment"), ([0, 0, 0], "only empty segments"), ([3, 3], "an empty segment")])
def test_empty_segments_give_initial(offsets, meaning):
    got = gpulab.segmented_reduce(add, np.ones(5, np.float32), offsets, np.float32(2.5), device="host")
    assert got.tolist() == [2.5] * (len(offsets) - 1), meaning


def test_an_empty_input_and_one_item():
    assert gpulab.segmented_reduce(add, np.zeros(0, np.int32), [0, 0], 7, device="host").tolist() == [7]
    assert gpulab.segmented_reduce(add, np.array([4], np.int32), [0, 1], 7, device="host").tolist() == [11]


def test_records_fold_as_records():
    items = np.zeros(6, PAIR)
    items["value"], items["index"] = [3, 1, 2, 0, 5, -1], np.arange(6)
    got = gpulab.segmented_reduce(argmin, items, [0, 3, 3, 6], (np.inf, -1), device="host")
    assert got["index"].tolist() == [1, -1, 5]


def test_a_mapped_input_is_folded_per_segment():
    xs = np.arange(6, dtype=np.float32)
    got = gpulab.segmented_reduce(add, gpulab.mapped(square, xs), [0, 2, 6], np.float32(0), device="host")
    assert got.tolist() == [1.0, 4 + 9 + 16 + 25]


@pytest.mark.parametrize("offsets, message", [
    ([0, 5, 3, 10], r"offsets must not decrease, but offsets\[1\] = 5 > offsets\[2\] = 3"),
    ([-1, 4], r"offsets\[0\] = -1 is negative"),
    ([0, 4, 11], r"offsets\[2\] = 11 is past the input's end \(10 items"),
    ([[0, 1], [2, 3]], "offsets must be a 1-D array"),
    (np.zeros(0, np.int64), "offsets must be a 1-D array of S \\+ 1 positions"),
])
def test_bad_offsets_are_refused_naming_the_first_bad_one(offsets, message):
    with pytest.raises(OffsetsError, match=message):
        gpulab.segmented_reduce(add, np.arange(10, dtype=np.int32), np.asarray(offsets), 0, device="host")


def test_offsets_are_int32_or_int64_arrays():
    with pytest.raises(ConversionError, match=r"offsets hold uint8, but they must be int32 or int64.*astype"):
        gpulab.segmented_reduce(add, np.arange(10, dtype=np.int32), np.array([0, 5], np.uint8), 0, device="host")
    with pytest.raises(ConversionError, match="offsets"):
        gpulab.segmented_reduce(add, np.arange(10, dtype=np.int32), [0, 2.5], 0, device="host")


def test_a_segmented_reduce_needs_an_initial_value():
    with pytest.raises(KernelTypeError, match="needs initial="):
        gpulab.segmented_reduce(add, np.arange(4, dtype=np.int32), [0, 4], None, device="host")


def test_iota_is_refused_with_what_to_pass():
    with pytest.raises(ConversionError, match=r"gpulab.iota is an input of map, .*reduce_by_key.* only"):
        gpulab.segmented_reduce(add, gpulab.iota(4), [0, 4], 0, device="host")


# --- what reduce_by_key and unique_by_key mean ---------------------------------------------------------------------
def _groupby(keys, values, fn):
    runs = [(key, [v for _, v in group]) for key, group in itertools.groupby(zip(keys, values), lambda p: p[0])]
    return [key for key, _ in runs], [functools.reduce(fn, run) for _, run in runs]


def test_runs_of_equal_keys_fold_as_itertools_groupby():
    keys = np.array([3, 3, 1, 1, 1, 3, 2, 2], np.int16)
    values = np.arange(8, dtype=np.int64) * 10
    unique, folds = gpulab.reduce_by_key(add, keys, values, device="host")
    want_keys, want_folds = _groupby(keys.tolist(), values.tolist(), lambda a, b: a + b)
    assert unique.tolist() == want_keys and folds.tolist() == want_folds
    assert unique.dtype == np.int16 and folds.dtype == np.int64


def test_runs_fold_in_order():
    keys = np.repeat(np.arange(5), [1, 40, 7, 100, 2]).astype(np.int32)
    _, folds = gpulab.reduce_by_key(last, keys, np.arange(keys.size, dtype=np.int32), device="host")
    assert folds.tolist() == [0, 40, 47, 147, 149]
    items = _pairs(keys.size, seed=3)
    _, marked = gpulab.reduce_by_key(last_marked, keys, items, device="host")
    starts = [0, 1, 41, 48, 148, 150]
    want = [functools.reduce(lambda a, b: b if b["index"] % 7 == 0 else a, items[starts[k]:starts[k + 1]])
            for k in range(5)]
    assert marked.tolist() == [tuple(w.tolist()) for w in want]


def test_keys_compare_as_python_compares_them():
    keys = np.array([0.0, -0.0, np.nan, np.nan, 1.0, 1.0], np.float32)  # -0.0 == 0.0; a NaN equals nothing
    unique, folds = gpulab.reduce_by_key(add, keys, np.ones(6, np.int32), device="host")
    assert folds.tolist() == [2, 1, 1, 2] and np.isnan(unique[1:3]).all()


def test_reduce_by_key_of_nothing_one_item_and_one_run():
    empty = gpulab.reduce_by_key(add, np.zeros(0, np.int32), np.zeros(0, np.float64), device="host")
    assert [part.size for part in empty] == [0, 0]
    assert [part.tolist() for part in gpulab.reduce_by_key(add, [5], np.array([2.0]), device="host")] == [[5], [2.0]]
    unique, folds = gpulab.reduce_by_key(add, np.full(9, 4, np.int64), np.ones(9, np.int32), device="host")
    assert unique.tolist() == [4] and folds.tolist() == [9]


def test_record_values_and_mapped_keys():
    values = np.zeros(6, PAIR)
    values["value"], values["index"] = [3, 1, 2, 0, 5, -1], np.arange(6)
    keys = gpulab.mapped(tens, np.array([1, 5, 9, 12, 15, 31], np.int64))  # 0 0 0 1 1 3
    unique, folds = gpulab.reduce_by_key(argmin, keys, values, device="host")
    assert unique.tolist() == [0, 1, 3] and folds["index"].tolist() == [1, 3, 5]


def test_unique_by_key_keeps_each_runs_first_value():
    keys = np.array([1, 1, 2, 2, 2, 1], np.int32)
    unique, first = gpulab.unique_by_key(keys, np.arange(6, dtype=np.float32) + 0.5, device="host")
    assert unique.tolist() == [1, 2, 1] and first.tolist() == [0.5, 2.5, 5.5]


def test_keys_and_values_must_pair_up():
    with pytest.raises(LengthMismatchError, match="as many keys as values; got 3 keys and 2 values"):
        gpulab.reduce_by_key(add, np.arange(3), np.arange(2), device="host")


def test_record_keys_are_refused_with_what_to_do():
    with pytest.raises(KernelTypeError, match=r"compares keys with ==.*gpulab.mapped"):
        gpulab.reduce_by_key(add, np.zeros(3, PAIR), np.arange(3), device="host")
    with pytest.raises(KernelTypeError, match=r"compares keys with =="):
        gpulab.compile("reduce_by_key", add, types="f32,f32", keys=PAIR, target="sm_90")


def test_reusable_objects_need_a_gpu():
    with pytest.raises(DeviceError, match="make_\\* objects run on a GPU"):
        gpulab.make_segmented_reduce(add, np.dtype(np.float32), device="host")
    with pytest.raises(DeviceError, match="make_\\* objects run on a GPU"):
        gpulab.make_reduce_by_key(add, np.dtype(np.int32), np.dtype(np.float32), device="host")


# --- builds --------------------------------------------------------------------------------------------------------
def _types(kind):
    return (PAIR, PAIR) if kind == "record" else (kind, kind)


@pytest.mark.parametrize("target", ["sm_80", "sm_90", "sm_100"])
@pytest.mark.parametrize("kind", ["int32", "int64", "float32", "float64", "record"])
@pytest.mark.parametrize("primitive", ["segmented_reduce", "reduce_by_key"])
def test_every_build_inlines_its_operator_with_no_call(primitive, kind, target):
    build = gpulab.compile(primitive, argmin if kind == "record" else add, types=_types(kind), target=target)
    calls = [line.strip() for line in build.sass.splitlines() if "CALL" in line]
    assert build.sass_calls == 0, f"with LTO the SASS must have no CALL; it has {calls[:3]}"
    assert build.operator_calls == 0 and set(build.kernels) <= set(build.resources)
    assert max(r.spill_stores for r in build.resources.values()) == 0


def _every_target():
    from gpulab.compiler.toolchain import toolchain_targets

    return [target.arch for target in toolchain_targets()]


@pytest.mark.parametrize("target", _every_target())
@pytest.mark.parametrize("primitive", ["segmented_reduce", "reduce_by_key"])
def test_every_target_builds_ahead_of_time_and_links_the_python_lines(primitive, target):
    build = gpulab.compile(primitive, add, types="f32,f32", target=target)
    assert build.sass_calls == 0 and build.target.arch == target
    body = add.__code__.co_firstlineno + 1
    assert build.line_map.python_to_sass(body) and build.line_map.python_to_cuda(body)


@pytest.mark.parametrize("keys", ["int8", "bool", "float16", "float64", "complex64", "uint64"])
def test_keys_of_every_number_type_compare_in_the_kernel(keys):
    build = gpulab.compile("reduce_by_key", add, types="f32,f32", keys=keys, target="sm_80")
    assert build.sass_calls == 0
    assert "same_key(key_t a, key_t b)" in build.source


@pytest.mark.parametrize("primitive", ["segmented_reduce", "reduce_by_key"])
def test_a_ptx_link_calls_the_operator_and_64_bit_indices_build(primitive):
    assert gpulab.compile(primitive, add, types="f32,f32", target="sm_90", lto=False).operator_calls > 0
    wide = gpulab.compile(primitive, add, types="f64,f64", target="sm_80", index_bits=64)
    assert "typedef long long index_t;" in wide.source and wide.sass_calls == 0


def test_mapped_inputs_are_computed_where_they_are_read():
    build = gpulab.compile("segmented_reduce", add, types="f32,f32", target="sm_90",
                           mapped=(gpulab.mapped(square, np.dtype(np.float32)),))
    assert "gpulab_op_0(" in build.source and build.sass_calls == 0
    keyed = gpulab.compile("reduce_by_key", add, types="f32,f32", keys="int32", target="sm_90",
                           mapped=(gpulab.mapped(tens, np.dtype(np.int64)), None))
    assert "struct Input0 {\n    Input0_0 in0;" in keyed.source and keyed.sass_calls == 0


def test_the_template_says_how_segments_of_any_length_are_cut():
    source = gpulab.compile("segmented_reduce", add, types="f32,f32", target="sm_90").source
    for strategy in ("a thread per segment", "a block per", "several blocks per segment"):
        assert strategy in source


# --- the lab: %%gpukernel, bench -----------------------------------------------------------------------------------
@pytest.mark.parametrize("primitive, rows", [("segmented_reduce", ["result"]), ("reduce_by_key", ["run keys", "result"])])
def test_gpukernel_shows_runs_and_checks_them(primitive, rows):
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    from gpulab.display.view import MIME_TYPE

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "gpulab")
    shell.run_cell("import gpulab", store_history=False)
    with capture_output() as captured:
        shell.run_cell(f"%%gpukernel {primitive} --target sm_90 --device host --run 5e3\n"
                       "def add(a: gpulab.i64, b: gpulab.i64) -> gpulab.i64:\n    return a + b\n", store_history=False)
    (view,) = [output.data[MIME_TYPE] for output in captured.outputs if MIME_TYPE in output.data]
    assert view["primitive"] == primitive and f"gpulab_{primitive}" in view["resources"]
    text = "".join(output.data["text/plain"] for output in captured.outputs)
    assert f"{primitive}(add) of 5,000 random int64 items" in text, captured.stderr
    assert all(f"\n{row} " in text for row in rows) and "not checked: no device ran it" in text  # both on the host


@pytest.mark.parametrize("primitive, option, shown", [
    ("segmented_reduce", "--compare", "LTO vs PTX link"), ("reduce_by_key", "--diff-target sm_80", "sm_80")])
def test_gpukernel_compares_and_diffs_the_new_primitives(primitive, option, shown):
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "gpulab")
    shell.run_cell("import gpulab", store_history=False)
    with capture_output() as captured:
        result = shell.run_cell(f"%%gpukernel {primitive} --target sm_90 --device host {option}\n"
                                "def add(a: gpulab.f32, b: gpulab.f32) -> gpulab.f32:\n    return a + b\n",
                                store_history=False)
    assert not result.error_in_exec, captured.stderr
    texts = "".join(str(output.data.get("text/plain", "")) + str(output.data.get("text/html", ""))
                    for output in captured.outputs)
    assert shown in texts


def test_bench_makes_offsets_and_keys_and_counts_every_byte():
    segments = gpulab.bench(add, "segmented_reduce", [1000], devices=["host"], dtype="f32", progress=False)
    by_key = gpulab.bench(add, "reduce_by_key", [1000], devices=["host"], dtype="f32", progress=False)
    (segment_row,), (run_row,) = segments.rows, by_key.rows
    # 1000 float32 items read, and n // 1000 + 2 = 3 segments (lengths of 0 to 2000 cut at the input's end):
    # 4 int64 offsets read, 3 float32 results written
    assert segment_row["bytes"] == 4000 + 8 * 4 + 4 * 3
    assert run_row["bytes"] > 1000 * (4 + 4)  # keys and values read, the runs' keys and folds written


def test_iota_values_give_each_runs_first_position():
    keys = np.array([4, 4, 4, 1, 1, 9, 9, 9, 9], np.int32)
    unique, starts = gpulab.unique_by_key(keys, gpulab.iota(keys.size), device="host")
    assert unique.tolist() == [4, 1, 9] and starts.tolist() == [0, 3, 5]
    build = gpulab.compile("reduce_by_key", add, types="i64,i64", iota=(False, True), target="sm_80")
    assert "Input 1: iota" in build.source and build.sass_calls == 0


@pytest.mark.parametrize("index_bits", [32, 64])
@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.float16, np.float32, np.float64, np.complex128, PAIR,
                                   np.dtype([("a", np.int8), ("b", np.float64), ("c", np.int16)])])
def test_the_plans_size_tile_status_as_the_templates_lay_it_out(dtype, index_bits):
    """A tile's status value in the look-back's words: the plan's size of it (where the status arrays split)
    is the C++ size of the template's Piece and Runs structs, laid out from the generated text."""
    from gpulab.compiler.codegen import generate
    from gpulab.compiler.parameters import kernel_parameters
    from gpulab.compiler.target import parse_target
    from gpulab.primitives.segmented import piece_bytes, runs_bytes
    from gpulab.registry import PRIMITIVES
    from gpulab.types import element_type

    value, key = element_type(dtype), element_type("int32")
    source = generate(PRIMITIVES["reduce_by_key"], "add", parse_target("sm_90"), [value, value], value, [],
                      index_bits=index_bits, keys=key)
    probe = source.text + '\nextern "C" __global__ void probe(Piece<value_t> piece, Runs<value_t> runs) {}\n'
    elements = {value.cxx: value, key.cxx: key, "value_t": value, "out_t": value, "key_t": key}
    piece, runs = kernel_parameters(probe, ["probe"], elements, index_bits)["probe"]
    assert (piece.dtype.itemsize, runs.dtype.itemsize) == (piece_bytes(value), runs_bytes(value, index_bits))


@pytest.mark.parametrize("primitive, examples", [
    ("segmented_reduce", [np.dtype(np.float32)]),
    ("reduce_by_key", [np.dtype(np.int16), np.dtype(np.float64)]),
    ("reduce_by_key", [gpulab.mapped(tens, np.dtype(np.int64)), gpulab.iota(4)]),
])
def test_a_plan_and_its_template_agree_on_every_parameter(primitive, examples):
    """Made and built, not run: the parameters a plan writes, in its order, are its kernel's, and the structs it
    writes (inputs, outputs, tile status) have the fields it writes them with."""
    from gpulab.device import Device
    from gpulab.primitives import dispatch, params
    from gpulab.registry import PRIMITIVES
    from gpulab.runtime.module import ArgumentPack

    gpu = Device("cuda:0", "a compute capability 9.0 GPU (a record: nothing runs here)", (9, 0), 80 * 2**30, 132)
    plan = dispatch.make_plan(PRIMITIVES[primitive], last if primitive == "reduce_by_key" else add, examples, gpu)
    build = plan.build()
    for kernel, order in plan.argument_order(build).items():
        ArgumentPack(build.parameters[kernel], order)  # raises when the plan's order is not the kernel's
        params.check_fields(build.parameters[kernel], params.written_fields(build.parameters[kernel], plan.kinds))
    assert repr(plan).startswith(f"<gpulab {type(plan).__name__}: {primitive}(")


def test_eight_byte_keys_and_values_fit_a_blocks_static_shared_memory():
    """The largest tiles of reduce_by_key: 8-byte keys beside 8-byte values (48,769 bytes of the 49,152 a block
    may declare, with the look-back's window)."""
    build = gpulab.compile("reduce_by_key", add, types="f64,f64", keys="int64", target="sm_90")
    assert build.sass_calls == 0 and build.resources["gpulab_reduce_by_key"].shared_bytes <= 48 * 1024

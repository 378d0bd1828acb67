"""Build options: one typed, frozen object, checked on every entry point and mapped to each tool's flags in one
place (that the notebook's paths carry it whole: test_magics.py)."""

import dataclasses

import numpy as np
import pytest

import gpulab
from gpulab.compiler import flags
from gpulab.compiler.pipeline import make_spec
from gpulab.errors import ArgumentError
from gpulab.options import BuildOptions, build_options
from gpulab.primitives import call
from gpulab.registry import PRIMITIVES

X = np.arange(8, dtype=np.float32)
OFFSETS = np.array([0, 3, 8], dtype=np.int32)
KEYS = np.array([1, 1, 2, 2, 2, 3, 3, 3], dtype=np.int32)


def twice(x: gpulab.f32) -> gpulab.f32:
    return x * gpulab.f32(2)


def add(a: gpulab.f32, b: gpulab.f32) -> gpulab.f32:
    return a + b


def positive(x: gpulab.f32) -> bool:
    return x > 0


def positive_bin(x: gpulab.f32) -> gpulab.i32:
    return gpulab.i32(x > 0)


# Every entry point that builds, on the host and for a device: a bad option must be refused before anything runs.
ENTRY_POINTS = {
    "map host": lambda **o: gpulab.map(twice, X, device="host", **o),
    "map device": lambda **o: gpulab.map(twice, X, device="cuda:0", **o),
    "reduce host": lambda **o: gpulab.reduce(add, X, np.float32(0), device="host", **o),
    "reduce device": lambda **o: gpulab.reduce(add, X, np.float32(0), device="cuda:0", **o),
    "scan host": lambda **o: gpulab.scan(add, X, np.float32(0), device="host", **o),
    "scan device": lambda **o: gpulab.scan(add, X, np.float32(0), device="cuda:0", **o),
    "filter host": lambda **o: gpulab.filter(positive, X, device="host", **o),
    "filter device": lambda **o: gpulab.filter(positive, X, device="cuda:0", **o),
    "make_map": lambda **o: gpulab.make_map(twice, X, **o),
    "make_reduce": lambda **o: gpulab.make_reduce(add, X, **o),
    "make_scan": lambda **o: gpulab.make_scan(add, X, **o),
    "make_filter": lambda **o: gpulab.make_filter(positive, X, **o),
    "compile": lambda **o: gpulab.compile("reduce", add, target="sm_90", **o),
    "bench host": lambda **o: gpulab.bench(add, "reduce", [8], devices=["host"], progress=False, **o),
    "check": lambda **o: gpulab.check(add, "reduce", X, add, initial=np.float32(0), **o),
    "call": lambda **o: call("reduce", add, [X], initial=np.float32(0), device="host", **o),
    "segmented_reduce host": lambda **o: gpulab.segmented_reduce(add, X, OFFSETS, np.float32(0), device="host", **o),
    "make_segmented_reduce": lambda **o: gpulab.make_segmented_reduce(add, X, **o),
    "reduce_by_key host": lambda **o: gpulab.reduce_by_key(add, KEYS, X, device="host", **o),
    "make_reduce_by_key": lambda **o: gpulab.make_reduce_by_key(add, KEYS, X, **o),
    "histogram host": lambda **o: gpulab.histogram(X, 4, device="host", **o),
    "histogram device": lambda **o: gpulab.histogram(X, 4, device="cuda:0", **o),
    "make_histogram": lambda **o: gpulab.make_histogram(X, 4, range=(0, 8), **o),
    "call histogram": lambda **o: call("histogram", positive_bin, [X], device="host", bins=2, **o),
    "bench histogram": lambda **o: gpulab.bench(positive_bin, "histogram", [8], devices=["host"], progress=False,
                                                bins=2, **o),
}
BAD = [
    ({"boundcheck": False}, "'boundcheck' is not a build option (did you mean boundscheck?)"),
    ({"fast_math": True}, "'fast_math' is not a build option; the build options are lto, lineinfo, fma"),
    ({"fma": "maybe"}, "the build option fma is True or False, not 'maybe'"),
    ({"lto": 1}, "the build option lto is True or False, not 1"),
    ({"index_bits": 48}, "the build option index_bits is 32 or 64, not 48"),
    ({"frontend": "clang"}, "the build option frontend is one of 'numba-cuda'"),
    ({"options": "fast"}, "options= takes a gpulab.BuildOptions, not str"),
]


@pytest.mark.parametrize("entry", ENTRY_POINTS)
@pytest.mark.parametrize(("given", "message"), BAD, ids=lambda v: "-".join(v) if isinstance(v, dict) else None)
def test_a_bad_option_is_refused_on_every_entry_point(entry, given, message):
    with pytest.raises(ArgumentError) as caught:
        ENTRY_POINTS[entry](**given)
    assert message in str(caught.value)


@pytest.mark.parametrize("entry", [name for name in ENTRY_POINTS if "scan" not in name])
def test_another_primitives_own_option_is_refused(entry):
    with pytest.raises(ArgumentError, match="exclusive is not an option of [a-z_]+; it is an option of scan"):
        ENTRY_POINTS[entry](exclusive=True)


@pytest.mark.parametrize("entry", ["map host", "reduce host", "scan host", "filter host", "compile", "bench host",
                                   "check", "call", "segmented_reduce host", "reduce_by_key host", "histogram host",
                                   "call histogram", "bench histogram"])
def test_good_options_run(entry):
    ENTRY_POINTS[entry](fma=False, lto=False, boundscheck=False, options=BuildOptions(lineinfo=False))


def test_the_object_is_frozen_keyword_only_and_checks_every_change():
    options = BuildOptions(fma=False, iota=[True, np.bool_(False)])
    assert options.iota == (True, False) and options.index_bits == 32 and options.frontend is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.fma = True
    with pytest.raises(ArgumentError, match="fma is True or False"):
        dataclasses.replace(options, fma="yes")
    with pytest.raises(TypeError):
        BuildOptions(True)  # noqa: the options are named
    assert build_options(None, options, lto=False) == BuildOptions(fma=False, lto=False, iota=(True, False))
    assert BuildOptions(fma=False).changed() == {"fma": False}
    assert BuildOptions().host_options(PRIMITIVES["scan"]) == {"exclusive": False, "order": "device"}
    assert BuildOptions().host_options(PRIMITIVES["map"]) == {}  # a call's inputs say which are iotas


def test_every_option_is_in_the_key_and_the_frontend_is_named():
    base = make_spec("reduce", add, target="sm_90")
    assert base.options.frontend == "numba-cuda"  # the default, resolved: the key names what compiled it
    assert set(base.options.as_dict()) == {f.name for f in dataclasses.fields(BuildOptions)}
    for changed in ({"fma": False}, {"lto": False}, {"lineinfo": False}, {"index_bits": 64}):
        assert make_spec("reduce", add, target="sm_90", **changed).key != base.key, changed
    assert make_spec("reduce", add, target="sm_90", frontend="numba-cuda").key == base.key


def test_each_tool_spells_an_option_its_own_way_in_one_place():
    target = gpulab.Target(9, 0)
    off, on = BuildOptions(fma=False, lto=True), BuildOptions(fma=True, lto=False, lineinfo=False)
    assert "-fmad=false" in flags.nvrtc(off, target) and "-dlto" in flags.nvrtc(off, target)
    assert "-fmad=true" in flags.nvrtc(on, target) and not {"-dlto", "-lineinfo"} & set(flags.nvrtc(on, target))
    assert "-fma=0" in flags.lto_optimiser(off) and "-fma=1" in flags.lto_optimiser(on)
    assert flags.ptxas(off) == ["-Xptxas=--fmad=false"] and "-maxrregcount=64" in flags.ptxas(on, 64)
    assert flags.nvvm(off) == {"fma": False}


def test_a_plan_honours_64_bit_indexing():
    from gpulab.device import Device
    from gpulab.primitives.dispatch import make_plan

    h100 = Device("cuda:0", "an H100 as described, never touched here", (9, 0), 80 * 2**30, 132)
    plan = make_plan(PRIMITIVES["map"], twice, [X], h100, BuildOptions(index_bits=64))
    assert plan.index_bits(32) == 64 and plan.build(plan.index_bits(32)).options.index_bits == 64
    assert make_plan(PRIMITIVES["map"], twice, [X], h100).index_bits(32) == 32
    with pytest.raises(ArgumentError, match="leave iota= out"):
        make_plan(PRIMITIVES["map"], twice, [X], h100, BuildOptions(iota=(True,)))

"""Every variant that bench/sweep.py times builds with no CALL in its SASS (spills are allowed: the
landed filter spills a little under its register cap too), so GPU time is spent on
variants that can be measured (the sweep sets codegen's constants in-process, as here)."""

import sys
from pathlib import Path

import pytest

import gpulab

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from sweep_variants import VARIANTS, use  # noqa: E402


def add(a, b):
    return a + b


def positive(x):
    return x > 0


def twice(x):
    return x * 2 + 1


def bin_of(x):
    return int(x) >> 4


OPERATORS = {"reduce": add, "scan": add, "filter": positive, "map": twice, "segmented_reduce": add,
             "reduce_by_key": add, "sort": twice, "histogram": bin_of}
ONE_PARAMETER = ("filter", "map", "sort", "histogram")


def _cases():
    for name, (constants, primitives) in VARIANTS.items():
        if not constants:
            continue  # the landed constants: test_compile.py builds those for every target
        for primitive in primitives:
            # sm_80 is where a shuffle ptxas cannot prove whole becomes a CALL; sm_90 is what the sweep times
            for dtype, target in (("float32", "sm_80"), ("int32", "sm_90")):
                yield pytest.param(name, primitive, dtype, target, id=f"{name}-{primitive}-{dtype}-{target}")


@pytest.fixture
def variant_constants():
    yield use
    use({})


@pytest.mark.parametrize("name, primitive, dtype, target", list(_cases()))
def test_sweep_variant_builds_without_calls(variant_constants, name, primitive, dtype, target):
    variant_constants(VARIANTS[name][0])
    fn = OPERATORS[primitive]
    types = (dtype,) if primitive in ONE_PARAMETER else (dtype, dtype)
    build = gpulab.compile(primitive, fn, types=types, target=target)
    calls = [line.strip() for line in build.sass.splitlines() if "CALL" in line]
    assert build.sass_calls == 0, f"{name}: the SASS has {calls[:3]}"

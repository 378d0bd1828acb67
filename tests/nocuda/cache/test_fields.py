"""check_fields: the whole-container test and the walk that names the first bad item agree."""

import enum
from dataclasses import dataclass

import pytest

from gpulab.cache.fields import check_fields


class Level(enum.IntEnum):
    LOW = 1


@dataclass(frozen=True)
class Inner:
    count: int
    share: float


@dataclass(frozen=True)
class Outer:
    keys: dict[int, tuple[str, ...]]
    offsets: dict[int, int]
    inner: tuple[Inner, ...]
    limit: int | None = None


def test_a_large_honest_value_passes():
    keys = {line: tuple(f"py:{line}:{k}" for k in range(5)) for line in range(10_000)}
    check_fields(Outer(keys, dict.fromkeys(range(10_000), 3), (Inner(1, 2), Inner(3, 0.5))))


@pytest.mark.parametrize("outer, where", [
    (Outer({1: ("a",), 2: ("b", 7)}, {}, ()), "Outer.keys[2][1]: expected str, got int"),
    (Outer({1: ("a",), "2": ("b",)}, {}, ()), "Outer.keys key '2': expected int, got str"),
    (Outer({}, {1: 2, 3: True}, ()), "Outer.offsets[3]: expected int, got bool"),
    (Outer({}, {}, (Inner(1, 2.0), Inner(1, "x"))), "Outer.inner[1].share: expected float, got str"),
    (Outer({}, {}, (), limit=1.5), "Outer.limit: expected int | None, got float"),
    (Outer({1: ["a"]}, {}, ()), "Outer.keys[1]: expected tuple[str, ...], got list"),
])
def test_the_first_bad_item_is_named(outer, where):
    with pytest.raises(TypeError) as raised:
        check_fields(outer)
    assert str(raised.value) == where


def test_subclasses_pass_as_their_class_does():
    """The whole-container test knows exact types only; an int subclass (not bool) still passes, item by item."""
    check_fields(Outer({}, {1: Level.LOW}, (Inner(Level.LOW, Level.LOW),)))

"""The row divisor the host prepares gives a kernel's row_of (common.cu) the quotient for every index it can meet."""

from hypothesis import given
from hypothesis import strategies as st

from gpulab.runtime.arrays import INT32_MAX, Layout, coalesce, row_divisor


def row_of_32(i: int, inner_size: int, size: int) -> int:
    """What a kernel with 32-bit indices computes: the high word of i * (multiplier's high word), shifted."""
    multiplier, shift = row_divisor(inner_size, size)
    assert multiplier % 2**32 == 0 and multiplier >> 32 < 2**32
    return (i * (multiplier >> 32)) >> 32 >> shift


def row_of_64(i: int, inner_size: int, size: int) -> int:
    """What a kernel with 64-bit indices computes: the high 64 bits of i * multiplier, shifted."""
    multiplier, shift = row_divisor(inner_size, size)
    assert multiplier < 2**64
    return (i * multiplier) >> 64 >> shift


small_divisors = st.integers(2, INT32_MAX)
edges = st.sampled_from([0, 1, INT32_MAX - 1, INT32_MAX])


@given(small_divisors, st.integers(0, INT32_MAX) | edges)
def test_up_to_two_to_the_31_items_both_index_widths_divide_exactly(inner_size, i):
    assert row_of_32(i, inner_size, INT32_MAX) == i // inner_size
    assert row_of_64(i, inner_size, INT32_MAX) == i // inner_size


@given(st.integers(2, 2**62) | small_divisors, st.integers(0, 2**63 - 1) | st.sampled_from([2**63 - 1, 2**31]))
def test_past_two_to_the_31_items_64_bit_indices_divide_exactly(inner_size, i):
    assert row_of_64(i, inner_size, 2**40) == i // inner_size


def test_every_divisor_near_a_power_of_two_divides_the_indices_around_its_multiples():
    for bits in range(1, 31):
        for inner_size in (2**bits - 1, 2**bits, 2**bits + 1):
            if inner_size < 2:
                continue
            for row in (1, 7, INT32_MAX // inner_size):
                for i in (row * inner_size - 1, row * inner_size, row * inner_size + 1):
                    if i <= INT32_MAX:
                        assert row_of_32(i, inner_size, INT32_MAX) == i // inner_size


def test_only_two_loops_take_a_divisor():
    assert coalesce((1000,), (3,)) == Layout(1000, 3, 3000, 0, 0)  # one row: row_of is 0 for every index
    rows = coalesce((3, 1000), (1024, 1))
    assert rows[:3] == (1000, 1, 1024) and (rows.row_multiplier, rows.row_shift) == row_divisor(1000, 3000)

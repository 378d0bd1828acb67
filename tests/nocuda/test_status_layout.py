"""The look-back kernels' temporary-storage layout (host side; the kernels read it in lookback.cu)."""

import pytest

from gpulab.primitives.lookback import capacity, status_bytes, status_value


@pytest.mark.parametrize("value_size", [1, 2, 4, 8, 12, 16])
@pytest.mark.parametrize("tiles", [1, 2, 31, 1000, 65537])
def test_a_buffer_sized_for_n_tiles_holds_them(tiles, value_size):
    nbytes = status_bytes(tiles, value_size)
    assert capacity(nbytes, value_size) >= tiles
    assert status_bytes(capacity(nbytes, value_size), value_size) <= nbytes


def test_small_values_are_packed_into_64_bit_status_words():
    flags, aggregate, _, counter = status_value(4096, status_bytes(100, 4), 4)
    assert (counter, flags) == (4096, 4096 + 16) and flags % 8 == 0
    assert aggregate - flags >= 8 * 100  # one 64-bit word per tile, values inside
    assert status_bytes(100, 4) == 16 + 800
    flags, aggregate, inclusive, _ = status_value(4096, status_bytes(100, 8), 8)
    assert aggregate - flags >= 4 * 100 and inclusive - aggregate >= 8 * 100

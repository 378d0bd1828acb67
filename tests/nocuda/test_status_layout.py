"""The look-back kernels' temporary-storage layout (host side; the kernels read it in lookback.cu)."""

import pytest

from gpulab.primitives.lookback import capacity, status_bytes, status_value


@pytest.mark.parametrize("value_size", [1, 2, 4, 8, 12, 16])
@pytest.mark.parametrize("tiles", [1, 2, 31, 1000, 65537])
def test_a_buffer_sized_for_n_tiles_holds_them(tiles, value_size):
    nbytes = status_bytes(tiles, value_size)
    assert capacity(nbytes, value_size) >= tiles
    assert status_bytes(capacity(nbytes, value_size), value_size) <= nbytes
    assert capacity(nbytes - 1, value_size) < tiles


@pytest.mark.parametrize("value_size, words", [(1, 1), (4, 1), (8, 2), (12, 3), (16, 4)])
def test_every_value_travels_in_64_bit_words_of_32_value_bits(value_size, words):
    aggregate, inclusive = status_value(4096, status_bytes(100, value_size), value_size)
    assert aggregate == 4096 and inclusive - aggregate == 100 * words * 8  # A of every tile, then P
    assert inclusive % 8 == 0


"""The look-back kernels' temporary-storage layout (host side; the kernels read it in lookback.cu)."""

import itertools

import pytest

from gpulab.primitives import lookback
from gpulab.primitives.lookback import EPOCHS, StatusStorage, capacity, status_bytes, status_value

_addresses = itertools.count(0x7F00_0000_0000, 0x1000_0000)  # each test's storage its own address


class Storage:
    """Device memory as a ``__cuda_array_interface__`` describes it: acquire reads the pointer, nothing more."""

    def __init__(self, nbytes):
        self.__cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (next(_addresses), False),
                                         "version": 3}


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


def test_plans_sharing_a_temp_storage_never_take_the_same_epoch():
    shared, other = Storage(4096), Storage(4096)
    scans, filters = StatusStorage(), StatusStorage()  # as two plans keep theirs
    taken = [storage.acquire(shared, 4096, 0)[2] for storage in (scans, filters, scans, filters)]
    assert taken == [1, 2, 3, 4]
    assert scans.acquire(other, 4096, 0)[2] == 1


def test_epochs_count_up_to_2_to_the_30_minus_1():
    assert EPOCHS == 2**30 - 1  # the kernels keep 32 value bits and the epoch in one 64-bit word
    storage, plan = Storage(4096), StatusStorage()
    lookback._epochs[storage.__cuda_array_interface__["data"][0]] = EPOCHS - 1  # as if that many had run
    assert plan.acquire(storage, 4096, 0)[2] == EPOCHS

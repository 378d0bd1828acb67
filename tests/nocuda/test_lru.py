"""The bounded LRU that every in-process cache shares: bound, order, single flight, failures."""

import threading
import time

import pytest

from gpulab.lru import LRU


def test_the_least_recently_used_value_goes_first():
    lru = LRU(2)
    lru.put("a", 1)
    lru.put("b", 2)
    assert lru.get("a") == 1  # "b" is now the least recently used
    lru.put("c", 3)
    assert "b" not in lru and lru.get("a") == 1 and lru.get("c") == 3 and len(lru) == 2
    assert lru.get("b", "gone") == "gone"


def test_get_or_make_makes_once_for_many_threads():
    lru = LRU(4)
    calls, started = [], threading.Barrier(8)

    def make():
        calls.append(1)
        time.sleep(0.05)
        return object()

    results = []

    def ask():
        started.wait()
        results.append(lru.get_or_make("key", make))

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(calls) == 1 and len({id(r) for r in results}) == 1


def test_a_failed_make_reaches_every_waiter_and_is_not_kept():
    lru = LRU(4)

    def fail():
        raise ValueError("no")

    with pytest.raises(ValueError, match="no"):
        lru.get_or_make("key", fail)
    assert "key" not in lru
    assert lru.get_or_make("key", lambda: 5) == 5


def test_get_or_make_stays_bounded():
    lru = LRU(3)
    for i in range(10):
        lru.get_or_make(i, lambda i=i: i * i)
    assert len(lru) == 3 and [lru.get(i) for i in (7, 8, 9)] == [49, 64, 81]


def test_a_make_that_asks_for_itself_is_refused():
    lru = LRU(2)
    with pytest.raises(RuntimeError, match="asked for that value again"):
        lru.get_or_make("key", lambda: lru.get_or_make("key", lambda: 1))


def test_size_must_be_positive():
    with pytest.raises(ValueError):
        LRU(0)

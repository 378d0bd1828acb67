"""A small bounded, thread-safe least-recently-used map, shared by gpulab's in-process caches.

Values are made at most once per key at a time (single flight): callers
that ask for a key another thread is making wait for that result, or for
its exception; a failed make caches nothing, so the next call tries again.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from concurrent.futures import Future
from typing import Callable, Generic, Hashable, TypeVar

__all__ = ["LRU"]

V = TypeVar("V")
_MISSING = object()


class LRU(Generic[V]):
    """At most ``maxsize`` values, the least recently used dropped first.

    Parameters
    ----------
    maxsize : int
        How many values to keep (at least 1).
    """

    def __init__(self, maxsize: int):
        if maxsize < 1:
            raise ValueError(f"an LRU holds at least one value, not {maxsize}")
        self.maxsize = maxsize
        self._values: OrderedDict[Hashable, V] = OrderedDict()
        self._making: dict[Hashable, tuple[Future, int]] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable, default=None):
        """The value of ``key`` (now the most recently used), or ``default``."""
        with self._lock:
            value = self._values.get(key, _MISSING)
            if value is _MISSING:
                return default
            self._values.move_to_end(key)
            return value

    def put(self, key: Hashable, value: V) -> None:
        """Keep ``value`` under ``key``, dropping the least recently used values beyond ``maxsize``."""
        with self._lock:
            self._values[key] = value
            self._values.move_to_end(key)
            self._trim()

    def get_or_make(self, key: Hashable, make: Callable[[], V]) -> V:
        """The value of ``key``; on a miss ``make()`` is called once, however many threads ask.

        Raises
        ------
        RuntimeError
            When ``make`` asks for its own key (it would wait for itself).
        """
        with self._lock:
            value = self._values.get(key, _MISSING)
            if value is not _MISSING:
                self._values.move_to_end(key)
                return value
            flight = self._making.get(key)
            leader = flight is None
            if leader:
                flight = self._making[key] = (Future(), threading.get_ident())
        future, maker = flight
        if not leader:
            if maker == threading.get_ident():
                raise RuntimeError(f"making the value of {key!r} asked for that value again")
            return future.result()
        try:
            value = make()
        except BaseException as exc:
            with self._lock:
                del self._making[key]
            future.set_exception(exc)
            raise
        with self._lock:
            del self._making[key]
            self._values[key] = value
            self._trim()
        future.set_result(value)
        return value

    def _trim(self) -> None:
        while len(self._values) > self.maxsize:
            self._values.popitem(last=False)

    def clear(self) -> None:
        """Forget every value."""
        with self._lock:
            self._values.clear()

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._values

    def __len__(self) -> int:
        with self._lock:
            return len(self._values)

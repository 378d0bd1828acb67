"""Check that a value decoded from a cache entry has the types its dataclass declares.

An entry whose checksum is valid may still hold a string where an int
belongs (a hand-edited file, another gpulab's format): the dataclass would
accept it, and the view or a launch would fail later, far from the cause.
Checking the decoded value against its own annotations catches that at the
load, where it becomes one warning and a rebuild, with no second copy of
the schema to keep in step.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import types
import typing

__all__ = ["check_fields"]


def check_fields(value: object) -> None:
    """Refuse a dataclass instance whose fields (recursively) do not match their annotations.

    Values that are not dataclass instances are accepted as they are.
    Annotations understood: classes (``int`` excludes ``bool``, ``float``
    admits ``int``), ``X | None``, ``tuple[X, ...]``, ``tuple[X, Y]``,
    ``list[X]``, ``dict[K, V]`` and nested dataclasses; others (``Any``,
    ``Callable``, ...) are accepted.

    Raises
    ------
    TypeError
        Naming the first field that does not match, e.g.
        ``Build.resources['k'].registers: expected int, got str``.
    """
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        try:
            _checker(type(value))(value)
        except _Mismatch as error:
            where = type(value).__name__ + "".join(reversed(error.path))
            raise TypeError(f"{where}: {error.detail}") from None


class _Mismatch(Exception):
    """A value that does not match; ``path`` gathers where it sits (innermost first) on its way up."""

    def __init__(self, detail: str):
        super().__init__(detail)
        self.detail = detail
        self.path: list[str] = []

    def at(self, part: str) -> _Mismatch:
        self.path.append(part)
        return self


def _mismatch(hint: object, value: object) -> _Mismatch:
    expected = hint.__name__ if isinstance(hint, type) else str(hint)
    return _Mismatch(f"expected {expected}, got {type(value).__name__}")


# A loaded build holds tens of thousands of small values (each SASS line's source keys), so every
# annotation is turned once into a checker, and a container of plain values is checked by the set
# of its items' types, at C speed; only where that fails is it walked item by item, for the path.
Checker = typing.Callable[[object], None]
Bulk = typing.Callable[[list], bool]


@functools.lru_cache(maxsize=None)
def _checker(hint: object) -> Checker:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return _union(hint, [_checker(option) for option in args])
    if hint is None or hint is type(None):
        return _none
    if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
        return _fixed_tuple(hint, [_checker(item) for item in args])
    if origin in (tuple, list):
        return _sequence(origin, hint, _checker(args[0]), _bulk(args[0]))
    if origin is dict:
        return _mapping(hint, _checker(args[0]), _checker(args[1]), _bulk(args[0]), _bulk(args[1]))
    if isinstance(hint, type):
        return _instance(hint)
    return _accept


@functools.lru_cache(maxsize=None)
def _bulk(hint: object) -> Bulk | None:
    """A test of a whole list of values against ``hint``, for plain classes and tuples of them; else None."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        items = _bulk(args[0])
        if items is None:
            return None
        return lambda values: set(map(type, values)) <= {tuple} and items(list(itertools.chain.from_iterable(values)))
    if isinstance(hint, type) and not dataclasses.is_dataclass(hint) and origin is None:
        exact = {int, float} if hint is float else {hint}  # exact types only: anything else goes item by item
        return lambda values: set(map(type, values)) <= exact
    return None


def _check_at(check: Checker, value: object, part: str) -> None:
    """``check(value)``; a mismatch learns that it sits at ``part`` (``[3]``, ``.name``) of its container."""
    try:
        check(value)
    except _Mismatch as error:
        raise error.at(part) from None


def _accept(value: object) -> None:
    pass


def _none(value: object) -> None:
    if value is not None:
        raise _mismatch("None", value)


def _union(hint: object, options: list[Checker]) -> Checker:
    def check(value: object) -> None:
        for option in options:
            try:
                return option(value)
            except _Mismatch:
                continue
        raise _mismatch(hint, value)
    return check


def _fixed_tuple(hint: object, items: list[Checker]) -> Checker:
    def check(value: object) -> None:
        _expect(value, tuple, hint)
        if len(value) != len(items):
            raise _Mismatch(f"expected {len(items)} items, got {len(value)}")
        for i, (item, check_item) in enumerate(zip(value, items)):
            _check_at(check_item, item, f"[{i}]")
    return check


def _sequence(cls: type, hint: object, check_item: Checker, bulk: Bulk | None) -> Checker:
    def check(value: object) -> None:
        _expect(value, cls, hint)
        if bulk is not None and bulk(value):
            return
        for i, item in enumerate(value):
            _check_at(check_item, item, f"[{i}]")
    return check


def _mapping(hint: object, check_key: Checker, check_item: Checker, bulk_key: Bulk | None,
             bulk_item: Bulk | None) -> Checker:
    def check(value: object) -> None:
        _expect(value, dict, hint)
        if bulk_key is not None and bulk_item is not None and bulk_key(list(value)) and bulk_item(list(value.values())):
            return
        for key, item in value.items():
            _check_at(check_key, key, f" key {key!r}")
            _check_at(check_item, item, f"[{key!r}]")
    return check


def _instance(hint: type) -> Checker:
    def check(value: object) -> None:
        _expect(value, hint, hint)
        if dataclasses.is_dataclass(hint):
            for name, check_field in _field_checkers(type(value)):
                _check_at(check_field, getattr(value, name), f".{name}")
    return check


@functools.lru_cache(maxsize=None)
def _field_checkers(cls: type) -> tuple[tuple[str, Checker], ...]:
    hints = typing.get_type_hints(cls)
    return tuple((f.name, _checker(hints[f.name])) for f in dataclasses.fields(cls) if f.name in hints)


def _expect(value: object, cls: type, hint: object) -> None:
    if cls is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif cls is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, cls)
    if not ok:
        raise _mismatch(hint, value)

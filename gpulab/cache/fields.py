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
        _check(value, type(value), type(value).__name__)


@functools.lru_cache(maxsize=None)
def _hints(cls: type) -> dict[str, object]:
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls) if f.name in hints}


def _check(value: object, hint: object, where: str) -> None:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        for option in args:
            try:
                return _check(value, option, where)
            except TypeError:
                continue
        _fail(where, hint, value)
    if hint is None or hint is type(None):
        if value is not None:
            _fail(where, "None", value)
    elif origin is tuple:
        _expect(value, tuple, where, hint)
        if len(args) == 2 and args[1] is Ellipsis:
            args = (args[0],) * len(value)
        elif len(args) != len(value):
            raise TypeError(f"{where}: expected {len(args)} items, got {len(value)}")
        for i, (item, item_hint) in enumerate(zip(value, args)):
            _check(item, item_hint, f"{where}[{i}]")
    elif origin is list:
        _expect(value, list, where, hint)
        for i, item in enumerate(value):
            _check(item, args[0], f"{where}[{i}]")
    elif origin is dict:
        _expect(value, dict, where, hint)
        for key, item in value.items():
            _check(key, args[0], f"{where} key {key!r}")
            _check(item, args[1], f"{where}[{key!r}]")
    elif isinstance(hint, type):
        _expect(value, hint, where, hint)
        if dataclasses.is_dataclass(hint):
            for name, field_hint in _hints(type(value)).items():
                _check(getattr(value, name), field_hint, f"{where}.{name}")


def _expect(value: object, cls: type, where: str, hint: object) -> None:
    if cls is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif cls is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, cls)
    if not ok:
        _fail(where, hint, value)


def _fail(where: str, hint: object, value: object) -> typing.NoReturn:
    expected = hint.__name__ if isinstance(hint, type) else str(hint)
    raise TypeError(f"{where}: expected {expected}, got {type(value).__name__}")

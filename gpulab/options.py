"""BuildOptions: every option of a build as one typed, frozen object that checks its values.

Every entry point that builds (the one-shot calls, ``make_*``,
``gpulab.compile``, ``gpulab.bench``, ``gpulab.check``, ``%%gpukernel``)
turns the options it is given into one :class:`BuildOptions` with
:func:`build_options`, where an unknown name or a value of the wrong kind is
an :class:`~gpulab.errors.ArgumentError`, on the host as on a device; from
there the object travels whole. What each option means to NVRTC, nvJitLink,
ptxas and the frontend is written once, in ``gpulab/compiler/flags.py``.

Adding an option is adding a field with :func:`_option` (its default, its
check and a line of help); a primitive's own option (``exclusive``) is
marked ``own`` and named in the primitive's registry record.
"""

from __future__ import annotations

import difflib
import operator
from dataclasses import dataclass, field, fields
from typing import Callable

import numpy as np

from .errors import ArgumentError
from .registry import PRIMITIVES

__all__ = ["BuildOptions", "FRONTENDS", "ORDERS", "build_options", "check_order"]

FRONTENDS = ("numba-cuda", "numba-cuda-mlir")
"""The frontends a build may name (``frontend=``): what turns the checked Python function into the operator's
LTO-IR and PTX (``gpulab/compiler/frontends/``). ``None`` means the default: the first of these installed."""


def flag(value, what: str) -> bool:
    """``value`` of a True-or-False argument (``what`` names it: ``"descending="``) as a bool.

    Raises
    ------
    ArgumentError
        For anything else: ``bool("no")`` is True, and an array's truth is an error of NumPy's.
    """
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise ArgumentError(f"{what} is True or False, not {value!r}")


def check_flags(**values) -> None:
    """:func:`flag` of each keyword argument of a public call (``check_flags(verify=verify)``)."""
    for name, value in values.items():
        flag(value, f"{name}=")


def _boolean(name: str, value) -> bool:
    return flag(value, f"the build option {name}")


def _index_bits(name: str, value) -> int:
    if not isinstance(value, (bool, np.bool_)):
        try:
            if operator.index(value) in (32, 64):
                return int(value)
        except TypeError:
            pass
    raise ArgumentError(f"the build option {name} is 32 or 64, not {value!r}")


def _frontend(name: str, value) -> str | None:
    if value is None or (isinstance(value, str) and value in FRONTENDS):
        return value
    raise ArgumentError(f"the build option {name} is one of {', '.join(map(repr, FRONTENDS))} (or None: the "
                        f"default one installed), not {value!r}")


ORDERS = ("device", "portable", "sequential")
"""The fold orders a folding primitive may name (``order=``): ``"device"``, the build's own tree (the fastest;
the same bits on every run of one build, the host folds left to right); ``"portable"``, a tree fixed by the
items' positions alone (the same bits on every GPU, target and launch shape, and on the host, which replays
it); ``"sequential"``, left to right (the host's reference meaning; the host only). ``docs/order.md`` says
what each tree is."""


def check_order(value, name: str = "order") -> str:
    """``value`` if it is one of :data:`ORDERS`.

    Raises
    ------
    ArgumentError
        Naming the orders.
    """
    if isinstance(value, str) and value in ORDERS:
        return value
    raise ArgumentError(f"the build option {name} is one of {', '.join(map(repr, ORDERS))}, not {value!r}")


def _order(name: str, value) -> str:
    return check_order(value, name)


def _flags(name: str, value) -> tuple[bool, ...]:
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise ArgumentError(f"the build option {name} is a sequence of True or False, one per input; not {value!r}")
    return tuple(_boolean(name, flag) for flag in value)


def _bytes(name: str, value) -> int:
    if not isinstance(value, (bool, np.bool_)):
        try:
            if operator.index(value) >= 0:
                return int(value)
        except TypeError:
            pass
    raise ArgumentError(f"the build option {name} is a number of bytes (0 or more), not {value!r}")


def _option(default, check: Callable, help: str, *, own: bool = False, host: bool = False):
    """A field of :class:`BuildOptions`: its default, ``check(name, value)`` (which returns the value as kept or
    raises :class:`~gpulab.errors.ArgumentError`), a line of help, whether it is a primitive's own (named in
    its registry record), and whether the host reference takes it too (it changes what a call computes)."""
    return field(default=default, metadata={"check": check, "help": help, "own": own, "host": host})


@dataclass(frozen=True, init=False)
class BuildOptions:
    """Every option of a build; each changes the generated code and is part of the build's key.

    Made from keywords only (``BuildOptions(fma=False)``); an unknown name or
    a value of the wrong kind raises :class:`~gpulab.errors.ArgumentError`.
    ``dataclasses.replace`` checks the same way.

    Attributes
    ----------
    lto : bool
        Link with link-time optimisation (the operator inlined), else link PTX (the operator a ``CALL``).
    lineinfo : bool
        Keep source lines through every stage (the line map).
    fma : bool
        Contract ``a * b + c`` into fused multiply-adds (rounded once).
    boundscheck : bool
        Check every read of a captured array against its shape.
    index_bits : {32, 64}
        The index width: 32 where every offset fits (a call widens to 64 where
        one does not), or 64 always.
    frontend : str or None
        What compiles the Python function (:data:`FRONTENDS`); ``None``: the default one installed.
    exclusive : bool
        Scan only: item 0 is the initial value.
    iota : tuple of bool
        Map only: which inputs are :func:`gpulab.iota` (a call reads it from its inputs).
    payload : int
        Sort only: bytes of the value moved with each item (sort_by_key's values, argsort's indices; a call
        reads it from its values).
    order : {"device", "portable", "sequential"}
        Primitives that fold (reduce, scan, segmented_reduce, reduce_by_key): the order of their tree
        (:data:`ORDERS`). ``"portable"`` compiles without contraction: ``fma`` is False with it (an explicit
        ``fma=True`` is refused), as the host's numba compiles the operator, so that the host replays its bits.
    """

    lto: bool = _option(True, _boolean, "link with LTO (the operator inlined); False links PTX (a CALL)")
    lineinfo: bool = _option(True, _boolean, "keep source lines through every stage (the line map)")
    fma: bool = _option(True, _boolean, "contract a * b + c into fused multiply-adds")
    boundscheck: bool = _option(True, _boolean, "check every read of a captured array against its shape")
    index_bits: int = _option(32, _index_bits, "32 (64 where an offset needs it) or 64 (always)")
    frontend: str | None = _option(None, _frontend, "what compiles the Python function (None: the default)")
    exclusive: bool = _option(False, _boolean, "scan: item 0 is the initial value", own=True, host=True)
    iota: tuple[bool, ...] = _option((), _flags, "map: which inputs are gpulab.iota", own=True)
    payload: int = _option(0, _bytes, "sort: bytes of the value moved with each item", own=True)
    order: str = _option("device", _order, "folds: the tree's order, device, portable or sequential", own=True,
                         host=True)

    def __init__(self, **given):
        known = {f.name: f for f in fields(self)}
        for name in given:
            if name not in known:
                raise unknown_option(name)
        for name, option in known.items():
            value = given.get(name, option.default)
            object.__setattr__(self, name, option.metadata["check"](name, value))
        if self.order == "portable" and self.fma:
            if given.get("fma") is not None:
                raise ArgumentError("order='portable' compiles without FMA contraction, as the host compiles the "
                                    "operator, so that the host replays its bits: leave fma out, or pass fma=False")
            object.__setattr__(self, "fma", False)

    @property
    def code_kind(self) -> str:
        """What the kernel and the operator are compiled to: LTO-IR for an LTO link, else PTX.

        The one place the link mode is read; every later stage goes by its
        artifacts' kinds, so the two link modes differ in that step alone.
        """
        return "ltoir" if self.lto else "ptx"

    def as_dict(self) -> dict:
        """The options as a JSON-able dict, every field by name (a build key and a cache entry hold it)."""
        return {f.name: list(value) if isinstance(value := getattr(self, f.name), tuple) else value
                for f in fields(self)}

    def changed(self) -> dict:
        """The options that differ from their defaults, by name."""
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) != f.default}

    def require_for(self, primitive) -> BuildOptions:
        """Return these options if ``primitive`` (a registry record) takes every own option set here.

        Raises
        ------
        ArgumentError
            For an own option of another primitive (``exclusive=True`` for reduce).
        """
        for f in fields(self):
            if f.metadata["own"] and f.name not in primitive.options and _is_set(getattr(self, f.name), f.default):
                takers = own_options()[f.name]
                raise ArgumentError(f"{f.name} is not an option of {primitive.name}"
                                    + (f"; it is an option of {takers}" if takers else ""))
        return self

    def host_options(self, primitive) -> dict:
        """The options the host reference of ``primitive`` takes (``{"exclusive": ...}`` for scan), by name."""
        return {f.name: getattr(self, f.name) for f in fields(self)
                if f.metadata["host"] and (not f.metadata["own"] or f.name in primitive.options)}


def unknown_option(name: str) -> ArgumentError:
    """The error for an option ``name`` that :class:`BuildOptions` has not: the close names, and all of them."""
    names = [f.name for f in fields(BuildOptions)]
    close = difflib.get_close_matches(str(name), names, n=2)
    hint = f" (did you mean {' or '.join(close)}?)" if close else ""
    return ArgumentError(f"{name!r} is not a build option{hint}; the build options are {', '.join(names)}")


def _is_set(value, default) -> bool:
    """Whether an own option asks for something: a flag of a tuple set, or another value than the default."""
    return any(value) if isinstance(value, tuple) else value != default


def own_options() -> dict[str, str]:
    """Each own option, and the primitives that take it (in words)."""
    return {f.name: ", ".join(name for name, record in PRIMITIVES.items() if f.name in record.options)
            for f in fields(BuildOptions) if f.metadata["own"]}


def build_options(primitive=None, options: BuildOptions | None = None, **given) -> BuildOptions:
    """The options of one call: ``options`` (default: the defaults) with ``given`` changed, checked.

    Parameters
    ----------
    primitive : Primitive, optional
        The registry record of the primitive the call builds; its own options
        are checked against it.
    options : BuildOptions, optional
        Options made earlier (a notebook cell's, say).
    **given
        Options by name, as a call's keywords give them.

    Raises
    ------
    ArgumentError
        For an unknown option, a value of the wrong kind, or another primitive's own option.
    """
    if options is not None and not isinstance(options, BuildOptions):
        raise ArgumentError(f"options= takes a gpulab.BuildOptions, not {type(options).__name__}; or give the "
                            "options by name (fma=False)")
    found = options or BuildOptions()
    if given:  # the options that differ from the defaults, then those given: fma=True is given or inherited
        found = BuildOptions(**{**found.changed(), **given})
    return found.require_for(primitive) if primitive is not None else found

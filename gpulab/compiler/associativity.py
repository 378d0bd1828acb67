"""Is a fold's operator associative? Tried on the host, at build and plan time, on values chosen for its type.

A primitive whose operator is combined in a tree (its record's
``operator.associative``: reduce, scan, segmented_reduce, reduce_by_key) keeps the items' order on a device
but groups them its own way, where the host folds left to right. That is
the same result only when ``f(f(a, b), c) == f(a, f(b, c))``. The probe
tries every triple of a few values of the operator's element type (0, -0.0,
1, -1, large and small magnitudes, the ends of an integer type, inf and
NaN, each field of a record in turn), compares exact types exactly and
floats up to a few ulps of the largest magnitude involved (what rounding
alone does), and reports the first triple that differs. An operator whose
groupings differ only where NaN or an infinity is among the values gets a
note, not a warning: that is where a ``max`` written as a comparison, or a
complex product, already depends on the order. Commutativity is never
asked for, so never tried.

The operator runs as the host's interpreter runs it
(:meth:`~gpulab.kernel.Kernel.python_function`, with its uniforms' current
values), under a time limit: a value that makes it raise is skipped, and
when the limit passes a timer sets the run's stop flag, which the
operator's loops check (:mod:`gpulab.stops`) as the probe does between
calls, so an operator that loops ends the probe with what it found.
The verdict is kept per kernel fingerprint, element type and uniform values: in
memory, and, where the probe ran to its end, in the build cache's folders
(:class:`Verdict`), so that a build loaded from disk in a new process is not
probed again (the interpreter types the operator with numba: ~0.6 s to import).
"""

from __future__ import annotations

import ast
import hashlib
import json
import logging
import math
import threading
import time
import warnings
from dataclasses import dataclass
from itertools import product

import numpy as np

from .. import cache
from ..errors import AssociativityWarning, GpulabError
from ..kernel import Kernel
from ..lru import LRU
from ..stops import Stopped
from ..types import ElementType
from .spec import toolchain_versions

log = logging.getLogger(__name__)

SECONDS = 0.25
"""The longest a probe runs. ``bench/associativity.py`` times it: every triple of the 14 float32 values in
about 10 ms, of the 18 values of a record of three fields in about 120 ms (a 2-core machine under load)."""
ULPS = 4
"""How far two groupings of a float operator may differ, in units in the last place of the largest magnitude
among the three values and the results: what rounding alone does to a sum of three."""
SILENCE = "pass associative=True (%%gpukernel --associative)"
"""How to silence the probe for one call, as every message says it."""

VERDICTS: LRU = LRU(256)
"""Findings (or None) by (kernel fingerprint, element type, the uniforms' values); on disk by :func:`verdict_key`."""


@dataclass(frozen=True)
class Finding:
    """A triple on which the two groupings of an operator differ.

    Attributes
    ----------
    name : str
        The operator's name.
    element : ElementType
        Its element type.
    values : (a, b, c)
        The triple, as NumPy scalars of the element type.
    left, right
        ``f(f(a, b), c)`` and ``f(a, f(b, c))``, stored in the element type.
    nonfinite : bool
        Whether the groupings agree on every triple without NaN or an infinity.
    filename : str
        The operator's file (as its code names it).
    line : int
        Its ``return`` line (its ``def`` line when it has several), as its file or cell numbers it.
    """

    name: str
    element: ElementType
    values: tuple
    left: object
    right: object
    nonfinite: bool
    filename: str
    line: int

    @property
    def severity(self) -> str:
        """``warning``, or ``info`` when the groupings differ only where NaN or an infinity is among the values."""
        return "info" if self.nonfinite else "warning"

    def counterexample(self) -> str:
        """``sub(sub(a, b), c) = -1 but sub(a, sub(b, c)) = 1, for a = 1, b = 1, c = 1``."""
        f = self.name
        a, b, c = (_shown(v) for v in self.values)
        return (f"{f}({f}(a, b), c) = {_shown(self.left)} but {f}(a, {f}(b, c)) = {_shown(self.right)}, "
                f"for a = {a}, b = {b}, c = {c}")

    def message(self, primitive: str) -> str:
        """The finding in words: the counterexample, what a device running ``primitive`` does, how to silence it."""
        if self.nonfinite:
            return (f"`{self.name}` is associative on the values gpulab tried, except with NaN or infinities: "
                    f"{self.counterexample()}. With those among the items, {primitive} on a device (which folds "
                    "them in a tree) and the host (left to right) may give different results.")
        rounding = (" Floating-point rounding alone makes the grouping matter a little: gpulab fixes the order, "
                    "so results are deterministic run to run but differ from a left-to-right fold by rounding; "
                    f"this differs by more than {ULPS} ulps." if _has_floats(self.element.dtype) else "")
        return (f"`{self.name}` is not associative: {self.counterexample()}. {primitive} on a device folds the "
                "items in a tree (in their order, grouped its own way), so its result will differ from the "
                f"host's left-to-right fold.{rounding} Where you know and accept that, {SILENCE}.")

    def fix(self) -> str:
        """What to do about it."""
        if self.nonfinite:
            return f"nothing, when the items hold no NaN or infinity; {SILENCE} to leave this note out"
        return (f"make `{self.name}` associative (a fold in a tree needs that, not commutativity), or {SILENCE} "
                "where you accept the device's grouping")


def probe(kernel: Kernel, element: ElementType) -> Finding | None:
    """The first triple of probe values on which ``kernel``'s two groupings differ, or None.

    Kept per kernel fingerprint, element type and uniform values (in memory,
    and in the build cache's folders when the probe ran to its end); a kernel
    that reads captured arrays is probed anew each time (their contents may
    have changed), and not at all when one lives on a device.
    """
    try:
        trailing = kernel.host_arguments()
    except GpulabError:  # a device array, or a uniform gone bad: the call itself says so
        return None
    if kernel.arrays:
        return _probe(kernel, element, trailing).finding(kernel, element)
    in_memory = (kernel.fingerprint, element, tuple((v.dtype.str, v.tobytes()) for v in trailing))
    return VERDICTS.get_or_make(in_memory, lambda: _stored_or_probed(kernel, element, trailing))


def verdict_key(kernel: Kernel, element: ElementType, trailing: tuple) -> str:
    """The cache key of the probe's verdict on ``kernel`` for ``element`` with these uniforms' values: a hex
    digest of them, of the probe's values and tolerance, and of the versions of gpulab and the host's typing."""
    document = {
        "kernel": kernel.fingerprint, "element": np.lib.format.dtype_to_descr(element.dtype),
        "uniforms": [[value.dtype.str, value.tobytes().hex()] for value in trailing],
        "probe": [repr(probe_values(element)), ULPS], "versions": toolchain_versions(),
    }
    return "probe-" + hashlib.sha256(json.dumps(document, sort_keys=True, default=repr).encode()).hexdigest()[:40]


def _stored_or_probed(kernel: Kernel, element: ElementType, trailing: tuple) -> Finding | None:
    """The verdict a cache folder holds, else the probe's (written there when the probe ran to its end)."""
    key = verdict_key(kernel, element, trailing)  # a digest of the probe's values too: on a miss in memory only
    folders = cache.default_cache()
    verdict = folders.load(key, decode=lambda meta, blobs: Verdict.decode(key, element, meta, blobs))
    if verdict is None:
        verdict = _probe(kernel, element, trailing, key)
        if verdict.complete:
            folders.put(key, verdict, encode=Verdict.encode)
    return verdict.finding(kernel, element)


def finding(record, kernel: Kernel, element: ElementType, associative: bool = False) -> Finding | None:
    """What the probe finds about ``kernel`` as the operator of primitive ``record`` on items of ``element``.

    Parameters
    ----------
    record : Primitive
        The primitive; only one whose ``operator.associative`` is set is probed.
    kernel : Kernel
        The operator.
    element : ElementType
        Its parameters' type.
    associative : bool
        The caller's word that it is associative (or that it accepts the device's grouping): not probed.
    """
    return probe(kernel, element) if record.operator.associative and not associative else None


def check(record, kernel: Kernel, element: ElementType, associative: bool = False) -> Finding | None:
    """:func:`finding`, warned about (:func:`warn`)."""
    found = finding(record, kernel, element, associative)
    warn(found, record.name, kernel)
    return found


def warn(found: Finding | None, primitive: str, kernel: Kernel) -> None:
    """Issue an :class:`~gpulab.errors.AssociativityWarning` at the operator's line for a warning-level finding
    (a note about NaN and infinities is the view's alone), as a ``warnings.warn`` written there would be:
    Python's filters then show it once per line and message."""
    if found is None or found.severity != "warning":
        return
    registry = kernel.pyfunc.__globals__.setdefault("__warningregistry__", {})
    warnings.warn_explicit(AssociativityWarning(found.message(primitive), kernel.location(found.line)),
                           AssociativityWarning, found.filename, found.line, module=kernel.pyfunc.__module__,
                           registry=registry)


# --- the verdict ------------------------------------------------------------------
@dataclass(frozen=True)
class Verdict:
    """What one probe found, as a cache entry keeps it.

    Attributes
    ----------
    key : str
        Its cache key (:func:`verdict_key`).
    triple : (int, int, int) or None
        The indices, among :func:`probe_values`, of the triple on which the groupings differ; None when they
        agree on every triple tried.
    left, right : bytes
        ``f(f(a, b), c)`` and ``f(a, f(b, c))`` as the element type's bytes (empty when ``triple`` is None).
    nonfinite : bool
        As :attr:`Finding.nonfinite`.
    complete : bool
        Whether the probe ran to its end (one the time limit stopped is kept in memory only).
    """

    key: str
    triple: tuple[int, int, int] | None
    left: bytes
    right: bytes
    nonfinite: bool
    complete: bool = True

    def finding(self, kernel: Kernel, element: ElementType) -> Finding | None:
        """The verdict as a :class:`Finding` on ``kernel``'s operator line, or None."""
        if self.triple is None:
            return None
        values = probe_values(element)
        return Finding(kernel.name, element, tuple(values[i] for i in self.triple), _scalar(self.left, element.dtype),
                       _scalar(self.right, element.dtype), self.nonfinite, kernel.filename, _operator_line(kernel))

    def encode(self) -> tuple[dict, dict]:
        """The cache entry: ``(meta, blobs)``."""
        return ({"triple": None if self.triple is None else list(self.triple), "nonfinite": self.nonfinite},
                {"left": self.left, "right": self.right})

    @classmethod
    def decode(cls, key: str, element: ElementType, meta: dict, blobs: dict) -> Verdict:
        """A verdict read back from its cache entry; ``ValueError`` for one that cannot be ``element``'s."""
        triple = meta["triple"]
        verdict = cls(key, None if triple is None else tuple(triple), blobs["left"], blobs["right"],
                      meta["nonfinite"])
        if triple is not None:
            count, size = len(probe_values(element)), element.dtype.itemsize
            if (len(triple) != 3 or not all(isinstance(i, int) and 0 <= i < count for i in triple)
                    or len(verdict.left) != size or len(verdict.right) != size):
                raise ValueError(f"a verdict that is not one of {element.name}'s")
        return verdict


def _scalar(data: bytes, dtype: np.dtype):
    """``data`` as one value of ``dtype``, read as the probe reads its values (an ``np.record`` for a record)."""
    cell = np.frombuffer(bytearray(data), dtype)
    return (cell.view(np.recarray) if dtype.names is not None else cell)[0]


# --- the probe -------------------------------------------------------------------
def _probe(kernel: Kernel, element: ElementType, trailing: tuple, key: str = "") -> Verdict:
    started = time.perf_counter()
    try:
        f = kernel.python_function()
    except GpulabError:
        return Verdict(key, None, b"", b"", False, complete=False)
    values = probe_values(element)
    store = _Store(element.dtype)
    pairs: dict = {}
    stop = np.zeros(1, np.uint8)  # set by the timer: the operator's loops check it, and so does call()
    timer = threading.Timer(SECONDS, stop.__setitem__, (0, 1))

    def call(x, y):
        if stop[0]:
            raise Stopped(None)
        try:
            return store(f(x, y, *trailing, stop))
        except Stopped:
            raise
        except Exception:  # noqa: BLE001 - a value the operator cannot take is skipped
            return None

    def pair(i, j):
        if (i, j) not in pairs:
            pairs[i, j] = call(values[i], values[j])
        return pairs[i, j]

    special = [not _finite(v) for v in values]
    found = None
    timer.start()
    try:
        with np.errstate(all="ignore"):
            for nonfinite in (False, True):  # finite triples first: only those make it a warning
                for i, j, k in product(range(len(values)), repeat=3):
                    if (special[i] or special[j] or special[k]) != nonfinite:
                        continue
                    ab, bc = pair(i, j), pair(j, k)
                    if ab is None or bc is None:
                        continue
                    left, right = call(ab, values[k]), call(values[i], bc)
                    if left is None or right is None:
                        continue
                    if not _same(left, right, (values[i], values[j], values[k], ab, bc), element.dtype):
                        found = (i, j, k, left, right, nonfinite)
                        break
                if found:
                    break
        complete = True
    except Stopped:
        complete = False
        log.debug("the associativity probe of `%s` stopped after %.2f s", kernel.name, SECONDS)
    finally:
        timer.cancel()
    log.debug("probed `%s` for %s in %.1f ms", kernel.name, element.name, 1e3 * (time.perf_counter() - started))
    if found is None:
        return Verdict(key, None, b"", b"", False, complete)
    i, j, k, left, right, nonfinite = found
    return Verdict(key, (i, j, k), _bytes(left, element.dtype), _bytes(right, element.dtype), nonfinite, complete)


def _bytes(value, dtype: np.dtype) -> bytes:
    """A result the probe stored as ``dtype`` (a NumPy scalar or an ``np.record``), as its bytes."""
    return value.tobytes() if isinstance(value, np.void) else np.asarray(value, dtype).tobytes()


def _operator_line(kernel: Kernel) -> int:
    """The line of the kernel's one ``return``, else of its ``def``."""
    definition = kernel.definition()
    returns = [node for node in ast.walk(definition) if isinstance(node, ast.Return)]
    return returns[0].lineno if len(returns) == 1 else definition.lineno


class _Store:
    """Stores an operator's result as the element type (as the host's fold does), read back as the operator
    takes it: a NumPy scalar, or for a record an ``np.record`` (whose fields read as attributes)."""

    def __init__(self, dtype: np.dtype):
        self.dtype = dtype
        self.cell = np.zeros(1, dtype)

    def __call__(self, value):
        if self.dtype.names is None:
            self.cell[0] = value
            return self.cell[0]  # a new scalar
        if isinstance(value, np.record) and value.dtype == self.cell.dtype:
            return value  # one of its arguments, say: already stored
        cell = np.zeros(1, self.dtype).view(np.recarray)  # a record reads its array: one each
        cell[0] = value
        return cell[0]


# --- values ----------------------------------------------------------------------
def probe_values(element: ElementType) -> list:
    """The values an operator of ``element`` is tried on, ordinary ones first, as NumPy scalars (``np.record``
    for a record: a base record of ordinary fields, then the base with each field set to a few of its values)."""
    dtype = element.dtype
    cell = np.zeros(1, dtype)
    if dtype.names is not None:
        cell = cell.view(np.recarray)
    found = []
    for value in _values(dtype):
        cell[0] = value
        found.append(cell.copy()[0])
    return found


def _values(dtype: np.dtype, few: bool = False) -> list:
    """Values of ``dtype``, its ordinary first value first; ``few`` of them for a field of a record (a record
    of several fields has one value per field value, and the probe tries every triple of them)."""
    if dtype.names is not None:
        base = [_values(dtype.fields[name][0], few=True)[0] for name in dtype.names]
        found = [tuple(base)]
        for index, name in enumerate(dtype.names):
            for value in _values(dtype.fields[name][0], few=True)[1:]:
                found.append(tuple(base[:index] + [value] + base[index + 1:]))
        return found
    if dtype.subdtype is not None:  # an array field: its zeros only
        return [np.zeros(dtype.shape, dtype.base)]
    if dtype.kind == "b":
        return [True, False]
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        ordinary = [1, 2, 0, -1] if few else [1, 2, 3, 0, -1, -7, 100]
        return [v for v in ordinary if info.min <= v <= info.max] + [info.min, info.max] + \
            ([info.max // 2 + 1] if info.min == 0 and not few else [])
    if dtype.kind == "f":
        large, small = _magnitudes(dtype)
        if few:
            return [1.0, 0.5, 3.0, -1.0, 0.0, large, math.nan]
        return [1.0, 0.5, 3.0, -2.5, 0.0, -0.0, -1.0, 0.1, large, -large, small, math.inf, -math.inf, math.nan]
    if dtype.kind == "c":
        large, small = _magnitudes(np.dtype(f"f{dtype.itemsize // 2}"))
        if few:
            return [1, 0.5 - 2j, 0, complex(large, 0), complex(math.nan, 0)]
        return [1, 0.5 - 2j, 1j, 0, -1, complex(large, 0), complex(0, small), complex(math.inf, 0),
                complex(math.nan, 0)]
    return [np.zeros((), dtype)[()]]


def _magnitudes(dtype: np.dtype) -> tuple[float, float]:
    """A large and a small power of ten of a float type: any product of three stays finite and normal."""
    info = np.finfo(dtype)
    return (10.0 ** math.floor(math.log10(float(info.max)) / 3),
            10.0 ** math.ceil(math.log10(float(info.tiny)) / 3))


def _finite(value) -> bool:
    """Whether no float in ``value`` (a number or a record) is NaN or infinite."""
    if isinstance(value, np.void):
        return all(_finite(value[name]) for name in value.dtype.names)
    array = np.asarray(value)
    return array.dtype.kind not in "fc" or bool(np.isfinite(array).all())


def _has_floats(dtype: np.dtype) -> bool:
    if dtype.names is not None:
        return any(_has_floats(dtype.fields[name][0]) for name in dtype.names)
    return dtype.base.kind in "fc"


def _same(x, y, context: tuple, dtype: np.dtype) -> bool:
    """Whether results ``x`` and ``y`` agree: exactly for exact types, NaN matching NaN, floats within
    :data:`ULPS` of the largest finite magnitude among them and ``context`` (the triple and the pairs)."""
    if dtype.names is not None:
        return x.tobytes() == y.tobytes() or all(
            _same(x[name], y[name], tuple(v[name] for v in context), dtype.fields[name][0]) for name in dtype.names)
    if dtype.subdtype is not None or dtype.kind not in "fc":
        return bool(np.all(np.asarray(x) == np.asarray(y)))
    if x == y or (x != x and y != y):  # equal, or both NaN
        return True
    parts = (np.real, np.imag) if dtype.kind == "c" else (np.real,)
    real = np.dtype(f"f{dtype.itemsize // len(parts)}")
    for part in parts:
        p, q = part(np.asarray(x)), part(np.asarray(y))
        if (np.isnan(p) and np.isnan(q)) or p == q:
            continue
        if not (np.isfinite(p) and np.isfinite(q)):
            return False
        magnitudes = [abs(float(part(np.asarray(v)))) for v in (*context, x, y)]
        scale = max(m for m in magnitudes if math.isfinite(m))
        if abs(float(p) - float(q)) > ULPS * float(np.spacing(real.type(scale))):
            return False
    return True


def _shown(value) -> str:
    """A probe value or result as a person reads it: ``1``, ``-0.0``, ``1e+12``, ``nan``, ``(1.0, 2)``."""
    if isinstance(value, np.void):
        return "(" + ", ".join(_shown(value[name]) for name in value.dtype.names) + ")"
    return str(value)

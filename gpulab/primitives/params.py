"""Values of kernel parameters, in the field order of the C structs the build's parameter list describes.

The layouts themselves come from the kernel text (``Build.parameters``, see
:mod:`gpulab.compiler.parameters`); :func:`check_fields` makes sure, once per
build, that the tuples written here follow those structs' fields.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from ..errors import GpulabError
from ..runtime.arrays import Layout

ARRAY_FIELDS = ("data", *(f"layout.{name}" for name in Layout._fields))
"""``struct InputK`` / ``struct Output`` as plans write them: a pointer and a ``Layout``
(:func:`~gpulab.runtime.arrays.array_fields`)."""
IOTA_FIELDS = ("start",)
"""An iota ``struct InputK`` as plans write it: its ``start``."""


class TileStatusValue(NamedTuple):
    """``TileStatus<T>`` (lookback.cu): where a launch's tile status lives."""

    aggregate: int
    inclusive: int


def written_fields(parameters, kinds: tuple) -> dict[str, tuple[str, ...]]:
    """Parameter name -> the fields of the tuples gpulab writes to it, for the structs it writes.

    ``kinds`` are the inputs' kinds: ``"array"``, ``"iota"`` (or ``False`` and
    ``True``, as ``BuildOptions.iota`` says), or a mapped input's shape, whose
    struct holds its inputs' fields and then its uniforms'.
    """
    expected = {}
    for parameter in parameters:
        input_index = re.fullmatch(r"Input(\d+)", parameter.cxx)
        if parameter.cxx in ("Output", "KeyOutput"):
            expected[parameter.name] = ARRAY_FIELDS
        elif input_index:
            index = int(input_index.group(1))
            kind = kinds[index] if index < len(kinds) else "array"
            expected[parameter.name] = _input_fields(kind, parameter.fields)
        elif parameter.cxx.startswith("TileStatus<"):
            expected[parameter.name] = TileStatusValue._fields
    return expected


def _input_fields(kind, fields: tuple[str, ...]) -> tuple[str, ...]:
    if kind is True or kind == "iota":
        return IOTA_FIELDS
    if kind is False or kind == "array":
        return ARRAY_FIELDS
    found = []
    for k, inner in enumerate(kind.kinds):
        prefix = f"in{k}."
        found += [prefix + f for f in _input_fields(inner, tuple(f[len(prefix):] for f in fields
                                                                  if f.startswith(prefix)))]
    return (*found, *(f for f in fields if f.startswith("u.")))  # its uniforms, as codegen names them


def check_fields(parameters, expected: dict[str, tuple[str, ...]]) -> None:
    """Refuse a parameter whose struct fields differ from those its values are written in.

    Parameters
    ----------
    parameters : sequence of Parameter
        One kernel's parameters.
    expected : dict of str to tuple of str
        Parameter name -> the fields, in order, of the tuples written to it.

    Raises
    ------
    GpulabError
        Naming the parameter and both field lists (a template and the host disagree).
    """
    for parameter in parameters:
        want = expected.get(parameter.name)
        if want is not None and parameter.fields != want:
            raise GpulabError(f"kernel parameter {parameter.name} ({parameter.cxx}) has fields {parameter.fields} in "
                              f"the generated C++, but gpulab writes {want}: the template and the host disagree")

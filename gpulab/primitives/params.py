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
"""``struct InputK`` / ``struct Output`` as plans write them: the first four
:class:`~gpulab.runtime.arrays.ArrayFields`, a pointer and a ``Layout``."""
IOTA_FIELDS = ("start",)
"""An iota ``struct InputK`` as plans write it: its ``start``."""


class TileStatusValue(NamedTuple):
    """``TileStatus<T>`` (lookback.cu): where a launch's tile status lives."""

    flags: int
    aggregate: int
    inclusive: int
    next_tile: int


def written_fields(parameters, iota: tuple[bool, ...]) -> dict[str, tuple[str, ...]]:
    """Parameter name -> the fields of the tuples gpulab writes to it, for the structs it writes."""
    expected = {}
    for parameter in parameters:
        input_index = re.fullmatch(r"Input(\d+)", parameter.cxx)
        if parameter.cxx == "Output":
            expected[parameter.name] = ARRAY_FIELDS
        elif input_index:
            is_iota = int(input_index.group(1)) < len(iota) and iota[int(input_index.group(1))]
            expected[parameter.name] = IOTA_FIELDS if is_iota else ARRAY_FIELDS
        elif parameter.cxx.startswith("TileStatus<"):
            expected[parameter.name] = TileStatusValue._fields
    return expected


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

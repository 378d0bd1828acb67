"""Compute-capability targets: ``"sm_90"``, ``(9, 0)``, ``90`` or the current device."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import TargetError

SUPPORTED = ((7, 5), (8, 0), (8, 6), (8, 9), (9, 0), (10, 0), (12, 0))


@dataclass(frozen=True, order=True)
class Target:
    """A compute capability to compile for."""

    major: int
    minor: int

    @property
    def cc(self) -> tuple[int, int]:
        """``(major, minor)``."""
        return (self.major, self.minor)

    @property
    def arch(self) -> str:
        """``"sm_90"``."""
        return f"sm_{self.major}{self.minor}"

    def __str__(self) -> str:
        return self.arch


def parse_target(spec) -> Target:
    """Return the :class:`Target` that ``spec`` names.

    Parameters
    ----------
    spec : Target, str, tuple or int, or None
        ``"sm_90"``, ``"90"``, ``"9.0"``, ``(9, 0)``, ``90``; ``None`` means
        the current device (which needs a GPU).

    Raises
    ------
    TargetError
        When ``spec`` is not a compute capability, or ``None`` with no GPU.
    """
    if isinstance(spec, Target):
        return spec
    if spec is None:
        from ..runtime.devices import current_device

        device = current_device()
        if device.compute_capability is None:
            raise TargetError(
                "there is no GPU here to compile for; pass an explicit target such as "
                "target='sm_90' to compile ahead of time"
            )
        return Target(*device.compute_capability)
    if isinstance(spec, tuple) and len(spec) == 2:
        return _checked(Target(int(spec[0]), int(spec[1])), spec)
    if isinstance(spec, int):
        return _checked(Target(spec // 10, spec % 10), spec)
    if isinstance(spec, str):
        match = re.fullmatch(r"(?:sm_|compute_)?(\d+)(?:\.(\d))?", spec.strip().lower())
        if match:
            major, minor = match.groups()
            if minor is None:
                major, minor = major[:-1], major[-1]
            return _checked(Target(int(major), int(minor)), spec)
    raise TargetError(f"{spec!r} is not a compute capability; use e.g. 'sm_90', (9, 0) or 90")


def _checked(target: Target, spec) -> Target:
    if target.cc not in SUPPORTED:
        names = ", ".join(Target(*cc).arch for cc in SUPPORTED)
        raise TargetError(f"{spec!r} ({target.arch}) is not a supported target; choose one of {names}")
    return target

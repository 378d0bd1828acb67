"""Compute-capability targets, and the one table of the architectures gpulab compiles for.

Every target, however it is named (``"sm_90"``, ``(9, 0)``, ``90``, the
current device), is checked against :data:`ARCHITECTURES` here, and against
what the installed NVRTC and nvJitLink build for in :mod:`.toolchain`, so
what compiles also runs.
"""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass

from ..errors import TargetError, described


@dataclass(frozen=True)
class SMLimits:
    """What one SM of an architecture holds (NVIDIA's occupancy calculator, ``cuda_occupancy.h``).

    Attributes
    ----------
    threads, blocks : int
        The most resident threads and blocks.
    shared_bytes : int
        The most shared memory the SM gives its blocks.
    shared_reserved : int
        Shared memory the system keeps per block.
    registers : int
        32-bit registers in the SM's register file.
    register_partitions : int
        The partitions the register file is split into (one per scheduler); a warp's registers come from one.
    fp64_per_fp32 : float or None
        FP64 add/multiply/FMA throughput as a share of FP32's (the CUDA C++
        Programming Guide, "Arithmetic Instructions"); None where gpulab has no figure.
    """

    threads: int
    blocks: int
    shared_bytes: int
    shared_reserved: int
    registers: int
    register_partitions: int
    fp64_per_fp32: float | None


ARCHITECTURES: dict[tuple[int, int], SMLimits] = {
    (7, 5): SMLimits(1024, 16, 65_536, 0, 65_536, 4, 1 / 32),
    (8, 0): SMLimits(2048, 32, 167_936, 1024, 65_536, 4, 1 / 2),
    (8, 6): SMLimits(1536, 16, 102_400, 1024, 65_536, 4, 1 / 64),
    (8, 7): SMLimits(1536, 16, 167_936, 1024, 65_536, 4, 1 / 64),
    (8, 9): SMLimits(1536, 24, 102_400, 1024, 65_536, 4, 1 / 64),
    (9, 0): SMLimits(2048, 32, 233_472, 1024, 65_536, 4, 1 / 2),
    (10, 0): SMLimits(2048, 32, 233_472, 1024, 65_536, 4, 1 / 2),
    (10, 3): SMLimits(2048, 32, 233_472, 1024, 65_536, 4, None),
    (12, 0): SMLimits(1536, 32, 102_400, 1024, 65_536, 4, 1 / 64),
}
"""Compute capability -> SM limits: the architectures gpulab compiles for."""

DEFAULT_CC = (9, 0)
"""What the notebook compiles for when there is no GPU to ask (the H100 and H200)."""


@dataclass(frozen=True, order=True)
class Target:
    """A compute capability of :data:`ARCHITECTURES` to compile for.

    Raises
    ------
    TargetError
        For a compute capability gpulab does not know.
    """

    major: int
    minor: int

    def __post_init__(self):
        try:
            cc = (operator.index(self.major), operator.index(self.minor))
        except TypeError:
            raise TargetError(f"Target takes a compute capability as two whole numbers, Target(9, 0) for sm_90; got "
                              f"{described(self.major)} and {described(self.minor)}") from None
        object.__setattr__(self, "major", cc[0])  # 9, where np.int64(9) was given
        object.__setattr__(self, "minor", cc[1])
        _require_known(cc, cc)

    @property
    def cc(self) -> tuple[int, int]:
        """``(major, minor)``."""
        return (self.major, self.minor)

    @property
    def arch(self) -> str:
        """``"sm_90"``."""
        return f"sm_{self.major}{self.minor}"

    @property
    def limits(self) -> SMLimits:
        """What one SM of this architecture holds."""
        return ARCHITECTURES[self.cc]

    def __str__(self) -> str:
        return self.arch


def _names(ccs) -> str:
    return ", ".join(f"sm_{major}{minor}" for major, minor in ccs)


def _require_known(cc: tuple[int, int], spec) -> None:
    if cc not in ARCHITECTURES:
        named = f"sm_{cc[0]}{cc[1]}"
        said = repr(spec) if spec == named else f"{spec!r} ({named})"  # 'sm_91', not 'sm_91' (sm_91)
        raise TargetError(f"{said} is not a supported target; choose one of {_names(ARCHITECTURES)}")


def parse_target(spec) -> Target:
    """Return the :class:`Target` that ``spec`` names, checked against the table.

    Whether the installed toolchain builds for it is
    :func:`gpulab.compiler.toolchain.require_buildable`'s question, asked before a build runs (a cached build needs no toolchain, and
    loading NVRTC and nvJitLink to ask costs more than reading the cache).

    Parameters
    ----------
    spec : Target, str, tuple or int, or None
        ``"sm_90"``, ``"90"``, ``"9.0"``, ``(9, 0)``, ``90``; ``None`` means
        the current device (which needs a GPU).

    Raises
    ------
    TargetError
        When ``spec`` is not a compute capability, is one gpulab does not
        know, or is ``None`` with no GPU.
    """
    cc = _compute_capability(spec)
    _require_known(cc, spec)
    return Target(*cc)


def _compute_capability(spec) -> tuple[int, int]:
    if isinstance(spec, Target):
        return spec.cc
    if spec is None:
        from ..device import current_device

        device = current_device()
        if device.compute_capability is None:
            raise TargetError(
                "there is no GPU here to compile for; pass an explicit target such as "
                "target='sm_90' to compile ahead of time"
            )
        return device.compute_capability
    if isinstance(spec, tuple) and len(spec) == 2:
        try:
            return (operator.index(spec[0]), operator.index(spec[1]))
        except TypeError:
            pass
    if isinstance(spec, int) and not isinstance(spec, bool) and spec >= 10:
        return (spec // 10, spec % 10)
    if isinstance(spec, str):
        match = re.fullmatch(r"(?:sm_|compute_)?(\d+)(?:\.(\d))?", spec.strip().lower())
        if match and (match.group(2) is not None or len(match.group(1)) >= 2):
            major, minor = match.groups()
            if minor is None:
                major, minor = major[:-1], major[-1]
            return (int(major), int(minor))
    raise TargetError(f"{spec!r} is not a compute capability; use e.g. 'sm_90', (9, 0) or 90")

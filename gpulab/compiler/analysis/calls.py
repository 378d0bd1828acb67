"""Calls left in the SASS, each classified: the operator, an emulated warp intrinsic, a slow path, the math library."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from ..build import Build
from ..disasm import CALL_TARGET
from ..frontends import OP_NAME
from ..listing import Instruction
from .model import analyse


# Kind -> what the view calls it.
CALL_KINDS = {
    "operator": "operator not inlined",
    "emulated": "emulated warp intrinsic",
    "slow-path": "division or square-root routine",
    "math": "math library",
    "local": "compiler-internal local call",
    "other": "other call",
}
_KINDS = (
    ("emulated", re.compile(r"^__cuda_sm\d+_(shflsync|votesync|matchsync|warpsync|barrier)")),
    ("slow-path", re.compile(r"^__cuda_sm\d+x?_(div|rem|rcp|sqrt|dsqrt|drsqrt|dblrcp)")),
    ("math", re.compile(r"^(__internal_|__nv_|__cuda_sm\d+x?_)")),
    ("local", re.compile(r"^\.L")),
)


@dataclass(frozen=True)
class Call:
    """The calls of one kind to one function.

    Attributes
    ----------
    kind : str
        A key of :data:`CALL_KINDS`.
    target : str
        The function called (``__cuda_sm70_shflsync_down_p``).
    count : int
        How many ``CALL`` instructions call it.
    python_lines : dict of int to int
        Python line (as its file or cell numbers it) -> calls placed there (empty for the template's own).
    cuda_lines : dict of int to int
        ``kernel.cu`` line -> calls placed there.
    sass_lines : tuple of int
        0-based lines of the SASS pane.
    """

    kind: str
    target: str
    count: int
    python_lines: dict[int, int]
    cuda_lines: dict[int, int]
    sass_lines: tuple[int, ...]

    @property
    def label(self) -> str:
        """What the view calls this kind of call."""
        return CALL_KINDS[self.kind]

    def as_dict(self) -> dict:
        """The call as the view's bundle carries it."""
        return {"kind": self.kind, "label": self.label, "target": self.target, "count": self.count,
                "python_lines": {str(k): v for k, v in self.python_lines.items()},
                "cuda_lines": {str(k): v for k, v in self.cuda_lines.items()}, "sass_lines": list(self.sass_lines)}


def call_target(instruction: Instruction) -> str:
    """The function a ``CALL`` instruction calls, as nvdisasm names it."""
    found = CALL_TARGET.search(instruction.operands)
    return found.group(1) if found else instruction.operands.split(",")[0].strip()


def call_kind(target: str) -> str:
    """Classify a called function's name into a key of :data:`CALL_KINDS`."""
    if target == OP_NAME or target.startswith("_ZN"):  # gpulab's operator, or a function numba kept apart
        return "operator"
    return next((kind for kind, pattern in _KINDS if pattern.search(target)), "other")


def classify_calls(instructions: list[Instruction], python_lines: list[int | None],
                   cuda_lines: list[int | None]) -> list[Call]:
    """Group the ``CALL`` instructions by function called, each with its kind.

    ``python_lines`` and ``cuda_lines`` give each instruction's source lines (or None).
    """
    groups: dict[str, list[int]] = {}
    for index, instruction in enumerate(instructions):
        if instruction.stem == "CALL":
            groups.setdefault(call_target(instruction), []).append(index)
    lines = lambda found, of: dict(Counter(of[i] for i in found if of[i] is not None))  # noqa: E731
    return [Call(call_kind(target), target, len(found), lines(found, python_lines), lines(found, cuda_lines),
                 tuple(instructions[i].line for i in found))
            for target, found in groups.items()]


def count_by_kind(calls: list[Call]) -> dict[str, int]:
    """Kind -> how many ``CALL`` instructions, for every kind present."""
    counts: Counter = Counter()
    for call in calls:
        counts[call.kind] += call.count
    return dict(counts)


def calls(build: Build) -> list[Call]:
    """The calls left in ``build``'s SASS, grouped by function called and classified."""
    rows = analyse(build).rows
    return classify_calls([r.instruction for r in rows], [r.python_line for r in rows], [r.cuda_line for r in rows])

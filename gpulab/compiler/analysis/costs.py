"""Per-line costs: how many SASS instructions of each class each Python (and CUDA) line costs."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ...shown import Shown
from ..build import Build, require_build
from .guide import classes
from .model import analyse


@dataclass
class LineCost:
    """The instructions of one source line, by class.

    Attributes
    ----------
    line : int
        The Python line as its file or cell numbers it (or the 1-based line of ``kernel.cu``).
    text : str
        The line itself.
    computes : Counter
        Class id -> instructions doing the line's arithmetic.
    supports : Counter
        Class id -> instructions placed at the line that only feed
        addresses, guards and branches (see :mod:`.attribution`).
    peak_live : int or None
        The most registers live at any of its instructions.
    """

    line: int
    text: str
    computes: Counter = field(default_factory=Counter)
    supports: Counter = field(default_factory=Counter)
    peak_live: int | None = None

    @property
    def total(self) -> int:
        """Every instruction of the line."""
        return sum(self.computes.values()) + sum(self.supports.values())

    def _add(self, row, bucket: Counter) -> None:
        bucket[row.klass] += 1
        if row.live is not None:
            self.peak_live = max(self.peak_live or 0, row.live)

    def as_dict(self) -> dict:
        """The line as the view's bundle carries it."""
        return {"line": self.line, "text": self.text, "computes": dict(self.computes), "supports": dict(self.supports),
                "total": self.total, "peak_live": self.peak_live}


@dataclass
class LineCosts(Shown):
    """What each line of a build costs in SASS instructions.

    Attributes
    ----------
    python : list of LineCost
        Python lines that reached the SASS, in order.
    inlined : Counter
        Class id -> instructions with no Python line, at the template lines
        where the operator was inlined (argument loads, result stores,
        address arithmetic, the loop around the call).
    kernel : Counter
        Class id -> the rest of the template's code.
    cuda : list of LineCost
        Every ``kernel.cu`` line that reached the SASS (``computes`` counts
        all of its instructions: a CUDA line has no operator to tell apart).
    """

    name: str
    target: str
    python: list[LineCost]
    inlined: Counter
    kernel: Counter
    cuda: list[LineCost]

    def as_dict(self) -> dict:
        """The costs as the view's bundle carries them (see docs/bundle.md)."""
        return {"name": self.name, "target": self.target, "labels": {c.id: c.label for c in classes()},
                "python": [line.as_dict() for line in self.python],
                "inlined": dict(self.inlined), "kernel": dict(self.kernel),
                "cuda": [line.as_dict() for line in self.cuda]}

    def __repr__(self) -> str:
        lines = ", ".join(f"line {line.line}: {line.total}" for line in self.python)
        return (f"<LineCosts {self.name} on {self.target}: {lines}; {sum(self.inlined.values())} inlined along, "
                f"{sum(self.kernel.values())} of the template>")


def line_costs(build: Build) -> LineCosts:
    """Count each line's SASS instructions by class (see :mod:`.attribution` for the rule).

    Parameters
    ----------
    build : Build
        What :func:`gpulab.compile` returned.

    Returns
    -------
    LineCosts
        Shown as tables in IPython and Jupyter (``gpulab.display.analysis``);
        ``as_dict()`` for the view.

    Raises
    ------
    ArgumentError
        When ``build`` is not a build.
    """
    found = analyse(require_build(build, "gpulab.line_costs"))
    cuda_text = build.source.splitlines()
    python: dict[int, LineCost] = {}
    cuda: dict[int, LineCost] = {}
    inlined, kernel = Counter(), Counter()
    for row in found.rows:
        if row.python_line is not None:
            line = python.setdefault(row.python_line, LineCost(row.python_line, build.python_text(row.python_line)))
            line._add(row, line.computes if row.role == "computes" else line.supports)
        elif row.role == "inlined":
            inlined[row.klass] += 1
        else:
            kernel[row.klass] += 1
        if row.cuda_line is not None:
            line = cuda.setdefault(row.cuda_line, LineCost(row.cuda_line, _text(cuda_text, row.cuda_line)))
            line._add(row, line.computes)
    return LineCosts(build.name, build.target.arch, [python[k] for k in sorted(python)], inlined, kernel,
                     [cuda[k] for k in sorted(cuda)])


def _text(lines: list[str], number: int) -> str:
    return lines[number - 1] if 0 < number <= len(lines) else ""

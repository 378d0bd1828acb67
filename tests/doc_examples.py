"""Examples a user is shown, run as a new user pastes them: each a cell of one fresh IPython shell, in order.

A cell fails when it raises, or when a build it makes is one the lab itself
flags: a warning-level diagnostic in the view it shows, in a
``gpulab.compile`` it keeps, or (on a GPU) in a build its calls make. A
build a ``--compare`` or ``--diff`` makes to set beside the example's own is
left out: it is there to show what the other way costs.

:func:`page_examples` makes every ``python`` block of README.md and
docs/*.md a test (Sybil), each page in a shell of its own; a block that
needs a GPU follows ``<!-- skip: next if(no_gpu, reason="needs a CUDA GPU") -->`` (``no_profiler`` where
it measures with :func:`gpulab.profile`).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

import gpulab
from gpulab import profiler
from gpulab.compiler.build import Build
from gpulab.compiler.frontends import installed
from gpulab.device import devices
from gpulab.display.view import MIME_TYPE
from gpulab.notebook import session
from gpulab.primitives.plan import DevicePlan

ROOT = Path(__file__).resolve().parents[1]
PAGES = ["README.md", "docs/*.md"]
"""The pages whose ``python`` blocks are tests (in :data:`ROOT`, the repository's)."""


class Cells:
    """One fresh IPython shell whose cells are examples, run in order and checked."""

    def __init__(self):
        self.shell = InteractiveShell()
        self.seen: set[int] = set()  # the builds already checked

    def run(self, cell: str) -> None:
        """Run ``cell``; fail when it raises or the lab flags a build it makes."""
        planned: list[Build] = []  # what a device call built (on a GPU)
        real = DevicePlan.build

        def build(plan, *args):
            planned.append(real(plan, *args))
            return planned[-1]

        with pytest.MonkeyPatch.context() as patch, capture_output() as captured:
            patch.setattr(DevicePlan, "build", build)
            result = self.shell.run_cell(cell, store_history=True)
        assert result.success, f"this example failed:\n{cell}\n{captured.stdout}{captured.stderr}"
        kept = [value for value in self.shell.user_ns.values() if isinstance(value, Build) and id(value) not in self.seen]
        self.seen.update(map(id, kept))
        found = flagged(captured.outputs, kept + planned)
        assert not found, f"the lab flags this example:\n{cell}\n" + "\n".join(found)

    def close(self) -> None:
        InteractiveShell.clear_instance()
        session.defaults.__init__()  # what `%gpulab defaults ...` set, for the tests after these


def run_all(cells: list[str]) -> None:
    """Run ``cells`` in one fresh shell (:meth:`Cells.run` each)."""
    shell = Cells()
    try:
        for cell in cells:
            shell.run(cell)
    finally:
        shell.close()


def flagged(outputs, builds: list[Build]) -> list[str]:
    """The warning-level diagnostics of the views in ``outputs`` (not of a build shown beside one to compare)
    and of ``builds``."""
    found = [(d["kind"], d["line"], d["message"]) for output in outputs
             for d in (output.data.get(MIME_TYPE) or {}).get("header", {}).get("diagnostics", [])
             if d["severity"] == "warning"]
    found += [(d.kind, d.python_line, d.message) for build in builds for d in gpulab.diagnostics(build)
              if d.severity == "warning"]
    return [f"{kind} (line {line}): {message}" for kind, line, message in found]


def _open(namespace: dict) -> None:
    namespace["cells"] = Cells()
    namespace["no_gpu"] = not any(device.is_gpu for device in devices())
    namespace["no_mlir"] = "numba-cuda-mlir" not in installed()
    namespace["no_profiler"] = profiler.missing() is not None  # no GPU, no Nsight Compute or no permission


def _close(namespace: dict) -> None:
    namespace["cells"].close()


def _evaluate(example) -> None:
    example.namespace["cells"].run(example.parsed)


def page_examples():
    """The ``python`` blocks of :data:`PAGES` as tests (a Sybil): each page's in one shell, in order, with a fresh
    cache."""
    from sybil import Sybil
    from sybil.parsers.markdown import CodeBlockParser, SkipParser

    return Sybil(parsers=[CodeBlockParser("python", evaluator=_evaluate), SkipParser()], patterns=PAGES,
                 path=str(ROOT), setup=_open, teardown=_close, fixtures=["fresh_cache"])

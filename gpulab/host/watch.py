"""Host runs that can be stopped: Ctrl-C and a time limit, even inside an item whose loop never ends.

A host loop over items (:class:`gpulab.host.run.Loop`) runs in a thread of
its own, its compiled code without the GIL, while the calling thread waits
in short steps, counts the progress and watches: Python runs signal
handlers only in the main thread, between bytecodes, which compiled code
never reaches. On Ctrl-C, or once the time limit is spent, the watcher sets
the run's flag; the kernel's loops check it (:mod:`gpulab.stops`) and the
loop over items checks it between chunks, so the run ends within one loop
step of the kernel, one item or one chunk.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from ..errors import ArgumentError, KernelTimeoutError, described
from ..progress import Progress
from ..stops import Stopped

WATCH_S = 0.05
"""How often the watcher wakes: the longest Ctrl-C or a time limit waits before the flag is set."""
GRACE_S = 5.0
"""How long the watcher waits for a flagged run to end before it gives up on it (and raises)."""


@dataclass
class Budget:
    """The seconds a kernel may run on the host within a :func:`time_limit` block, and those it used."""

    seconds: float
    used: float = 0.0


_BUDGET: contextvars.ContextVar[Budget | None] = contextvars.ContextVar("gpulab_host_time_limit", default=None)


@contextlib.contextmanager
def time_limit(seconds: float):
    """Within the block, kernels may run on the host for ``seconds`` in all; then the run is stopped.

    Only running counts, not compiling: the time of every host loop over
    items (a map's, a reduce's, a mapped input's) is added up, and the loop
    that goes past the limit stops within one step of the kernel's loops or
    one item, raising :class:`~gpulab.errors.KernelTimeoutError`. The limit
    holds in the thread (and asyncio task) that entered the block.

    Parameters
    ----------
    seconds : float
        A positive number of seconds.

    Raises
    ------
    ArgumentError
        When ``seconds`` is not a positive, finite number.

    Examples
    --------
    >>> with gpulab.host.time_limit(5):  # doctest: +SKIP
    ...     gpulab.map(learner, xs, device="host")
    """
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 < seconds < math.inf:
        raise ArgumentError(f"a time limit is a positive, finite number of seconds, not {described(seconds)}")
    token = _BUDGET.set(Budget(float(seconds)))
    try:
        yield
    finally:
        _BUDGET.reset(token)


@dataclass
class Watched:
    """One host run, watched: its flag, the items done and the first item of the chunk running.

    The worker thread writes ``done`` and ``position``; the watcher reads them.
    """

    kernel: object
    flag: np.ndarray = field(default_factory=lambda: np.zeros(1, np.uint8))
    done: int = 0
    position: int = 0

    def stopped(self) -> bool:
        """Whether the watcher asked the run to stop (the loop over items checks it between chunks)."""
        return bool(self.flag[0])

    def run(self, work, progress: Progress) -> None:
        """Run ``work()`` in a thread of its own; raise what it raises, or why it was stopped.

        Raises
        ------
        KeyboardInterrupt
            On Ctrl-C, once the work has stopped (or after :data:`GRACE_S`).
        KernelTimeoutError
            When the :func:`time_limit` is spent.
        """
        outcome: dict[str, BaseException] = {}

        def target():
            try:
                work()
            except BaseException as exc:  # noqa: BLE001 - handed to the watcher, which raises it
                outcome["error"] = exc

        worker = threading.Thread(target=target, name=f"gpulab-host-{getattr(self.kernel, 'name', 'run')}",
                                  daemon=True)
        budget = _BUDGET.get()
        started = time.perf_counter()
        worker.start()
        timed_out = False  # once set, the loop ends: the flagged run has stopped or had its grace
        try:
            while worker.is_alive():
                worker.join(WATCH_S)
                self._show(progress)
                spent = time.perf_counter() - started
                if budget is not None and budget.used + spent > budget.seconds:
                    timed_out = True
                    self.flag[0] = 1
                    worker.join(GRACE_S)
                    break
        except KeyboardInterrupt:
            self.flag[0] = 1
            _wait_for(worker)
            raise
        finally:
            if budget is not None:
                budget.used += time.perf_counter() - started
        self._show(progress)
        error = outcome.get("error")
        if timed_out and (error is None or isinstance(error, Stopped)):
            raise self._timeout(budget, error) from None
        if error is not None:
            raise error

    def _show(self, progress: Progress) -> None:
        shown = progress.done
        if self.done > shown:
            progress.update(self.done - shown)

    def _timeout(self, budget: Budget, error: BaseException | None) -> KernelTimeoutError:
        kernel = self.kernel
        line = error.args[0] if error is not None and error.args else None
        where = f"in its loop on line {line - kernel.line_offset}, " if line else ""
        return KernelTimeoutError(
            f"`{kernel.name}` ran on the host past its time limit of {budget.seconds:g} s and was stopped "
            f"{where}near item {self.position}: a loop that never ends, or more work than the limit allows. "
            "Check the loop's condition, or give more time (gpulab.check(..., timeout=), "
            "gpulab.host.time_limit())", kernel.location(line))


def _wait_for(worker: threading.Thread) -> None:
    """Wait up to :data:`GRACE_S` for a flagged worker to end; more Ctrl-C's meanwhile change nothing."""
    deadline = time.perf_counter() + GRACE_S
    while worker.is_alive() and time.perf_counter() < deadline:
        with contextlib.suppress(KeyboardInterrupt):
            worker.join(WATCH_S)

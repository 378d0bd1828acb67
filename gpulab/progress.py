"""Progress of work that lasts: a tqdm bar that appears once the work has taken :data:`DELAY` seconds.

Short work shows nothing, and neither does work whose stderr is not a
terminal (a script's log, a captured output): a bar is for a person
watching. tqdm picks a widget in a notebook and a text bar in a terminal
(``tqdm.auto``); it is imported when the first work that may show a bar
begins, in the thread that begins it (:func:`_bar_class`), and where it is
not installed the work runs without one.
"""

from __future__ import annotations

import threading
import time

DELAY = 2.0
"""Seconds of work before a bar appears."""
REFRESH = 0.5
"""Seconds between redraws of a bar whose work gives no steps (a compile stage)."""


class Progress:
    """Counts done work and shows a bar once it has lasted :data:`DELAY` seconds.

    Parameters
    ----------
    description : str
        What the work is (the bar's label).
    total : int
        How much work there is, in the caller's units.
    unit : str
        The unit's name.
    ticking : bool
        Redraw on a timer too, for work whose steps can take long (the bar's
        clock keeps running while one stage compiles).
    """

    def __init__(self, description: str, total: int, unit: str = "it", *, ticking: bool = False):
        self.description, self.total, self.unit = description, total, unit
        self.done = 0
        self.stage: str | None = None
        self._running: list[str] = []
        self.start = time.perf_counter()
        self._bar = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker = threading.Thread(target=self._tick, daemon=True) if ticking else None

    def __enter__(self) -> Progress:
        _bar_class()
        if self._ticker is not None:
            self._ticker.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
        with self._lock:
            if self._bar is not None and self._bar is not False:
                self._bar.close()

    def update(self, amount: int = 1, *, stage: str | None = None) -> None:
        """Count ``amount`` more work done (``stage`` names what runs now)."""
        with self._lock:
            if stage is not None:
                self.stage = stage
            bar = self._shown()
            self.done += amount
            if bar is not None:
                bar.update(amount)
                if stage is not None:  # a stage begins or ends: a few updates, each drawn
                    bar.set_postfix_str(stage)

    def begin(self, stage: str) -> None:
        """Say that ``stage`` runs now (stages may overlap: the bar names every one running)."""
        with self._lock:
            self._running.append(stage)
            label = " + ".join(self._running)
        self.update(0, stage=label)

    def end(self, stage: str) -> None:
        """Count ``stage`` done."""
        with self._lock:
            self._running.remove(stage)
            label = " + ".join(self._running)
        self.update(1, stage=label)

    def _tick(self) -> None:
        while not self._stop.wait(REFRESH):
            with self._lock:
                bar = self._shown()
                if bar is not None:
                    bar.refresh()

    def _shown(self):
        """The bar, made once the work has lasted long enough (``None`` before, or without tqdm)."""
        if self._bar is None and time.perf_counter() - self.start >= DELAY:
            tqdm = _bar_class()
            if tqdm is None:
                self._bar = False
            else:
                # disable=None: no bar where stderr is not a terminal (a notebook's widget is always shown)
                self._bar = tqdm(total=self.total, initial=self.done, desc=self.description, unit=self.unit,
                                 leave=False, postfix=self.stage, disable=None)
                if self._bar.disable:
                    self._bar = False
                elif hasattr(self._bar, "start_t"):  # its clock counts from the work's start, not the bar's
                    self._bar.start_t -= time.perf_counter() - self.start
                    self._bar.refresh()
        return self._bar or None


_BAR_CLASS: list = []


def _bar_class():
    """``tqdm.auto.tqdm`` (None without tqdm), imported once, by the thread that first begins work.

    Not by the ticker or a worker: ``tqdm.auto`` silences a warning of its import with
    ``warnings.catch_warnings``, whose filters are the process's, so another thread leaving its own
    ``catch_warnings`` meanwhile (numba's, while it compiles) let the warning through into the notebook.
    """
    if not _BAR_CLASS:
        try:
            from tqdm.auto import tqdm
        except ImportError:
            tqdm = None
        _BAR_CLASS.append(tqdm)
    return _BAR_CLASS[0]

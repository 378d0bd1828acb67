"""Launches of one kernel from one thread, repeated ones replayed as CUDA graphs.

A launch is a function of its kernel, grid and parameter bytes and nothing
else: two launches with all three equal do the same work, on the memory as
it is then. The second time a launcher sees the same grid and bytes it
captures that launch into a CUDA graph of one kernel node, and from then on
replays the graph: a graph launch costs the driver about half of a
``cuLaunchKernel`` (bench/results, run 34: 2.79 against 4.92 us on an H200
host). A reused ``make_map`` or ``make_reduce`` called on the same arrays, or
a one-shot call whose output comes back from CuPy's memory pool at the same
address, takes the replay.

Keys are the packed bytes, never the Python values (``0.0 == -0.0``), so a
replay is exactly the launch it stands for. A launcher keeps at most
:data:`GRAPHS_KEPT` keys; a launch into a stream that is itself being
captured is never replayed (it is captured as a plain kernel launch), and
one the driver will not capture is launched plainly from then on.
"""

from __future__ import annotations

import threading
import weakref
from contextlib import contextmanager

from ..errors import DeviceError
from .module import OBSERVERS, ArgumentPack, launch

GRAPHS_KEPT = 16
"""Launches (grid and parameter bytes) one launcher remembers; past that, it forgets them all and starts over."""

NO_GRAPH = -1
"""What a launcher holds for a launch it could not capture: it launches that one plainly (and says why, if it fails)."""

_replays = True


def use_graphs(on: bool) -> None:
    """Replay repeated launches as CUDA graphs (``True``, the default) or launch every one (``False``)."""
    global _replays
    _replays = bool(on)


_OBSERVING = threading.Lock()


@contextmanager
def observing(observer):
    """Within: ``observer(function, grid, block, stream, pack, shared_bytes)`` sees every launch of this process
    before it is made, and no launch is replayed from a graph (a replay would pass no launch to see).

    Raises
    ------
    DeviceError
        When launches are observed already (one observer at a time).
    """
    global _replays
    if not _OBSERVING.acquire(blocking=False):
        raise DeviceError("launches are observed already: one gpulab.profile at a time")
    replays, _replays = _replays, False
    OBSERVERS.append(observer)
    try:
        yield
    finally:
        OBSERVERS.remove(observer)
        _replays = replays
        _OBSERVING.release()


class KernelLauncher:
    """One thread's launches of one kernel: its :class:`ArgumentPack` and the graphs of launches seen twice.

    Parameters
    ----------
    function : int
        The ``CUfunction`` address.
    block : int
        Threads per block.
    pack : ArgumentPack
        This thread's parameter buffer for the kernel.
    replays : bool
        Whether launches of this kernel may repeat (``False`` for a kernel
        whose parameters differ in every launch, such as the look-back's epoch).
    """

    def __init__(self, function: int, block: int, pack: ArgumentPack, replays: bool = True):
        self.function, self.block, self.pack, self.replays = function, block, pack, replays
        self._graphs: dict[tuple[int, bytes], int] = {}  # (grid, parameter bytes) -> graph exec, 0 if seen once
        weakref.finalize(self, _destroy, self._graphs).atexit = False  # at exit the context goes, graphs with it

    @property
    def graphs(self) -> int:
        """How many launches this launcher holds a graph of."""
        return sum(1 for graph in self._graphs.values() if graph and graph != NO_GRAPH)

    def __call__(self, grid: int, stream: int, *values) -> None:
        """Launch ``grid`` blocks on ``stream`` with ``values`` (the kernel's parameters in order).

        Raises
        ------
        DeviceError
            When the driver refuses the launch or its graph.
        """
        pack = self.pack
        if not (_replays and self.replays):
            pack.write(*values)
            launch(self.function, grid, self.block, stream, pack)
            return
        parameters = pack.packed(*values)
        key = (grid, parameters)
        graphs = self._graphs
        graph = graphs.get(key)
        if graph is None:  # first seen: remembered, launched
            if len(graphs) >= GRAPHS_KEPT:
                _destroy(graphs)
            graphs[key] = 0
        elif graph != NO_GRAPH and not _capturing(stream):
            if not graph:  # seen once before: captured now
                pack.load(parameters)
                graph = graphs[key] = _capture(self.function, grid, self.block, pack)
            if graph != NO_GRAPH:
                _replay(graph, stream)
                return
        pack.load(parameters)
        launch(self.function, grid, self.block, stream, pack)


_runtime_module = None


def _runtime():
    """CuPy's compiled CUDA runtime calls (imported once: an import statement per call costs ~0.3 us)."""
    global _runtime_module
    if _runtime_module is None:
        from cupy_backends.cuda.api import runtime

        _runtime_module = runtime
    return _runtime_module


def _capturing(stream: int) -> bool:
    """Whether ``stream`` is being captured into a graph (then a graph launch into it is not made)."""
    runtime = _runtime()
    try:
        return runtime.streamIsCapturing(stream)
    except runtime.CUDARuntimeError:  # a legacy-stream query while another stream captures: launch plainly
        return True


def _capture(function: int, grid: int, block: int, pack: ArgumentPack) -> int:
    """A graph exec of one launch of ``function`` with ``pack``'s parameters, captured on a stream of its own;
    :data:`NO_GRAPH` where the driver refuses (the plain launch that follows raises if the launch itself is wrong)."""
    runtime = _runtime()
    try:
        stream = runtime.streamCreateWithFlags(runtime.streamNonBlocking)
        try:
            runtime.streamBeginCapture(stream, runtime.streamCaptureModeRelaxed)
            try:
                launch(function, grid, block, stream, pack)
            except BaseException:
                _end_capture_quietly(runtime, stream)
                raise
            graph = runtime.streamEndCapture(stream)
            try:
                return runtime.graphInstantiate(graph)
            finally:
                runtime.graphDestroy(graph)
        finally:
            runtime.streamDestroy(stream)
    except (runtime.CUDARuntimeError, DeviceError):
        return NO_GRAPH


def _end_capture_quietly(runtime, stream: int) -> None:
    """End a capture whose launch failed (the plain launch after it raises the launch's own error)."""
    try:
        runtime.graphDestroy(runtime.streamEndCapture(stream))
    except runtime.CUDARuntimeError:
        pass


def _replay(graph: int, stream: int) -> None:
    runtime = _runtime()
    try:
        runtime.graphLaunch(graph, stream)
    except runtime.CUDARuntimeError as exc:
        raise DeviceError(f"CUDA driver call failed: {exc}") from exc


def _destroy(graphs: dict) -> None:
    """Destroy the graph execs in ``graphs`` and forget every key."""
    runtime = _runtime()
    for graph in graphs.values():
        if graph and graph != NO_GRAPH:
            runtime.graphExecDestroy(graph)
    graphs.clear()

"""Class 11: Ctrl-C stops any gpulab call within a second and leaves the session usable; long work shows progress.

A host map, a device build (numba-cuda, NVRTC, nvJitLink, nvdisasm) and a
host operator's compile each show a bar on a terminal once they have run
``progress.DELAY`` seconds (none in a log), and each stops within a second of Ctrl-C.
"""

import _thread
import linecache
import signal
import sys
import threading
import time

import numpy as np
import pytest

import gpulab
from gpulab import progress


@pytest.fixture(autouse=True)
def ctrl_c_raises():
    """Ctrl-C raises KeyboardInterrupt here, as in a user's Python (a pytest-xdist worker ignores SIGINT)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def on_a_terminal(monkeypatch) -> None:
    """Make stderr a terminal, where a person watches the work (capsys still reads it; call it in the test)."""
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)


def slow(x: gpulab.f64) -> gpulab.f64:
    s = x
    i = 0
    while i < 2000:
        s = s * 1.0000001 + 1e-9
        i += 1
    return s


def _interrupted_after(call, *, bar: str | None = None, seconds: float = 0.0) -> float | None:
    """Seconds from Ctrl-C to the KeyboardInterrupt out of ``call()`` (None if it finished first).

    Ctrl-C comes ``seconds`` after the start, or after a bar whose label
    starts with ``bar`` has appeared, and again every 0.3 s: Python drops a
    KeyboardInterrupt raised inside a weakref callback or ``__del__``
    ("Exception ignored in"), as it would a user's first Ctrl-C there, so the
    time is measured from the last Ctrl-C sent.
    """
    shown, done, fired = threading.Event(), threading.Event(), []
    if bar is not None:
        made = progress.Progress._shown

        def watched(self):
            found = made(self)
            if found is not None and self.description.startswith(bar):
                shown.set()
            return found

        patch = pytest.MonkeyPatch()
        patch.setattr(progress.Progress, "_shown", watched)
    else:
        threading.Timer(seconds, shown.set).start()

    def interrupt():
        shown.wait(120)
        while not done.wait(0 if not fired else 0.3):
            fired.append(time.perf_counter())
            _thread.interrupt_main()

    sender = threading.Thread(target=interrupt, daemon=True)
    sender.start()
    try:
        call()
    except KeyboardInterrupt:
        return time.perf_counter() - fired[-1]
    finally:
        done.set()
        shown.set()
        sender.join()
        if bar is not None:
            patch.undo()
    return None


def _long_kernel(lines: int, name: str):
    """A map kernel of ``lines`` statements, its source in linecache (the issue: 500 lines took 50 s to compile)."""
    body = "".join(f"    y = y * 1.0001 + {i}.5\n" for i in range(lines))
    text = f"def {name}(x: gpulab.f32) -> gpulab.f32:\n    y = x\n{body}    return y\n"
    filename = f"<interrupt-{name}-{time.time_ns()}>"  # a new kernel each run: nothing cached
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    namespace = {"gpulab": gpulab}
    exec(compile(text, filename, "exec"), namespace)
    return namespace[name]


def test_ctrl_c_stops_a_long_host_map_within_a_second_and_the_next_call_works(capsys, monkeypatch):
    on_a_terminal(monkeypatch)
    x = np.ones(20_000_000)
    gpulab.map(slow, x[:100], device="host")  # typed and compiled: what follows is the loop only
    after = _interrupted_after(lambda: gpulab.map(slow, x, device="host"), seconds=progress.DELAY + 0.5)
    assert after is not None, "the map finished before Ctrl-C: give it more items"
    assert after < 1.0
    assert "host map(slow)" in capsys.readouterr().err  # the bar shown after progress.DELAY seconds
    np.testing.assert_allclose(gpulab.map(slow, x[:3], device="host"), slow(1.0))


def very_slow(x: gpulab.f64) -> gpulab.f64:
    s = x
    i = 0
    while i < 50_000_000:  # some 0.1 s an item
        s = s * 1.0000001 + 1e-9
        i += 1
    return s


def test_ctrl_c_stops_a_map_of_slow_items_within_a_second():
    """A first chunk of 64 items of 0.12 s each kept Ctrl-C waiting 7 s: chunks now start at one item.

    The Ctrl-C is a SIGALRM raised by the kernel's timer, so it arrives on time even while compiled code
    holds the GIL (a timer thread would wait for the GIL, and so for the chunk, before it could fire).
    It comes again 0.3 s after each one, timed from when the one that stopped the map was due: Python
    drops a KeyboardInterrupt raised inside a weakref callback or ``__del__``, as it would a user's first
    Ctrl-C there.
    """
    gpulab.map(very_slow, np.ones(1), device="host")  # compiled: what follows is the loop only
    due = [time.perf_counter() + 1.0]  # when each Ctrl-C is due; a handler runs only between chunks

    def ctrl_c(signum, frame):
        due.append(time.perf_counter() + 0.3)
        signal.setitimer(signal.ITIMER_REAL, 0.3)
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, ctrl_c)
    signal.setitimer(signal.ITIMER_REAL, 1.0)
    try:
        gpulab.map(very_slow, np.ones(200), device="host")
    except KeyboardInterrupt:
        after = time.perf_counter() - due[-2]
    else:
        after = None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert after is not None, "the map finished before Ctrl-C"
    assert after < 1.0
    assert gpulab.map(slow, np.ones(3), device="host").size == 3  # the session goes on


def test_ctrl_c_stops_a_long_device_build_within_a_second_and_the_same_build_then_succeeds(capsys, monkeypatch):
    on_a_terminal(monkeypatch)
    monkeypatch.setattr(progress, "DELAY", 0.5)
    fn = _long_kernel(500, "long_build")
    after = _interrupted_after(lambda: gpulab.compile("map", fn, target="sm_90", lineinfo=False), bar="compile map")
    assert after is not None, "the build finished before Ctrl-C: give the kernel more lines"
    assert after < 1.0
    err = capsys.readouterr().err
    assert "compile map(long_build)" in err and "stages" in err and "frontend" in err  # the stage running
    build = gpulab.compile("map", fn, target="sm_90", lineinfo=False)  # no half-built entry blocks the key
    assert build.origin == "built" and "FMA" in build.sass


def test_ctrl_c_stops_a_host_operators_compile_within_a_second(capsys, monkeypatch):
    on_a_terminal(monkeypatch)
    monkeypatch.setattr(progress, "DELAY", 0.5)
    fn = _long_kernel(500, "long_host")
    after = _interrupted_after(lambda: gpulab.map(fn, np.ones(4, np.float32), device="host"), bar="compile long_host")
    assert after is not None and after < 1.0
    assert "compile long_host for the host" in capsys.readouterr().err
    assert gpulab.map(_long_kernel(3, "short_host"), np.ones(2, np.float32), device="host").tolist() == [
        pytest.approx(((1 * 1.0001 + 0.5) * 1.0001 + 1.5) * 1.0001 + 2.5)] * 2


def test_every_stage_of_a_build_is_counted_and_named(capsys, monkeypatch):
    on_a_terminal(monkeypatch)
    monkeypatch.setattr(progress, "DELAY", 0.0)  # every bar shows at once
    fn = _long_kernel(2, "counted_stages")
    gpulab.compile("map", fn, target="sm_90", lineinfo=False)
    err = capsys.readouterr().err
    assert "compile map(counted_stages)" in err and "5/5" in err  # frontend, codegen, nvrtc, link, resources
    assert "disassemble map(counted_stages)" in err
    gpulab.map(fn, np.ones(2, np.float32), device="host")
    assert "compile counted_stages for the host" in capsys.readouterr().err


def test_short_work_shows_no_bar(capsys, monkeypatch):
    on_a_terminal(monkeypatch)
    fn = _long_kernel(2, "quick")
    gpulab.map(fn, np.ones(2, np.float32), device="host")
    assert capsys.readouterr().err == ""


def test_work_whose_stderr_is_not_a_terminal_shows_no_bar(capsys, monkeypatch):
    """A script's log or a captured output gets no bar, however long the work: progress is for a person watching."""
    monkeypatch.setattr(progress, "DELAY", 0.0)  # on a terminal every bar would show at once
    fn = _long_kernel(2, "logged")
    gpulab.compile("map", fn, target="sm_90", lineinfo=False)
    gpulab.map(fn, np.ones(2, np.float32), device="host")
    assert capsys.readouterr().err == ""


def test_overlapping_stages_are_named_together():
    with progress.Progress("work", 2, "stages") as bar:
        bar.begin("nvrtc")
        bar.begin("frontend")
        assert bar.stage == "nvrtc + frontend"
        bar.end("nvrtc")
        assert bar.stage == "frontend" and bar.done == 1


def test_a_notebook_shows_long_work_as_a_widget_bar():
    """In a Jupyter kernel (stderr no terminal there either) the bar is tqdm's widget."""
    import nbclient
    import nbformat

    cell = nbformat.v4.new_code_cell("from gpulab import progress\nprogress.DELAY = 0.0\n"
                                     "with progress.Progress('work', 2, 'stages') as bar:\n    bar.update(1)\n")
    nbclient.NotebookClient(nbformat.v4.new_notebook(cells=[cell]), timeout=120).execute()
    assert any("application/vnd.jupyter.widget-view+json" in output.get("data", {}) for output in cell.outputs)


# --- an item whose loop never ends: Ctrl-C and time limits still stop it --------------------------------
FOREVER = """
import sys, time
import numpy as np
import gpulab

def forever(x: gpulab.{t}) -> gpulab.{t}:
    while x > gpulab.{t}(-1):
        x = x + gpulab.{t}(1)
    return x

def once(x: gpulab.{t}) -> gpulab.{t}:
    return x + gpulab.{t}(1)

xs = np.ones(4, np.{dtype})
gpulab.map(once, xs, device="host")
print("running", flush=True)
try:
    gpulab.map(forever, xs, device="host")
except KeyboardInterrupt:
    print("stopped", time.perf_counter(), flush=True)
print("then", gpulab.map(once, xs, device="host").tolist(), flush=True)
"""


@pytest.mark.parametrize("element, dtype", [("f64", "float64"), ("f16", "float16")], ids=["compiled", "interpreted"])
def test_ctrl_c_stops_an_item_whose_loop_never_ends_within_a_second(element, dtype, tmp_path):
    """The issue: a learner's `while x > -1.0: x = x + 1.0` ignored Ctrl-C (numba's compiled code never looks
    at signals); only a kill stopped it. A real SIGINT to a separate Python, as a terminal sends it."""
    import os
    import subprocess
    import sys

    script = tmp_path / "forever.py"
    script.write_text(FOREVER.format(t=element, dtype=dtype))
    child = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    try:
        assert child.stdout.readline().strip() == "running"
        time.sleep(1.0)  # well inside the loop that never ends
        sent = time.perf_counter()
        child.send_signal(signal.SIGINT)
        out, _ = child.communicate(timeout=60)
    finally:
        child.kill()
    lines = out.splitlines()
    assert lines[0].startswith("stopped"), out
    assert float(lines[0].split()[1]) - sent < 1.0  # perf_counter is the system's monotonic clock: shared
    assert lines[1] == "then [2.0, 2.0, 2.0, 2.0]"


def test_a_time_limit_stops_such_an_item_and_counts_running_time_only():
    from gpulab.errors import ArgumentError, KernelTimeoutError
    from gpulab.host import time_limit

    def forever(x: gpulab.f64) -> gpulab.f64:
        while x > -1.0:
            x = x + 1.0
        return x

    gpulab.map(slow, np.ones(2), device="host")
    with time_limit(0.5):
        gpulab.map(slow, np.ones(2), device="host")  # compiled before: runs well within the limit
        began = time.perf_counter()
        with pytest.raises(KernelTimeoutError, match=r"`forever` ran on the host past its time limit of 0.5 s and "
                                                     r"was stopped in its loop on line \d+, near item 0") as info:
            gpulab.map(forever, np.ones(3), device="host")  # its compile is not counted
    assert info.value.location.line == forever.__code__.co_firstlineno + 1
    assert time.perf_counter() - began < 60
    for wrong in (0, -1, float("inf"), float("nan"), "5", True, None):
        with pytest.raises(ArgumentError, match="a time limit is a positive, finite number of seconds"):
            with time_limit(wrong):
                pass


def test_a_time_limit_holds_in_its_own_thread_only():
    from gpulab.errors import KernelTimeoutError
    from gpulab.host import time_limit

    results = {}

    def limited():
        try:
            with time_limit(0.2):
                gpulab.map(very_slow, np.ones(20), device="host")  # about 2 s of items
        except KernelTimeoutError as exc:
            results["limited"] = exc

    gpulab.map(very_slow, np.ones(1), device="host")
    other = threading.Thread(target=limited)
    other.start()
    results["free"] = gpulab.map(very_slow, np.ones(6), device="host")  # no limit here, at the same time
    other.join()
    assert isinstance(results["limited"], KernelTimeoutError) and results["free"].size == 6


def test_a_time_limit_counts_the_run_not_numba_compiling_the_loop_around_a_new_kernel():
    """The property test found it: a new kernel's first host map compiles the item loop around it, in the watched
    run, and a 0.05 s limit stopped every one of six new kernels' 5-item maps (a loaded grading machine, a
    correct learner's kernel 'did not finish')."""
    from gpulab.host import time_limit

    for step in range(4):
        fresh = _long_kernel(3 + step, f"fresh{step}")
        with time_limit(0.05):
            assert gpulab.map(fresh, np.ones(5, np.float32), device="host").shape == (5,)

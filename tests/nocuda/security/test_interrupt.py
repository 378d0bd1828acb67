"""Class 11: Ctrl-C stops long host work within a second and leaves the session usable; long work shows progress."""

import _thread
import threading
import time

import numpy as np

import gpulab
from gpulab import progress


def slow(x: gpulab.f64) -> gpulab.f64:
    s = x
    i = 0
    while i < 2000:
        s = s * 1.0000001 + 1e-9
        i += 1
    return s


def test_ctrl_c_stops_a_long_host_map_within_a_second_and_the_next_call_works(capsys):
    x = np.ones(20_000_000)
    gpulab.map(slow, x[:100], device="host")  # typed and compiled: what follows is the loop only
    fired = []
    timer = threading.Timer(progress.DELAY + 0.5, lambda: (fired.append(time.perf_counter()), _thread.interrupt_main()))
    timer.start()
    interrupted_after = None
    try:
        gpulab.map(slow, x, device="host")  # a minute of work or more on a CPU core
    except KeyboardInterrupt:
        interrupted_after = time.perf_counter() - fired[0]
    finally:
        timer.cancel()
    assert interrupted_after is not None, "the map finished before Ctrl-C: give it more items"
    assert interrupted_after < 1.0
    assert "host map(slow)" in capsys.readouterr().err  # the bar shown after progress.DELAY seconds
    np.testing.assert_allclose(gpulab.map(slow, x[:3], device="host"), slow(1.0))

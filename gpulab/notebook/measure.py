"""What ``%%gpukernel --profile N`` measures: the cell's function on N random items, under the GPU's profiler."""

from __future__ import annotations

import numpy as np

from ..bench import default_initial, random_inputs, require_memory
from ..device import Device
from ..errors import ProfilerError
from ..kernel import Kernel
from ..options import BuildOptions
from ..primitives import call
from ..profiler.result import Profile
from ..profiler.run import profile, require_gpu


def profile_cell(kernel: Kernel, primitive: str, n: int, device: Device, options: BuildOptions, initial=None,
                 seed: int = 0, **arguments) -> Profile:
    """Measure ``primitive(kernel)`` built with ``options`` on ``n`` random items on ``device``
    (:func:`gpulab.profile`).

    Parameters
    ----------
    **arguments
        The primitive's own call arguments (``bins=`` for a histogram).

    Raises
    ------
    ProfilerError
        Where there is nothing to measure on or with (the message says what to do).
    """
    require_gpu()
    if not device.is_gpu:
        raise ProfilerError(f"--profile measures on a GPU, and the cell runs on {device.name}: give --device cuda:N, "
                            "or leave --profile out (the view's estimated costs need no GPU)")
    require_memory(kernel, primitive, n, device)
    inputs = random_inputs(kernel, primitive, n, np.random.default_rng(seed))
    import cupy

    with cupy.cuda.Device(device.ordinal):
        on_device = [cupy.asarray(x) for x in inputs]
    return profile(call, primitive, kernel, on_device, initial=default_initial(primitive, kernel, initial),
                   device=device.name, options=options, **arguments)

"""Measured, not estimated: a gpulab call run under the GPU's profiler, its samples and counts on each line.

``gpulab.profile(call, *args)`` measures (:mod:`.run`); :func:`load` reads a profile saved with
``Profile.save(folder)`` again, on any machine (:mod:`.saved`). docs/profiling.md says how it works.
"""

from .result import LaunchProfile, Profile, load
from .run import missing, profile

__all__ = ["LaunchProfile", "Profile", "load", "missing", "profile"]

"""Every change gpulab makes to numba-cuda's behaviour, in one place.

numba-cuda is in maintenance mode (FACTS.md). Each patch says why it is
needed; tests/nocuda/test_numba_compat.py shows, for each, what goes wrong
without it, so that a numba-cuda release that fixes the cause makes that
test fail and the patch can go. The patches were written for the numba-cuda
versions in :data:`TESTED`; with another one gpulab warns once, and refuses
with a clear error if what a patch replaces is gone.
"""

from __future__ import annotations

import contextlib
import functools
import threading

from ..versions import checked_version, replaced

TESTED = ((0, 30),)
"""numba-cuda ``(major, minor)`` versions these patches were checked with."""

_LOCK = threading.Lock()
_debuginfo_fixed = False


@functools.lru_cache(maxsize=1)
def check_version() -> tuple[int, ...]:
    """The installed numba-cuda version; warns once when the patches were not checked with it."""
    return checked_version("numba-cuda", TESTED)


def _replaced(owner, name: str):
    """``owner.name``, which a patch replaces; a clear error when this numba-cuda has none."""
    return replaced(owner, name, "numba-cuda", TESTED)


def fix_debuginfo_flags() -> None:
    """Write numba's debug-info module flags with behaviour 1 (error), as NVRTC does (once per process).

    numba-cuda writes "Debug Info Version" and "Dwarf Version" with behaviour
    2 (warning); nvJitLink refuses to link that with NVRTC's LTO-IR ("IDs have
    conflicting behaviors"), so line info could not survive LTO.
    """
    global _debuginfo_fixed
    with _LOCK:
        if _debuginfo_fixed:
            return
        check_version()
        from numba.cuda import cgutils, debuginfo

        _replaced(debuginfo.DIBuilder, "_set_module_flags")

        def _set_module_flags(self):
            flags = cgutils.get_or_insert_named_metadata(self.module, "llvm.module.flags")
            versions = [("Debug Info Version", self.DEBUG_INFO_VERSION)]
            if self.DWARF_VERSION is not None:
                versions.insert(0, ("Dwarf Version", self.DWARF_VERSION))
            for name, value in versions:
                node = self.module.add_metadata([self._const_int(1), name, self._const_int(value)])
                if node not in flags.operands:
                    flags.add(node)

        debuginfo.DIBuilder._set_module_flags = _set_module_flags
        _debuginfo_fixed = True


class _TargetDevice:
    def __init__(self, cc):
        self.compute_capability = cc


@contextlib.contextmanager
def compiling_for(cc: tuple[int, int], nvvm_options: dict | None = None):
    """Within the block, numba types nested device functions for ``cc`` and its NVVM step takes ``nvvm_options``
    (``gpulab.compiler.flags.nvvm``: whether to contract FMA).

    numba compiles a nested ``cuda.jit(device=True)`` function for the
    *current device*, which does not exist on a machine without a GPU; the
    final code is generated for the target anyway, so nested functions are
    typed for it too. And numba's NVVM step takes no FMA option from
    ``cuda.compile``, so its ``compile_ir`` gets the options. Callers hold the
    frontend's lock: the patches are process-wide while they last.
    """
    check_version()
    from numba.cuda import dispatcher
    from numba.cuda.cudadrv import nvvm

    saved_device, saved_compile_ir = _replaced(dispatcher, "get_current_device"), _replaced(nvvm, "compile_ir")

    def compile_ir(llvmir, **given):
        return saved_compile_ir(llvmir, **{**(nvvm_options or {}), **given})

    dispatcher.get_current_device = lambda: _TargetDevice(cc)
    nvvm.compile_ir = compile_ir
    try:
        yield
    finally:
        dispatcher.get_current_device, nvvm.compile_ir = saved_device, saved_compile_ir

"""What the installed toolchain builds: the targets of the architecture table that NVRTC and nvJitLink both take."""

from __future__ import annotations

import functools

from ..errors import TargetError
from . import link, nvrtc
from .target import ARCHITECTURES, Target


@functools.lru_cache(maxsize=1)
def toolchain_targets() -> tuple[Target, ...]:
    """The targets of :data:`~gpulab.compiler.target.ARCHITECTURES` that the installed NVRTC and nvJitLink both
    build for.

    Raises
    ------
    ToolkitNotFoundError
        When NVRTC or nvJitLink is not installed.
    """
    compiles = set(nvrtc.supported_archs())
    return tuple(Target(*cc) for cc in ARCHITECTURES if cc[0] * 10 + cc[1] in compiles and link.supports(cc))


def require_buildable(target: Target) -> Target:
    """Return ``target`` if the installed NVRTC and nvJitLink build for it (asked before a build runs: a cached
    build needs no toolchain, and loading NVRTC and nvJitLink to ask costs more than reading the cache).

    Raises
    ------
    TargetError
        Naming the targets they do build.
    """
    if target not in toolchain_targets():
        raise TargetError(f"{target.arch} is not built by the installed NVRTC and nvJitLink; they "
                          f"build {', '.join(t.arch for t in toolchain_targets())}: choose one, or upgrade "
                          "cuda-toolkit[nvrtc,nvjitlink]")
    return target

"""The compiler versions a frontend's patches were checked with, and what a patch replaces."""

from __future__ import annotations

import warnings

from ...errors import GpulabWarning, ToolkitNotFoundError


def _spelled(tested: tuple[tuple[int, int], ...]) -> str:
    return ", ".join(f"{major}.{minor}.x" for major, minor in tested)


def checked_version(distribution: str, tested: tuple[tuple[int, int], ...]) -> tuple[int, ...]:
    """The installed version of ``distribution``; warns when its ``(major, minor)`` is not in ``tested``.

    Parameters
    ----------
    distribution : str
        The compiler's package name (``"numba-cuda"``).
    tested : tuple of (int, int)
        The versions the frontend's patches were checked with.
    """
    from importlib.metadata import version

    text = version(distribution)
    found = tuple(int(part) for part in text.split(".")[:3] if part.isdigit())
    if found[:2] not in tested:
        warnings.warn(f"gpulab's {distribution} patches were checked with {distribution} {_spelled(tested)}, "
                      f"not {text}; if a build fails, install one of those", GpulabWarning, stacklevel=4)
    return found


def replaced(owner, name: str, distribution: str, tested: tuple[tuple[int, int], ...]):
    """``owner.name``, which a patch replaces; a clear error when this version of ``distribution`` has none."""
    if not hasattr(owner, name):
        from importlib.metadata import version

        raise ToolkitNotFoundError(
            f"{distribution} {version(distribution)} has no {owner.__name__}.{name}, which gpulab patches; "
            f"install {distribution} {_spelled(tested[-1:])}")
    return getattr(owner, name)

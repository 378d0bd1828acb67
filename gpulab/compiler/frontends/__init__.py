"""Frontends: the stage that turns a checked :class:`~gpulab.kernel.Kernel` into its operator's LTO-IR and PTX.

A frontend compiles the user's function, wrapped in a small C-ABI function
named :data:`OP_NAME` that takes every value by pointer (``gpulab_op(out,
in0, in1, uniform0..., array0..., bounds)``), for a target, with line info
that survives link-time optimisation. Two implement :class:`Frontend`:
numba-cuda (:mod:`.numba_cuda`, the default while it is gpulab's dependency)
and numba-cuda-mlir (:mod:`.numba_cuda_mlir`, ``pip install gpulab[mlir]``).
A build names its frontend in its options (``frontend=``, part of its key);
each frontend's patches of its compiler live in its own package.

What a frontend cannot build that the other can, it refuses with
:class:`~gpulab.errors.FrontendUnsupportedError`, naming what is missing
(docs/frontends.md).
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from ...errors import ToolkitNotFoundError
from ...options import FRONTENDS as NAMES
from ...options import BuildOptions
from ...types import ElementType
from ..artifacts import Artifact
from ..target import Target

OP_NAME = "gpulab_op"
"""The operator's C name, as the generated kernel declares it (an operator of a mapped input adds its path)."""
WRAPPER_FILENAME = "<gpulab-operator-wrapper>"
"""The file name of numba-cuda's wrapper's lines, which the view counts as the ``def`` line's (numba-cuda-mlir's
wrapper is compiled on the ``def`` line itself)."""

DEVICE_EQUIVALENTS = {
    np.sqrt: math.sqrt, np.exp: math.exp, np.expm1: math.expm1, np.log1p: math.log1p, np.fabs: math.fabs,
    np.absolute: abs, np.copysign: math.copysign, np.isinf: math.isinf, np.isfinite: math.isfinite,
}
"""NumPy ufuncs the frontends do not lower, and the math function of the same result type they do."""


@dataclass(frozen=True)
class Operator:
    """The compiled operator.

    Attributes
    ----------
    ptx : Artifact
        The operator alone, as PTX (what a PTX link links, and what the view shows).
    ltoir : Artifact
        The operator as LTO-IR (what an LTO link links).
    result : ElementType
        The element type the wrapper stores.
    libraries : tuple of Artifact
        LTO-IR of code that the frontend links with the operator (numba's
        float16 arithmetic, for example); linked with either form of the operator.
    """

    ptx: Artifact
    ltoir: Artifact
    result: ElementType
    libraries: tuple[Artifact, ...] = ()

    def code(self, kind: str) -> Artifact:
        """The operator as ``kind`` (``"ptx"`` or ``"ltoir"``)."""
        return {"ptx": self.ptx, "ltoir": self.ltoir}[kind]


class Frontend(Protocol):
    """What turns a checked kernel into its operator.

    Attributes
    ----------
    name : str
        As ``frontend=`` names it (one of :data:`gpulab.options.FRONTENDS`).
    distribution : str
        The package that installs its compiler.
    install : str
        What to install to get it (said when it is named but missing).
    """

    name: str
    distribution: str
    install: str

    def available(self) -> bool:
        """Whether its compiler is installed (asked without importing it)."""

    def lower(self, kernel, arg_types, uniform_types, *, result: ElementType | None, target: Target,
              options: BuildOptions, array_types=(), name: str = OP_NAME, first_array: int = 0) -> Operator:
        """Compile ``kernel`` for ``arg_types`` into a C-ABI operator named ``name``, with line info.

        Parameters
        ----------
        kernel : Kernel
            The checked user function.
        arg_types, uniform_types : sequence of ElementType
            Types of its parameters and of its uniforms (appended parameters).
        result : ElementType or None
            The type to store; ``None`` keeps the type the frontend infers.
        target : Target
            Compute capability (no GPU is asked).
        options : BuildOptions
            The build's options (line info, FMA contraction and bounds checks change the operator).
        array_types : sequence of ArrayType
            Types of its captured arrays (appended parameters, after the uniforms).
        name : str
            The operator's C name.
        first_array : int
            The number of its first captured array among those of the build (what a bounds record says).

        Raises
        ------
        FrontendError
            When the function cannot be typed or lowered; at the user's line.
        FrontendUnsupportedError
            For what this frontend cannot build (another can), naming it.
        """


class Listed:
    """A :class:`Frontend` as gpulab lists it: asked whether its compiler is installed without importing it; its
    package (``implementation``, which imports numba: about a second) is loaded by the first :meth:`lower`, so a
    build found in the cache loads no compiler."""

    def __init__(self, name: str, distribution: str, install: str, module: str, implementation: str):
        self.name, self.distribution, self.install = name, distribution, install
        self.module, self.implementation = module, implementation

    def available(self) -> bool:
        """Whether its compiler's package is installed (found, not imported)."""
        return importlib.util.find_spec(self.module) is not None

    def lower(self, *args, **kwargs) -> Operator:
        """:meth:`Frontend.lower`, by its package's ``compile_operator``."""
        return importlib.import_module(self.implementation, __name__).compile_operator(*args, **kwargs)


@functools.cache
def frontends() -> dict[str, Frontend]:
    """Every frontend, by name, in the order the default is chosen (:data:`gpulab.options.FRONTENDS`)."""
    listed = (Listed("numba-cuda", "numba-cuda", "pip install 'numba-cuda[cu13]'", "numba_cuda", ".numba_cuda"),
              Listed("numba-cuda-mlir", "numba-cuda-mlir", "pip install 'gpulab[mlir]'", "numba_cuda_mlir",
                     ".numba_cuda_mlir"))
    return {frontend.name: frontend for frontend in listed}


_preferred: str | None = None


def prefer(name: str | None) -> None:
    """Make ``name`` the frontend of the builds that name none, in this process (``None``: the first one installed
    again); a test suite or a benchmark runs with either so (``pytest --frontend``, ``bench/primitives.py
    --frontend``).

    Raises
    ------
    ToolkitNotFoundError
        When ``name``'s compiler is not installed.
    """
    global _preferred
    _preferred = None if name is None else resolve(name)


def installed() -> tuple[str, ...]:
    """The names of the frontends whose compiler is installed, the default first."""
    return tuple(name for name, found in frontends().items() if found.available())


def resolve(name: str | None) -> str:
    """The frontend a build of ``frontend=name`` uses: ``name``, else the one :func:`prefer` named, else the first one
    installed (numba-cuda first).

    Raises
    ------
    ToolkitNotFoundError
        When ``name``'s compiler (or, for ``None``, every one) is not installed; says what to install.
    """
    if name is None and _preferred is not None:
        return _preferred
    if name is None:
        found = installed()
        if not found:
            raise ToolkitNotFoundError("no frontend is installed to compile Python functions: "
                                       f"{frontends()[NAMES[0]].install}")
        return found[0]
    frontend = frontends()[name]
    if not frontend.available():
        raise ToolkitNotFoundError(f"frontend={name!r} needs {frontend.distribution}, which is not installed: "
                                   f"{frontend.install}; or leave frontend= out for the default ({resolve(None)})")
    return name


def other_frontend(name: str | None) -> str:
    """The frontend a build of ``frontend=name`` is compared with (``%%gpukernel --compare-frontends``).

    Raises
    ------
    ToolkitNotFoundError
        When it is not installed; says what to install.
    """
    used = resolve(name)
    return resolve(next(other for other in NAMES if other != used))


def lower(kernel, arg_types, uniform_types, *, result, target: Target, options: BuildOptions, array_types=(),
          name: str = OP_NAME, first_array: int = 0) -> Operator:
    """Compile ``kernel``'s operator with the frontend ``options.frontend`` names (see :meth:`Frontend.lower`)."""
    return frontends()[resolve(options.frontend)].lower(
        kernel, arg_types, uniform_types, result=result, target=target, options=options, array_types=array_types,
        name=name, first_array=first_array)

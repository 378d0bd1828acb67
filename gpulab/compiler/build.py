"""Build: the record of one build, every artifact by stage from the Python source to the SASS.

A build is data: made by :mod:`.pipeline`, kept by the cache
(:mod:`.serialize`), analysed by :mod:`.analysis` (which reads it; it imports
nothing above itself). Its SASS is the disassembly stage's
(:mod:`.disassembly`), run when it is first asked for, since running a
kernel does not need it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..captures import ArrayType
from ..errors import ArgumentError, described
from ..options import BuildOptions
from ..shown import Shown
from ..types import ElementType
from . import disassembly, linemap
from .artifacts import Artifact
from .associativity import Finding
from .codegen import Geometry
from .disasm import Resources
from .frontends import OP_NAME
from .parameters import Parameter
from .spec import BuildSpec
from .target import Target

_CALL = re.compile(r"\bCALL\.")

STAGES = ("check", "frontend", "codegen", "nvrtc", "link", "resources", "disasm")
"""The pipeline's stages, in the order they run (the order a build's timings are shown in)."""
ORIGINS = ("built", "memory", "disk")
"""Where :func:`gpulab.compile` got a build: built by this call, from this process' memory, or from the disk
cache."""
ARTIFACTS = {"cuda": "cuda", "operator": "ptx", "ptx": "ptx", "cubin": "cubin"}
"""The stages whose output a build keeps (:attr:`Build.artifacts`), and each one's kind: the generated CUDA
C++ (``kernel.cu``), the operator alone as the frontend's PTX, the whole kernel's PTX after linking, the
cubin. The SASS comes on demand (:meth:`Build.disassembled`)."""


@dataclass(frozen=True)
class Build(Shown):
    """Every artifact of one build, from the Python source to the SASS.

    Attributes
    ----------
    key : str
        The spec's key (:attr:`gpulab.compiler.spec.BuildSpec.key`).
    primitive, name : str
        The primitive and the function's name.
    target : Target
    options : BuildOptions
        The options it was built with (its frontend named).
    inputs, result, uniforms, arrays
        The element types of the operator's parameters and result, its
        uniforms' and its captured arrays' types.
    python_source, python_first_line, python_file
        The Python pane's text, the file line of its first line, the file.
    artifacts : dict of str to Artifact
        By stage (:data:`ARTIFACTS`): ``cuda``, ``operator``, ``ptx``, ``cubin``.
    ptx_keys : dict of int to tuple of str
        The source keys of each line of the shown PTX (``.loc`` lines folded away).
    resources : dict of str to Resources
        Per kernel: registers, shared memory, stack, spills.
    kernels : tuple of str
        The ``__global__`` functions, in launch order.
    geometry : Geometry
        How the kernels cut their work (what a plan launches by).
    parameters : dict of str to tuple of Parameter
        Per kernel: its parameters and their C layouts, as the kernel text
        declares them (what a plan packs its arguments by).
    register_cap : int or None
        Registers per thread the kernels' ``__launch_bounds__`` allow (``None``: no cap).
    timings : dict of str to float
        Seconds per pipeline stage, of the build that made these artifacts (see :data:`STAGES`).
    built_at : float or None
        When they were made (seconds since the epoch; None for a cache entry that did not say).
    origin : str
        Where the :func:`gpulab.compile` that returned this build got it: one of :data:`ORIGINS`.
        Stage timings are of that moment only when it is ``"built"``.
    spec : BuildSpec or None
        What the :func:`~.pipeline.build_for` that returned it was asked for (a live view rebuilds from it).
    associativity : Finding or None
        What the associativity probe found about the operator for that :func:`~.pipeline.build_for`
        (:mod:`.associativity`; None: nothing, not a fold, or ``associative=True``).
    """

    key: str
    primitive: str
    name: str
    target: Target
    options: BuildOptions
    inputs: tuple[ElementType, ...]
    result: ElementType
    uniforms: tuple[tuple[str, ElementType], ...]
    arrays: tuple[tuple[str, ArrayType], ...]
    python_source: str
    python_first_line: int
    python_file: str
    artifacts: dict[str, Artifact]
    ptx_keys: dict[int, tuple[str, ...]]
    resources: dict[str, Resources]
    kernels: tuple[str, ...]
    geometry: Geometry
    parameters: dict[str, tuple[Parameter, ...]]
    register_cap: int | None
    timings: dict[str, float]
    built_at: float | None
    origin: str = "built"
    spec: BuildSpec | None = field(default=None, repr=False, compare=False)
    associativity: Finding | None = field(default=None, repr=False, compare=False)

    @property
    def source(self) -> str:
        """The generated CUDA C++ (``kernel.cu``)."""
        return self.artifacts["cuda"].text

    @property
    def op_ptx(self) -> str:
        """The operator alone, as the frontend's PTX."""
        return self.artifacts["operator"].text

    @property
    def ptx(self) -> str:
        """The whole kernel after linking (``.loc`` lines folded into :attr:`line_map`)."""
        return self.artifacts["ptx"].text

    @property
    def cubin(self) -> bytes:
        """What the driver loads."""
        return self.artifacts["cubin"].data

    def disassembled(self) -> disassembly.Disassembly:
        """The disassembly stage's output: from the cache, or nvdisasm on first use."""
        return disassembly.disassemble(self.key, self.cubin, self.sources(), f"{self.primitive}({self.name})")

    @property
    def sass(self) -> str:
        """The SASS, without nvdisasm's line annotations."""
        return self.disassembled().text

    @property
    def line_map(self) -> linemap.LineMap:
        """Python line <-> CUDA line <-> PTX lines <-> SASS offsets."""
        found = self.disassembled()
        return linemap.LineMap(self.ptx_keys, found.keys, found.offsets, self.python_first_line)

    def python_key(self, line: int) -> str:
        """The key (``py:N``) that ties Python line ``line`` (as its file or cell numbers it) to its row of the
        Python pane: what the view's bundle links it by (see :mod:`.linemap`)."""
        return linemap.python_key(line, self.python_first_line)

    def python_text(self, line: int) -> str:
        """The text of Python line ``line`` (as its file or cell numbers it); empty outside the Python pane."""
        row = linemap.python_row(line, self.python_first_line)
        lines = self.python_source.splitlines()
        return lines[row] if 0 <= row < len(lines) else ""

    def sources(self) -> linemap.Sources:
        """How this build's line info names its source files."""
        return linemap.Sources(self.python_file, self.python_first_line, len(self.python_source.splitlines()))

    @property
    def sass_calls(self) -> int:
        """How many ``CALL`` instructions the SASS has (the operator's and the compiler's helpers')."""
        return sum(1 for line in self.sass.splitlines() if _CALL.search(line))

    @property
    def operator_calls(self) -> int:
        """How many ``CALL`` instructions call the operator (0 when LTO inlined it)."""
        return sum(1 for line in self.sass.splitlines() if _CALL.search(line) and OP_NAME in line)

    @property
    def sass_instructions(self) -> int:
        """How many SASS instructions there are."""
        return len(self.disassembled().offsets)

    def __repr__(self) -> str:
        link_mode = "LTO" if self.options.lto else "PTX link"
        return (f"<gpulab.Build {self.primitive}({self.name}) {self.target} {link_mode}: "
                f"{self.sass_instructions} SASS instructions, {self.operator_calls} operator CALL>")


def require_build(value, function: str) -> Build:
    """``value``, a :class:`Build`; else the ArgumentError of ``function`` (``"gpulab.line_costs"``) that says what
    to pass."""
    if not isinstance(value, Build):
        raise ArgumentError(f"{function} takes a build (what gpulab.compile returns), not {described(value)}")
    return value

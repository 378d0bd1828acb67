"""Stage artifacts: what one stage of the pipeline made, saying what it is (as cuda.core's ``ObjectCode`` does).

The link mode is read once, where a build picks its code kind
(:attr:`~gpulab.options.BuildOptions.code_kind`); from there on each
artifact says whether it is PTX or LTO-IR, and the linker links by kind.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["cuda", "ptx", "ltoir", "cubin"]
TEXT_KINDS = ("cuda", "ptx")


@dataclass(frozen=True)
class Artifact:
    """One stage's output.

    Attributes
    ----------
    kind : {"cuda", "ptx", "ltoir", "cubin"}
        What the bytes are: CUDA C++ source, PTX, LTO-IR or a cubin.
    data : bytes
        The code (CUDA C++ and PTX as NUL-free text bytes).
    name : str
        What the linker and its log call it (``kernel``, ``operator``, ``library0``).
    """

    kind: Kind
    data: bytes
    name: str

    @property
    def text(self) -> str:
        """CUDA C++ or PTX as text."""
        if self.kind not in TEXT_KINDS:
            raise TypeError(f"{self.name} is {self.kind}, not text")
        return self.data.decode()

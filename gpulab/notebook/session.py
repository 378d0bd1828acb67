"""The notebook session: ``%%gpukernel``'s defaults, which target a cell compiles for, and the devices table."""

from __future__ import annotations

import html
from dataclasses import dataclass, fields

from IPython.display import display

from ..compiler.bundle import PANES
from ..compiler.target import DEFAULT_CC, Target, parse_target, require_buildable, toolchain_targets
from ..device import Device, current_device, devices
from ..display.table import Table
from ..errors import ToolkitNotFoundError

DEFAULT_TARGET = Target(*DEFAULT_CC).arch
_said_default_target = False


@dataclass
class SessionDefaults:
    """Options ``%%gpukernel`` uses where a cell gives none (``%gpulab defaults`` sets them).

    Attributes
    ----------
    target : str or None
        Compile target; ``None`` means the current GPU (``sm_90`` without one).
    lto : bool
        Link with LTO (the operator inlined) or link PTX (a ``CALL``).
    fma : bool
        Contract ``a * b + c`` into FMA instructions.
    show : tuple of str
        Which panes, in order.
    """

    target: str | None = None
    lto: bool = True
    fma: bool = True
    show: tuple[str, ...] = PANES

    def table(self) -> Table:
        """The defaults as a table."""
        target = self.target or f"current GPU ({DEFAULT_TARGET} without one)"
        rows = [["target", target], ["lto", self.lto], ["fma", self.fma], ["show", ",".join(self.show)]]
        return Table(["option", "value"], rows, "%%gpukernel session defaults")

    def update(self, *, reset=False, target=None, lto=None, fma=None, show=None) -> None:
        """Set the options given (``target="auto"`` means the current GPU); ``reset`` first restores the built-in ones."""
        if reset:
            for option in fields(SessionDefaults):
                setattr(self, option.name, option.default)
        if target is not None:
            automatic = target.lower() in ("auto", "none")
            self.target = None if automatic else require_buildable(parse_target(target)).arch
        if lto is not None:
            self.lto = lto
        if fma is not None:
            self.fma = fma
        if show is not None:
            self.show = tuple(show)


defaults = SessionDefaults()


def target_for(explicit: str | None, device: Device):
    """The target of a cell's build: explicit, the session's, the device's, the first GPU's, else sm_90 (said once)."""
    global _said_default_target
    if explicit or defaults.target:
        return explicit or defaults.target
    gpu = device if device.is_gpu else next((d for d in devices() if d.is_gpu), None)
    if gpu is not None:
        return gpu.compute_capability
    if not _said_default_target:
        _said_default_target = True
        note(f"gpulab: no GPU here, so compiling for {DEFAULT_TARGET} "
             "(choose with --target, or %gpulab defaults --target)")
    return DEFAULT_TARGET


def note(message: str) -> None:
    """Show a small grey line of text."""
    display({"text/plain": message,
             "text/html": f"<div style='font-size:small;color:#777'>{html.escape(message)}</div>"}, raw=True)


def compile_targets() -> list[Target]:
    """The targets one can compile for here (none when the toolchain is missing)."""
    try:
        return list(toolchain_targets())
    except ToolkitNotFoundError:
        return []


def devices_table() -> Table:
    """Every device (``*`` marks the current one) and the targets one can compile for."""
    current = current_device().name
    rows = []
    for d in devices():
        cc = f"{d.compute_capability[0]}.{d.compute_capability[1]}" if d.is_gpu else "-"
        memory = f"{d.memory_bytes / 2**30:.0f} GiB" if d.memory_bytes else "-"
        rows.append(["*" if d.name == current else "", d.name, d.description, cc, memory, d.multiprocessors or "-"])
    targets = ", ".join(t.arch for t in compile_targets())
    return Table(["", "device", "description", "compute capability", "memory", "SMs"], rows,
                 f"gpulab devices (* current); compile targets: {targets}")

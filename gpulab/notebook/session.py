"""The notebook session: ``%%gpukernel``'s defaults, which target a cell compiles for, and the devices table."""

from __future__ import annotations

import html
from dataclasses import dataclass, field

from IPython.display import display

from ..compiler.bundle import PANES
from ..compiler.target import DEFAULT_CC, Target, parse_target
from ..compiler.toolchain import require_buildable, toolchain_targets
from ..device import Device, current_device, devices
from ..display.table import Table
from ..errors import ToolkitNotFoundError
from ..options import BuildOptions, build_options

DEFAULT_TARGET = Target(*DEFAULT_CC).arch
_said_default_target = False


SESSION_OPTIONS = ("lto", "fma")
"""The build options ``%gpulab defaults`` sets (and its table shows)."""


@dataclass
class SessionDefaults:
    """Options ``%%gpukernel`` uses where a cell gives none (``%gpulab defaults`` sets them).

    Attributes
    ----------
    target : Target or None
        Compile target; ``None`` means the current GPU (``sm_90`` without one).
    options : BuildOptions
        Build options (``lto``, ``fma``) where a cell names none.
    show : tuple of str
        Which panes, in order.
    """

    target: Target | None = None
    options: BuildOptions = field(default_factory=BuildOptions)
    show: tuple[str, ...] = PANES

    def table(self) -> Table:
        """The defaults as a table."""
        target = self.target.arch if self.target else f"current GPU ({DEFAULT_TARGET} without one)"
        rows = [["target", target], *([name, getattr(self.options, name)] for name in SESSION_OPTIONS),
                ["show", ",".join(self.show)]]
        return Table(["option", "value"], rows, "%%gpukernel session defaults")

    def update(self, *, reset=False, target=None, show=None, **given) -> None:
        """Set the options given (``target="auto"`` means the current GPU; a build option of ``None`` is not
        given); ``reset`` first restores the built-in ones."""
        if reset:
            self.__init__()
        if target is not None:
            automatic = isinstance(target, str) and target.lower() in ("auto", "none")
            self.target = None if automatic else require_buildable(parse_target(target))
        self.options = self.cell_options(**given)
        if show is not None:
            self.show = tuple(show)

    def cell_options(self, primitive=None, **given) -> BuildOptions:
        """The build options of a cell of ``primitive`` (a registry record): the session's, with the options the
        cell gives (those not ``None``) changed."""
        return build_options(primitive, self.options, **{name: value for name, value in given.items()
                                                         if value is not None})


defaults = SessionDefaults()


def target_for(explicit: Target | None, device: Device) -> Target:
    """The target of a cell's build: explicit, the session's, the device's, the first GPU's, else sm_90 (said once)."""
    global _said_default_target
    if explicit or defaults.target:
        return explicit or defaults.target
    gpu = device if device.is_gpu else next((d for d in devices() if d.is_gpu), None)
    if gpu is not None:
        return parse_target(gpu.compute_capability)
    if not _said_default_target:
        _said_default_target = True
        note(f"gpulab: no GPU here, so compiling for {DEFAULT_TARGET} "
             "(choose with --target, or %gpulab defaults --target)")
    return Target(*DEFAULT_CC)


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

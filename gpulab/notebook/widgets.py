"""Notebook widgets: a device and target picker, and a panel that benchmarks a function.

They need a front end with ipywidgets (JupyterLab, Notebook 7, VS Code).
Elsewhere each shows a line of text or HTML saying so instead of an
unrendered widget.
"""

from __future__ import annotations

import html
import sys

import ipywidgets
import numpy as np
import traitlets
from IPython.display import display

from .. import registry
from ..bench import bench
from ..compiler.target import Target
from ..device import current_device, devices, use
from ..display.errors import format_error
from ..errors import DeviceError, GpulabError
from ..kernel import as_kernel
from .session import compile_targets, defaults

__all__ = ["DevicePicker", "LabPanel", "aot_targets"]

WIDGETS_NOTE = "widgets need JupyterLab, Notebook 7 or VS Code with ipywidgets"
ELEMENT_TYPES = ("float32", "float64", "int32", "int64", "uint32", "float16", "int8", "bool")


def aot_targets() -> list[Target]:
    """Every architecture gpulab knows that the installed NVRTC and nvJitLink build for (``sm_75`` ... ``sm_120``)."""
    return compile_targets()


class _Fallback:
    """Adds text and HTML to a widget's MIME bundle for front ends that cannot show widgets."""

    def _summary(self) -> str:
        raise NotImplementedError

    def _repr_mimebundle_(self, **kwargs):
        data = super()._repr_mimebundle_(**kwargs)
        text = f"{self._summary()} ({WIDGETS_NOTE})"
        data["text/plain"] = text
        data["text/html"] = f"<div class='gpulab-widget-fallback'><code>{html.escape(text)}</code></div>"
        return data


class DevicePicker(_Fallback, ipywidgets.Dropdown):
    """Choose where gpulab runs, or a GPU to compile for ahead of time.

    The options are ``host``, every ``cuda:N`` (name, compute capability,
    memory), and the AOT targets of :func:`aot_targets`. Choosing a device
    calls ``gpulab.use(device)`` and lets ``%%gpukernel`` compile for it;
    choosing a target makes it ``%%gpukernel``'s default compile target.
    ``value`` (a traitlet) holds the chosen :class:`~gpulab.device.Device`
    or :class:`~gpulab.compiler.target.Target`.
    """

    def __init__(self, **kwargs):
        options = [(_device_label(d), d) for d in devices()]
        options += [(f"{target.arch}: compile only (ahead of time)", target) for target in aot_targets()]
        value = defaults.target if defaults.target in aot_targets() else current_device()
        kwargs.setdefault("description", "gpulab")
        kwargs.setdefault("layout", ipywidgets.Layout(width="max-content"))
        super().__init__(options=options, value=value, **kwargs)

    @traitlets.validate("value")
    def _validate_value(self, proposal):
        """A device or target, or its name as the list shows it (``"host"``, ``"cuda:0"``, ``"sm_90"``)."""
        chosen = proposal["value"]
        if isinstance(chosen, str):
            named = {getattr(option, "name", None) or option.arch: option for _, option in self.options}
            if chosen not in named:
                raise DeviceError(f"the picker has no {chosen!r}: choose one of {', '.join(named)}")
            chosen = named[chosen]
        return super()._validate_value(traitlets.Bunch(proposal, value=chosen))

    @traitlets.observe("value")
    def _choose(self, change) -> None:
        chosen = change["new"]
        if isinstance(chosen, Target):
            defaults.target = chosen
        elif chosen is not None:
            use(chosen.name)
            defaults.target = None

    def _summary(self) -> str:
        return f"DevicePicker: {getattr(self.value, 'name', self.value)}"


def _device_label(device) -> str:
    if not device.is_gpu:
        return "host: reference backend (numba on the CPU)"
    major, minor = device.compute_capability
    return f"{device.name}: {device.description}, sm_{major}{minor}, {device.memory_bytes / 2**30:.0f} GiB"


class LabPanel(_Fallback, ipywidgets.VBox):
    """Benchmark one function from a panel: primitive, element type, sizes, backends, Run (built with the
    session's default options, ``%gpulab defaults``).

    Parameters
    ----------
    fn : function or Kernel
        The function. When it is annotated, the element type is fixed.
    primitive : str, optional
        The primitive to run. By default the one the signature fits
        (:func:`primitive_choices`); where it fits several (``(f32, f32) ->
        f32`` is a map and a reduce), none is chosen and the panel asks.
    exponents : tuple of int
        Initial size range, as powers of ten.

    Attributes
    ----------
    result : BenchResult or None
        The last run's result.
    """

    def __init__(self, fn, *, primitive: str | None = None, exponents: tuple[int, int] = (3, 7)):
        self.kernel = as_kernel(fn)
        declared = self.kernel.declared
        choices = primitive_choices(self.kernel)
        if primitive is None and len(choices) == 1:
            primitive = choices[0]
        self.primitive = ipywidgets.Dropdown(options=list(registry.PRIMITIVES), value=primitive,
                                             description="primitive")
        dtype = declared.args[0].name if declared else ELEMENT_TYPES[0]
        self.dtype = ipywidgets.Dropdown(options=sorted({*ELEMENT_TYPES, dtype}, key=_type_order), value=dtype,
                                         description="type", disabled=declared is not None)
        self.sizes = ipywidgets.IntRangeSlider(value=exponents, min=1, max=9, description="size 10^",
                                               continuous_update=False)
        gpu = current_device()
        self.use_device = ipywidgets.Checkbox(value=gpu.is_gpu, disabled=not gpu.is_gpu, indent=False,
                                              description=f"device ({gpu.name if gpu.is_gpu else 'no GPU'})")
        self.use_host = ipywidgets.Checkbox(value=True, description="host", indent=False)
        self.button = ipywidgets.Button(description="Run", button_style="primary", icon="play")
        self.output = ipywidgets.Output()
        self.result = None
        self.button.on_click(lambda _: self.run())
        controls = ipywidgets.HBox([self.primitive, self.dtype])
        backends = ipywidgets.HBox([self.use_device, self.use_host, self.button])
        super().__init__([ipywidgets.HTML(f"<b>{html.escape(self.kernel.name)}</b>"), controls, self.sizes,
                          backends, self.output])
        self.ask = "" if primitive else (f"`{self.kernel.name}` {self.kernel.declared or '(untyped)'} fits "
                                         f"{', '.join(choices)}: choose the primitive to run")
        if self.ask:
            with self.output:
                print(self.ask)

    def chosen_sizes(self) -> list[int]:
        """The sizes the slider selects: every power of ten in its range."""
        low, high = self.sizes.value
        return [10**k for k in range(low, high + 1)]

    def chosen_devices(self) -> list[str]:
        """The backends ticked."""
        names = [current_device().name] if self.use_device.value and current_device().is_gpu else []
        return names + (["host"] if self.use_host.value else [])

    def run(self):
        """Benchmark with the panel's choices and show the plot and the table in its output.

        Returns
        -------
        BenchResult or None
            None when no backend is ticked or the function cannot run.
        """
        self.output.clear_output()
        with self.output:
            if self.primitive.value is None:
                print(self.ask)
                return None
            if not self.chosen_devices():
                print("tick a backend (device or host)")
                return None
            try:
                self.result = bench(self.kernel, self.primitive.value, self.chosen_sizes(),
                                    devices=self.chosen_devices(),
                                    dtype=None if self.kernel.declared else self.dtype.value,
                                    options=defaults.options)
            except GpulabError as exc:
                print(format_error(exc), file=sys.stderr)
                return None
            display(self.result.plot())
            display(self.result)
        return self.result

    def _summary(self) -> str:
        return f"LabPanel({self.kernel.name})"


def primitive_choices(kernel) -> list[str]:
    """The primitives ``kernel``'s signature fits.

    A predicate (one input, a bool result) is a filter; otherwise every
    primitive whose operator takes that many inputs, of one type where it
    needs one, and returns what it must: ``(T, T) -> T`` fits map, reduce
    and scan, so a panel must be told which. Primitives whose calls need more
    than random items (a segmented reduce's offsets, a histogram's bins) and
    key functions (a map's signature) are never guessed.
    """
    declared, count = kernel.declared, len(kernel.param_names)
    args, result = (declared.args, declared.result) if declared else (None, None)
    if count == 1 and result is not None and result.dtype == np.bool_:
        return ["filter"]

    return [name for name, record in registry.PRIMITIVES.items()
            if record.operator_problem(kernel.name, count, args, result) is None
            and (record.result != "bool" or result is None) and _from_items_alone(record)]


def _from_items_alone(record) -> bool:
    """Whether a panel can run ``record`` from random items alone, its function's signature saying so: not a
    key function (a sort's, a histogram's: a map's signature), nor one whose calls take more arrays (offsets,
    keys) or arguments of their own (bins)."""
    return record.operator.returns != "key_t" and record.arguments is None and not record.keyed


def _type_order(name: str) -> int:
    return ELEMENT_TYPES.index(name) if name in ELEMENT_TYPES else len(ELEMENT_TYPES)

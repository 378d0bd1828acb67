"""Diagnostics with a fix: what in a build costs time, the Python line it comes from, and what to change.

Each check reads the analysed SASS (:mod:`.model`), the resources ptxas
reported and the build's types and options. Kinds:

``float64``      double precision in a kernel whose types have none (a Python float constant)
``call``         a ``CALL`` left in the SASS, with its kind (see :data:`.calls.CALL_KINDS`)
``spill``        registers spilled to local memory
``stack``        a stack frame or other local memory without spills
``unvectorised`` loads that cannot be 16-byte vectors (item size, or a strided/misaligned input)
``index64``      64-bit indexing and what it costs
``occupancy``    resident warps limited by registers or shared memory
``associativity`` a reduce or scan operator whose two groupings differ (:mod:`..associativity`)
"""

from __future__ import annotations

import ast
import textwrap
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from ...kernel import parse
from ...shown import Shown
from ...errors import ArgumentError, described
from ..build import Build, require_build
from .attribution import def_line
from .calls import calls
from .model import analyse
from .pressure import pressure


SEVERITIES = ("warning", "info")
_VECTOR_BYTES = 16


@dataclass(frozen=True)
class Diagnostic:
    """One finding.

    Attributes
    ----------
    kind : str
        See the module docstring.
    severity : {"warning", "info"}
        ``warning``: it costs time that a change in the code would save.
    python_line : int or None
        The Python line it comes from, as its file or cell numbers it (the
        number the Python pane prints beside it, and the one its message
        names); None when it comes from gpulab's template or from the inputs.
    message : str
        What was found.
    fix : str
        What to change.
    evidence : dict
        The figures and instructions behind it (JSON-able).
    """

    kind: str
    severity: str
    python_line: int | None
    message: str
    fix: str
    evidence: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        """The diagnostic as the view's bundle carries it."""
        return {"kind": self.kind, "severity": self.severity, "python_line": self.python_line,
                "message": self.message, "fix": self.fix, "evidence": self.evidence}


class Diagnostics(Shown, list):
    """A list of :class:`Diagnostic`; IPython and Jupyter show it as a table (``gpulab.display.analysis``)."""

    def as_dict(self) -> list[dict]:
        """The diagnostics as the view's bundle carries them."""
        return [d.as_dict() for d in self]


def diagnostics(build: Build, inputs=None) -> Diagnostics:
    """Everything in ``build`` that costs time, each with the Python line and a fix.

    Parameters
    ----------
    build : Build
        What :func:`gpulab.compile` returned.
    inputs : sequence of arrays, optional
        The arrays a run would pass (anything with ``__cuda_array_interface__``
        or ``__array_interface__``, in the function's parameter order): their
        layouts decide whether the template's 16-byte loads apply.

    Returns
    -------
    Diagnostics
        Warnings first, then information, each in Python line order.

    Raises
    ------
    ArgumentError
        When ``build`` is not a build, or ``inputs`` not a sequence of arrays.
    """
    require_build(build, "gpulab.diagnostics")
    if inputs is not None and not isinstance(inputs, (list, tuple)):
        raise ArgumentError(f"gpulab.diagnostics takes inputs= as a list of the arrays a run would pass, not "
                            f"{described(inputs)}")
    found = Diagnostics()
    for check in (_associativity, _float64, _calls, _local_memory, _index64, _occupancy):
        found.extend(check(build))
    found.extend(_unvectorised(build, inputs))
    found.sort(key=lambda d: (SEVERITIES.index(d.severity), d.python_line or 0))
    return found


# ---------------------------------------------------------------- associativity


def _associativity(build: Build) -> list[Diagnostic]:
    found = build.associativity
    if found is None:
        return []
    a, b, c = found.values
    return [Diagnostic("associativity", found.severity, found.line, found.message(build.primitive), found.fix(),
                       {"a": str(a), "b": str(b), "c": str(c), "left": str(found.left), "right": str(found.right),
                        "nonfinite": found.nonfinite})]


# ---------------------------------------------------------------- float64


def _has_float64(element) -> bool:
    return _has_float64_dtype(element.dtype)


def _has_float64_dtype(dtype: np.dtype) -> bool:
    if dtype.fields:
        return any(_has_float64_dtype(f[0]) for f in dtype.fields.values())
    return (dtype.kind == "f" and dtype.itemsize == 8) or (dtype.kind == "c" and dtype.itemsize == 16)


def _touches_float64(row) -> bool:
    return row.klass == "fp64" or (row.klass == "conv" and "F64" in row.instruction.modifiers)


def _line_names(build: Build, line: int) -> tuple[list[str], list[str], list[str]]:
    """Float literals, names and called functions (``math.sin``) written on Python line ``line`` of the build."""
    text = "\n" * (build.python_first_line - 1) + textwrap.dedent(build.python_source)  # numbered as shown
    try:
        tree = parse(text)
    except SyntaxError:
        return [], [], []
    literals, names, called = [], [], []
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) != line:
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, float):
            literals.append(ast.get_source_segment(text, node) or repr(node.value))
        elif isinstance(node, ast.Name):
            names.append(node.id)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            called.append(ast.get_source_segment(text, node.func) or node.func.attr)
    return literals, names, called


def _float64(build: Build) -> list[Diagnostic]:
    if any(_has_float64(t) for t in (*build.inputs, build.result)):
        return []  # float64 was asked for
    rows = [r for r in analyse(build).rows if r.python_line is not None and _touches_float64(r)]
    if not rows:
        return []
    ratio = build.target.limits.fp64_per_fp32
    rate = f"; {build.target} runs FP64 at 1/{round(1 / ratio)} of FP32's rate" if ratio else ""
    uniforms = {name for name, t in build.uniforms if _has_float64(t)}
    by_line: dict[int, list] = {}
    for row in rows:
        by_line.setdefault(row.python_line, []).append(row)
    signature = def_line(build.python_source, build.python_first_line)
    lines = [line for line in by_line if line != signature] or list(by_line)
    result = []
    for line in sorted(lines):
        line_rows = by_line[line] + (by_line.get(signature, []) if line == lines[0] and line != signature else [])
        literals, names, called = _line_names(build, line)
        doubles = [n for n in names if n in uniforms]
        arithmetic = sum(r.klass == "fp64" for r in line_rows)
        conversions = len(line_rows) - arithmetic
        severity = "warning"
        if literals:
            cause = f"{', '.join(f'`{x}`' for x in literals)} is a Python float (float64), so the expression is float64"
            fix = ("write " + ", ".join(f"f32({x})" for x in literals) +
                   " (gpulab.f32) to keep it in float32")
        elif doubles:
            cause = f"the uniform {', '.join(f'`{n}`' for n in doubles)} is a Python float (float64)"
            fix = f"set {', '.join(doubles)} with f32(...) (gpulab.f32) so it is passed as float32"
        elif called:
            severity = "info"
            cause = (f"{', '.join(f'`{c}`' for c in called)} uses float64 inside its float32 routine "
                     "(the slow path for large arguments)")
            fix = "nothing, when the arguments stay small: the slow path then never runs"
        else:
            cause = "a value on this line is float64"
            fix = "convert float64 values with f32(...) (gpulab.f32) before the arithmetic"
        result.append(Diagnostic(
            "float64", severity, line,
            f"line {line} computes in float64: {cause} ({arithmetic} FP64 instructions, "
            f"{conversions} conversions to and from float64{rate}).",
            fix, {"fp64_instructions": arithmetic, "conversions": conversions,
                  "fp64_per_fp32": ratio, "target": build.target.arch, "literals": literals,
                  "sass_lines": [r.instruction.line for r in line_rows][:32],
                  "instructions": sorted({r.instruction.opcode for r in line_rows})}))
    return result


# ---------------------------------------------------------------- calls

_CALL_FIXES = {
    "operator": ("the operator is a called function (a PTX link): its arguments pass through memory and "
                 "nothing around it is optimised with it",
                 "link with LTO (lto=True, the default; %%gpukernel without --no-lto)"),
    "emulated": ("ptxas emulates a warp shuffle or vote whose member mask is a register on this target: "
                 "each one is a call",
                 "use a full member mask (0xffffffff) where the warp is converged; sm_90 and later take "
                 "the same code natively"),
    "slow-path": ("IEEE division, square root or 64-bit integer division: an inline fast path plus a call "
                  "for hard operands, which costs registers and a stack frame even when it never runs",
                  "multiply by a reciprocal computed once (a uniform) where the divisor repeats; "
                  "for integers, `//` and `%` by a power of two become shifts and masks"),
    "math": ("a math library routine that stays a call (for float64 sine and cosine: the argument "
             "reduction of large arguments)",
             "use float32 math where its accuracy is enough, or keep the arguments small"),
    "local": ("ptxas calls a local subroutine inside the kernel (its own choice, for divergent code)",
              "nothing to change in your function"),
    "other": ("a function call the optimiser could not inline", "inline or remove the callee"),
}


def _calls(build: Build) -> list[Diagnostic]:
    result = []
    for call in calls(build):
        what, fix = _CALL_FIXES[call.kind]
        line = max(call.python_lines, key=call.python_lines.get) if call.python_lines else None
        if line is not None:
            where = f"line {line}"
        else:
            cuda = max(call.cuda_lines, key=call.cuda_lines.get) if call.cuda_lines else None
            where = f"gpulab's template, kernel.cu line {cuda}" if cuda else "gpulab's template"
        severity = "info" if call.kind == "local" else "warning"
        if line is None and call.kind != "operator":
            fix, severity = "nothing to change in your function: the call is in gpulab's template", "info"
        result.append(Diagnostic(
            "call", severity, line,
            f"{call.count} CALL {call.target} ({call.label}, from {where}): {what}.", fix,
            {"call_kind": call.kind, "label": call.label, "target": call.target, "count": call.count,
             "python_lines": {str(k): v for k, v in call.python_lines.items()},
             "sass_lines": list(call.sass_lines[:32])}))
    return result


# ---------------------------------------------------------------- local memory


def _local_memory(build: Build) -> list[Diagnostic]:
    found = analyse(build)
    local = [r for r in found.rows if r.klass == "local"]
    peaks = pressure(build)
    result = []
    for kernel in build.kernels:
        resources = build.resources[kernel]
        spills = (resources.spill_stores or 0) + (resources.spill_loads or 0)
        kernel_calls = sum(1 for r in found.kernel_rows(kernel) if r.klass == "call")
        evidence = {"kernel": kernel, "registers": resources.registers, "stack_bytes": resources.stack_bytes,
                    "local_bytes": resources.local_bytes, "spill_stores": resources.spill_stores,
                    "spill_loads": resources.spill_loads, "local_instructions": len(local),
                    "calls": kernel_calls, "sass_lines": [r.instruction.line for r in local][:32]}
        peak = peaks[kernel]
        if spills:
            cap = build.register_cap
            capped = f" under the template's cap of {cap} registers" if cap else ""
            reason = f"; it has {kernel_calls} calls, and each saves registers to the stack" if kernel_calls else ""
            result.append(Diagnostic(
                "spill", "warning", peak.peak_python_line or peak.busiest_python_line,
                f"ptxas spilled registers to local memory: {resources.spill_stores} bytes stored, "
                f"{resources.spill_loads} loaded ({len(local)} LDL/STL){capped}{reason}. "
                f"Pressure peaks at {peak.peak_live} live registers "
                f"({_where(peak.peak_python_line, peak.peak_cuda_line)})"
                + (f"; of the Python lines, line {peak.busiest_python_line} keeps the most live."
                   if peak.busiest_python_line else "."),
                "keep fewer values live at that line: fewer temporaries, float32 instead of float64, "
                "no calls (see the call diagnostics)", {**evidence, "register_cap": cap}))
        elif resources.stack_bytes or resources.local_bytes or local:
            lines = Counter(r.python_line for r in local if r.python_line is not None)
            line = lines.most_common(1)[0][0] if lines else None
            cause = (f"the ABI of its {kernel_calls} calls" if kernel_calls else
                     "a local array (a math routine's table, or an array indexed at run time)")
            result.append(Diagnostic(
                "stack", "info", line,
                f"{kernel} has a {resources.stack_bytes}-byte stack frame and {len(local)} local-memory "
                f"instructions, for {cause}; local memory is as slow as global memory when it misses the cache.",
                "remove the calls (see the call diagnostics)" if kernel_calls else
                "use float32 math, or index arrays with constants", evidence))
    return result


def _where(python_line, cuda_line) -> str:
    if python_line:
        return f"Python line {python_line}"
    return f"kernel.cu line {cuda_line}" if cuda_line else "no source line"


# ---------------------------------------------------------------- vector loads


def _parameters(source: str) -> list[str]:
    try:
        tree = parse(textwrap.dedent(source))
    except SyntaxError:
        return []
    function = next((n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.Lambda))), None)
    return [a.arg for a in function.args.args] if function else []


def _load_widths(build: Build) -> dict[str, int]:
    widths: Counter = Counter()
    for row in analyse(build).rows:
        if row.instruction.stem in ("LDG", "LD"):
            mods = row.instruction.modifiers
            widths[next((f"{m} bits" for m in mods if m in ("64", "128")), "32 bits or less")] += 1
    return dict(widths)


def _layout(array) -> tuple[bool, int]:
    """Whether an array's items are consecutive in memory, and its address."""
    interface = getattr(array, "__cuda_array_interface__", None) or getattr(array, "__array_interface__", None)
    if interface is None:
        raise ArgumentError(f"gpulab.diagnostics' inputs= are arrays (with __cuda_array_interface__ or "
                            f"__array_interface__), not {described(array)}")
    itemsize = np.dtype(interface["typestr"]).itemsize
    shape, strides = interface["shape"], interface.get("strides")
    contiguous = True
    if strides is not None:
        expected = itemsize
        for size, stride in zip(reversed(shape), reversed(strides)):
            if size != 1 and stride != expected:
                contiguous = False
            expected *= size
    return contiguous, interface["data"][0]


def _unvectorised(build: Build, inputs) -> list[Diagnostic]:
    vec = build.geometry.vec
    signature = def_line(build.python_source, build.python_first_line)
    names = _parameters(build.python_source)
    loaded = [(i, t) for i, t in enumerate(build.inputs) if not build.options.iota[i]]
    evidence = {"vector_items": vec, "load_widths": _load_widths(build)}
    result = []
    widest = max(t.itemsize for t in (*build.inputs, build.result))
    for index, element in loaded:
        if vec * element.itemsize >= _VECTOR_BYTES or widest * vec < _VECTOR_BYTES:
            continue
        name = names[index] if index < len(names) else f"input {index}"
        result.append(Diagnostic(
            "unvectorised", "info", signature,
            f"`{name}` ({element.name}) loads {vec * element.itemsize} bytes per vector, not 16: the widest type "
            f"of the kernel ({widest} bytes) sets {vec} items per vector for every input and the output.",
            "give the inputs and the result the same width (e.g. float32 throughout) for 16-byte loads of each",
            {**evidence, "input": index}))
    for (index, element), array in zip(loaded, inputs or ()):
        contiguous, address = _layout(array)
        aligned = address % (element.itemsize * vec) == 0
        if vec == 1 or (contiguous and aligned):
            continue
        name = names[index] if index < len(names) else f"input {index}"
        why = "is strided (its items are not consecutive)" if not contiguous else \
            f"starts at an address that is not a multiple of {element.itemsize * vec} bytes"
        result.append(Diagnostic(
            "unvectorised", "warning", signature,
            f"`{name}` {why}: every item is loaded alone, with its index arithmetic, instead of "
            f"{vec} items per 16-byte load.",
            "pass a contiguous, aligned array (cupy.ascontiguousarray(x), or allocate it so) when it is "
            "read more than once", {**evidence, "input": index, "contiguous": contiguous, "aligned": aligned}))
    return result


# ---------------------------------------------------------------- index width and occupancy

_WIDE_INTEGER = {"X", "EX", "U64", "S64"}


def _index64(build: Build) -> list[Diagnostic]:
    if build.options.index_bits != 64:
        return []
    rows = [r for r in analyse(build).rows if r.klass == "int" and _WIDE_INTEGER & set(r.instruction.modifiers)]
    registers = {k: r.registers for k, r in build.resources.items()}
    division = sum(c.count for c in calls(build) if c.kind == "slow-path" and not c.python_lines)
    divisions = f", and {division} calls of 64-bit integer division index strided inputs" if division else ""
    return [Diagnostic(
        "index64", "info", None,
        f"64-bit indices (gpulab picks them when a size or offset passes 2^31 - 1): {len(rows)} instructions "
        f"carry high halves (IADD3.X, ISETP.EX, LEA.HI.X, ...){divisions}; registers {registers}.",
        "nothing to change for inputs that large; below 2^31 items the 32-bit kernel runs",
        {"wide_integer_instructions": len(rows), "index_divisions": division, "registers": registers,
         "sass_lines": [r.instruction.line for r in rows][:32]})]


def _occupancy(build: Build) -> list[Diagnostic]:
    result = []
    for kernel, found in pressure(build).items():
        now = found.occupancy
        if now.fraction >= 1 or now.limited_by not in ("registers", "shared memory"):
            continue
        cap = build.register_cap
        capped = f"; the template caps registers at {cap} on purpose, for this many blocks" if cap else ""
        line = found.peak_python_line if now.limited_by == "registers" else None
        message = f"{kernel}: {found.summary()} Occupancy is limited by {now.limited_by}"
        severity = "info" if cap or now.fraction > 0.5 else "warning"
        if now.limited_by == "registers" and not build.options.lto:
            message += "."
            fix = "link with LTO: a called operator needs registers for the call ABI" + capped
        elif line is not None:
            message += "."
            fix = f"keep fewer values live ({_where(line, None)} is the peak)" + capped
        else:  # the template's own code or its shared memory: nothing the user wrote
            severity = "info"
            what = "its own code holds the peak" if now.limited_by == "registers" else "its shared memory per block"
            message += f", which gpulab's template sets ({what}), not your function: for information."
            fix = "nothing to change in your function" + capped
        result.append(Diagnostic("occupancy", severity, line, message, fix, {"kernel": kernel, **found.as_dict()}))
    return result

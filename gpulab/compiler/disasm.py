"""Disassembly: cubin -> SASS with line info (nvdisasm) and resource usage (cuobjdump)."""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass

from ..errors import DisassemblerError, ToolkitNotFoundError


@dataclass(frozen=True)
class Resources:
    """What one kernel uses per thread and per block."""

    registers: int
    shared_bytes: int
    stack_bytes: int
    local_bytes: int
    spill_stores: int | None
    spill_loads: int | None

    def as_dict(self) -> dict:
        """Return the fields as a plain dict."""
        return asdict(self)


@functools.lru_cache(maxsize=None)
def tool_path(name: str) -> str:
    """Return the path of a CUDA binary utility (``nvdisasm``, ``cuobjdump``).

    Raises
    ------
    ToolkitNotFoundError
        Naming the package that provides it.
    """
    try:
        from cuda.pathfinder import find_nvidia_binary_utility

        found = find_nvidia_binary_utility(name)
    except Exception:  # an older pathfinder without binary utilities
        found = None
    found = found or shutil.which(name)
    if not found:
        raise ToolkitNotFoundError(
            f"{name} was not found: pip install 'cuda-toolkit[{name}]==13.*' "
            "(or put a CUDA toolkit's bin folder on PATH)"
        )
    return found


def _run_on_cubin(tool: str, arguments: list[str], cubin: bytes) -> str:
    return _runs_on_cubin(tool, [arguments], cubin)[0]


def _runs_on_cubin(tool: str, runs: list[list[str]], cubin: bytes) -> list[str]:
    """Run ``tool`` once per argument list on ``cubin``, side by side; return each stdout."""
    with tempfile.TemporaryDirectory(prefix="gpulab-") as folder:
        path = os.path.join(folder, "kernel.cubin")
        with open(path, "wb") as file:
            file.write(cubin)
        with ThreadPoolExecutor(len(runs)) as pool:
            results = list(pool.map(lambda arguments: subprocess.run(
                [tool_path(tool), *arguments, path], capture_output=True, text=True), runs))
    for result in results:
        if result.returncode != 0:
            raise DisassemblerError(f"{tool} failed on the linked cubin", result.stderr or result.stdout)
    return [result.stdout for result in results]


def disassemble_with_live_registers(cubin: bytes) -> tuple[str, str]:
    """Return ``nvdisasm -c -gi`` (SASS with its inlined source lines) and ``nvdisasm -c -lrm count`` of
    ``cubin``, run side by side: each run takes about 0.27 s however small the cubin.

    The second prints the live registers of each kind at every instruction;
    nvdisasm ignores line info in that mode, hence two runs.
    """
    with_lines, live = _runs_on_cubin("nvdisasm", [["-c", "-gi"], ["-c", "-lrm", "count"]], cubin)
    return without_uncalled_functions(with_lines), live


_FUNCTION_HEADER = re.compile(r"^//-+ \.text\.(\S+)\s+-+\s*$", re.MULTILINE)
_CALL = re.compile(r"\bCALL\.[A-Z.]+\s+([^;]*);")
CALL_TARGET = re.compile(r"`\(([^)]+)\)")
"""The function a ``CALL`` instruction's operands name (``CALL.REL.NOINC `(__cuda_sm70_shflsync_down_p)``)."""


def without_uncalled_functions(sass: str) -> str:
    """Return ``nvdisasm -c`` output without the functions no kernel reaches through a ``CALL``, and a
    comment naming them.

    The linker keeps the warp-intrinsic emulations of sm_70 (``__cuda_sm70_shflsync_down_p``) in an
    sm_80-89 cubin whether or not a kernel calls them; shown, they would open the SASS pane and count
    as its instructions. With a call whose target nvdisasm does not name (through a register), every
    function is kept.
    """
    headers = list(_FUNCTION_HEADER.finditer(sass))
    ends = [h.start() for h in headers[1:]] + [len(sass)]
    blocks = {h.group(1): sass[h.start():end] for h, end in zip(headers, ends)}
    reached = [name for name, text in blocks.items() if "STO_CUDA_ENTRY" in text]
    for name in reached:  # grows while it is walked: a breadth-first search
        for call in _CALL.finditer(blocks[name]):
            target = CALL_TARGET.search(call.group(1))
            if target is None:
                return sass
            if target.group(1) in blocks and target.group(1) not in reached:
                reached.append(target.group(1))
    uncalled = [name for name in blocks if name not in reached]
    if not reached or not uncalled:
        return sass
    note = (f"// Not shown: {len(uncalled)} function(s) in the cubin that no kernel calls:\n"
            + "".join(f"//   {name}\n" for name in uncalled) + "\n")
    return sass[:headers[0].start()] + note + "".join(blocks[name] for name in blocks if name in reached)


_FUNCTION = re.compile(r"Function (\S+):\s*\n\s*(.*)")
_FIELD = re.compile(r"(\w+(?:\[\d+\])?):(\d+)")
_SPILLS = re.compile(
    r"Function properties for (\S+)\s*\n[^\n]*?(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads"
)


def resource_usage(cubin: bytes, info_log: str, kernels) -> dict[str, Resources]:
    """Return each kernel's :class:`Resources`, from ``cuobjdump -res-usage`` and the ptxas report.

    Parameters
    ----------
    cubin : bytes
        The linked cubin.
    info_log : str
        nvJitLink's ``-verbose`` info log (ptxas' spill report).
    kernels : iterable of str
        The kernels to report (``__global__`` functions).
    """
    report = _run_on_cubin("cuobjdump", ["-res-usage"], cubin)
    spills = {m.group(1): (int(m.group(3)), int(m.group(4))) for m in _SPILLS.finditer(info_log)}
    usage = {}
    for match in _FUNCTION.finditer(report):
        name, fields = match.group(1), dict(_FIELD.findall(match.group(2)))
        if name not in kernels:
            continue
        # Some nvJitLink versions leave ptxas' spill line out of the report: unknown, not zero.
        stores, loads = spills.get(name, (None, None))
        usage[name] = Resources(
            registers=int(fields.get("REG", 0)),
            shared_bytes=int(fields.get("SHARED", 0)),
            stack_bytes=int(fields.get("STACK", 0)),
            local_bytes=int(fields.get("LOCAL", 0)),
            spill_stores=stores,
            spill_loads=loads,
        )
    return usage

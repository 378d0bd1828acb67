"""Stopping a kernel's host run from outside: every loop of its host code checks a flag the runner sets.

The host backend runs a kernel's operator compiled by numba, where Python's
signal handlers do not run: a kernel whose loop never ends would ignore
Ctrl-C and any time limit. So the host's code of a kernel (never the
device's) takes one more parameter, a one-byte flag, and each ``while`` and
``for`` body starts with::

    if _gpulab_stopped(_gpulab_stop):
        raise Stopped(LINE)

A call of another kernel passes the flag on. The runner
(:mod:`gpulab.host.run`) sets the flag on Ctrl-C or when a time limit
passes; the loop that sees it raises :class:`Stopped`, naming its line. A
kernel without a loop runs each item in bounded time, so a run stops
within one loop step or one item.
"""

from __future__ import annotations

import ast
import functools

FLAG_NAME = "_gpulab_stop"
"""The hidden last parameter of a kernel's host code: the flag its loops check."""
CHECK_NAME = "_gpulab_stopped"
STOPPED_NAME = "_gpulab_Stopped"


class Stopped(Exception):
    """Raised by a loop of a kernel's host code that found its flag set; ``args[0]`` is the loop's line."""


def rewrite_loops(definition: ast.FunctionDef, kernel_names) -> None:
    """Make each loop of ``definition`` check the flag, and each call of a kernel pass it on (in place).

    Parameters
    ----------
    definition : ast.FunctionDef
        The kernel's definition.
    kernel_names : collection of str
        The names bound to other kernels: their calls get the flag as a last argument.
    """
    for node in ast.walk(definition):
        if isinstance(node, (ast.While, ast.For)):
            check = ast.If(
                test=ast.Call(func=ast.Name(id=CHECK_NAME, ctx=ast.Load()),
                              args=[ast.Name(id=FLAG_NAME, ctx=ast.Load())], keywords=[]),
                body=[ast.Raise(exc=ast.Call(func=ast.Name(id=STOPPED_NAME, ctx=ast.Load()),
                                             args=[ast.Constant(node.lineno)], keywords=[]), cause=None)],
                orelse=[])
            for part in ast.walk(check):
                ast.copy_location(part, node)
            node.body.insert(0, check)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in kernel_names:
            node.args.append(ast.copy_location(ast.Name(id=FLAG_NAME, ctx=ast.Load()), node))


def _stopped(flag) -> bool:
    return flag[0] != 0


def python_checks() -> dict[str, object]:
    """What the interpreted host code binds: the check and the exception."""
    return {CHECK_NAME: _stopped, STOPPED_NAME: Stopped}


@functools.cache
def cpu_checks() -> dict[str, object]:
    """The same for numba's CPU code: a check that loads the flag atomically on every call, so that the
    compiler can neither hoist it out of a loop nor drop the loop (numba is imported on first use)."""
    from llvmlite import ir
    from numba.core import types
    from numba.extending import intrinsic

    @intrinsic
    def stopped(typingctx, flag):
        def codegen(context, builder, signature, args):
            data = context.make_array(flag)(context, builder, args[0]).data
            value = builder.load_atomic(data, "monotonic", 1)
            return builder.icmp_unsigned("!=", value, ir.Constant(value.type, 0))

        return types.boolean(flag), codegen

    return {CHECK_NAME: stopped, STOPPED_NAME: Stopped}


def flag_type():
    """The flag's numba type: a one-item C-contiguous uint8 array."""
    from numba.core import types

    return types.Array(types.uint8, 1, "C")

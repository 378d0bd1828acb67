"""Layers import one way (docs/architecture.md): every import of every module, at any depth, is checked."""

import ast
from pathlib import Path

import pytest

import gpulab

PACKAGE = Path(gpulab.__file__).parent
CORE = {"gpulab.errors", "gpulab.types", "gpulab.iota", "gpulab.kernel", "gpulab.purity", "gpulab.lru",
        "gpulab._numba_compat", "gpulab.device", "gpulab.cache", "gpulab.registry", "gpulab.cxx",
        "gpulab.progress", "gpulab.shown", "gpulab.captures", "gpulab.mapped", "gpulab.conversion", "gpulab.stops",
        "gpulab.options"}
# A layer may import itself, the core, and the layers listed for it.
ALLOWED = {
    "core": set(),
    "compiler": set(),
    "display": set(),
    "host": set(),
    "runtime": {"compiler"},
    "primitives": {"compiler", "runtime", "host", "display"},
    "bench": {"compiler", "runtime", "host", "display", "primitives"},
    "profiler": {"compiler", "runtime", "host", "display", "primitives"},
    "notebook": {"compiler", "runtime", "host", "display", "primitives", "bench", "profiler"},
    "application": {"compiler", "runtime", "host", "display", "primitives", "bench", "profiler", "notebook"},
}
DISPLAY_CORE = {"gpulab.errors"}  # renderers know nothing of builds, devices or kernels
HOST_COMPILER = {"gpulab.compiler.frontend"}  # only its check(): the host accepts what a device build accepts


def layer_of(module: str) -> str:
    if module.endswith(".__main__"):  # a command line is an application: it may use every layer
        return "application"
    if module in CORE or module.rpartition(".")[0] in CORE:  # a core package's modules are core too
        return "core"
    if module in ("gpulab.bench", "gpulab.plot"):
        return "bench"
    return module.split(".")[1]


def modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        if name != "gpulab":
            yield name, path


def imported(name: str, path: Path) -> set[str]:
    """Every gpulab module ``name`` imports, inside functions too, relative imports resolved."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in node.names}
    return {m for m in found if m.split(".")[0] == "gpulab" and _is_module(m)}


def _is_module(module: str) -> bool:
    relative = Path(*module.split(".")[1:])
    return (PACKAGE / relative).with_suffix(".py").exists() or (PACKAGE / relative / "__init__.py").exists()


@pytest.mark.parametrize(("name", "path"), list(modules()), ids=lambda v: v if isinstance(v, str) else "")
def test_imports_go_one_way(name, path):
    layer = layer_of(name)
    allowed = ALLOWED[layer] | {layer, "core"}
    for module in imported(name, path) - {"gpulab"}:
        if layer == "display" and layer_of(module) == "core":
            assert module in DISPLAY_CORE, f"{name} (display) imports {module}"
            continue
        if layer == "host" and module in HOST_COMPILER:
            continue
        assert layer_of(module) in allowed, f"{name} ({layer}) imports {module} ({layer_of(module)})"


def test_the_checker_sees_imports_inside_functions():
    found = imported("gpulab.compiler.target", PACKAGE / "compiler" / "target.py")
    assert {"gpulab.compiler.link", "gpulab.compiler.nvrtc", "gpulab.device"} <= found

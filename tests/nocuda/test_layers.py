"""Layers import one way (docs/architecture.md): every import of every module, at any depth, is checked."""

import ast
from pathlib import Path

import pytest

import gpulab

PACKAGE = Path(gpulab.__file__).parent
CORE = {"gpulab.errors", "gpulab.types", "gpulab.iota", "gpulab.kernel", "gpulab.purity", "gpulab.lru",
        "gpulab.device", "gpulab.cache", "gpulab.registry", "gpulab.cxx",
        "gpulab.progress", "gpulab.shown", "gpulab.captures", "gpulab.mapped", "gpulab.conversion", "gpulab.stops",
        "gpulab.options", "gpulab.interpreted"}
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
# only numba-cuda's check(): the host accepts what a device build accepts (and the packages an import of it runs)
HOST_COMPILER = {"gpulab.compiler.frontends.numba_cuda"}


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
    assert "gpulab.device" in found  # imported where the current device is asked for, inside a function


def import_graph(prefix: str) -> dict[str, set[str]]:
    """Module -> the modules of ``prefix`` it imports (inside functions and ``TYPE_CHECKING`` blocks too), each
    with the packages whose ``__init__`` an import runs first (``a.b.c`` from outside ``a.b`` runs ``a.b``)."""
    graph = {}
    for name, path in modules():
        if not name.startswith(prefix):
            continue
        own = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found = set()
        for module in imported(name, path):
            parts = module.split(".")
            found |= {".".join(parts[:k]) for k in range(2, len(parts) + 1)
                      if not (own + ".").startswith(".".join(parts[:k]) + ".")}
        graph[name] = {m for m in found if m.startswith(prefix) and m != name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in graph.get(node, ()):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_compiler_has_no_import_circle():
    """The compiler's modules import one way (a Build is data; the analysis reads it), with no circle held
    together by an import inside a function or under TYPE_CHECKING."""
    assert circles(import_graph("gpulab.compiler")) == []


def test_the_circle_check_finds_a_circle_through_a_function_or_a_package():
    graph = import_graph("gpulab.compiler")
    graph["gpulab.compiler.target"] = graph["gpulab.compiler.target"] | {"gpulab.compiler.toolchain"}
    assert any({"gpulab.compiler.target", "gpulab.compiler.toolchain"} <= set(found) for found in circles(graph))
    assert circles({"a.x": {"a.p"}, "a.p": {"a.p.y"}, "a.p.y": {"a.x"}}) == [["a.p", "a.p.y", "a.x"]]

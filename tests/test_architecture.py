"""The package's shape, checked: the library (everything but the pytest plugin and the command line) never
imports the plugin, the CLI or pytest, and no module imports itself back through others, also through
imports inside functions (a circle hidden that way is still a circle)."""

from __future__ import annotations

import ast
from pathlib import Path

import perfgate

PACKAGE = Path(perfgate.__path__[0])
ADAPTERS = ("perfgate.pytest_plugin", "perfgate.cli")  # thin packages over the library
ENTRY_POINTS = {"perfgate.__main__"}  # `python -m perfgate` runs the CLI


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, set[str]]:
    """Every perfgate module -> the perfgate modules (and 'pytest') it imports, wherever the import is."""
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                deps.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                # `from pkg import submodule` imports the submodule; any other name comes from pkg itself
                for alias in node.names:
                    sub = f"{node.module}.{alias.name}"
                    deps.add(sub if sub in modules else node.module)
        graph[name] = {_owner(d, modules) for d in deps if d.split(".")[0] in ("perfgate", "pytest", "_pytest")}
    return graph


def _owner(dotted: str, modules: dict[str, Path]) -> str:
    """The module an import names (`perfgate.store.Store` -> `perfgate.store`); pytest collapses to 'pytest'."""
    if dotted.split(".", maxsplit=1)[0] in ("pytest", "_pytest"):
        return "pytest"
    while dotted not in modules and "." in dotted:
        dotted = dotted.rsplit(".", 1)[0]
    return dotted


def _is_adapter(name: str) -> bool:
    return any(name == a or name.startswith(a + ".") for a in ADAPTERS)


def test_the_library_never_imports_the_plugin_the_cli_or_pytest():
    offenders = sorted(
        f"{mod} imports {dep}"
        for mod, deps in _modules().items()
        if not _is_adapter(mod) and mod not in ENTRY_POINTS
        for dep in deps
        if _is_adapter(dep) or dep == "pytest"
    )
    assert offenders == []


def test_the_cli_never_imports_the_pytest_plugin():
    offenders = sorted(
        f"{mod} imports {dep}"
        for mod, deps in _modules().items()
        if mod.startswith("perfgate.cli")
        for dep in deps
        if dep.startswith("perfgate.pytest_plugin")
    )
    assert offenders == []


def test_no_import_cycle():
    graph = {m: {d for d in deps if d != "pytest" and d != m} for m, deps in _modules().items()}
    cycles = [sorted(c) for c in _strongly_connected(graph) if len(c) > 1]
    assert cycles == []


def _strongly_connected(graph: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's algorithm, iteratively (no recursion limit at any package size)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[set[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                out.append(component)
    return out


def test_the_cycle_check_finds_a_circle_hidden_in_a_function():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert [sorted(c) for c in _strongly_connected(graph) if len(c) > 1] == [["a", "b", "c"]]

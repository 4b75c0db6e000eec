"""The floors hold: no import circles among the project's modules, counting imports inside
functions too (a lazy import is still a dependency). The layering itself is checked by
`lint-imports` against the contracts in pyproject.toml (tox -e lint)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Each folder of the repository and the package it installs as (setup.py).
PACKAGES = {"conformance": "tcgen05_conformance", "oracles": "tcgen05_conformance.oracles",
            "generators": "tcgen05_conformance.generators", "device": "tcgen05_conformance.device",
            "probes": "tcgen05_conformance.probes"}


def module_files() -> dict[str, Path]:
    """Dotted module name -> file, for every module of the project's packages."""
    modules = {}
    for folder, package in PACKAGES.items():
        for path in (ROOT / folder).rglob("*.py"):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            modules[".".join([package, *(parts[:-1] if parts[-1] == "__init__" else parts)])] = path
    return modules


def imported_modules(name: str, path: Path, known: set[str]) -> set[str]:
    """The project modules `name` imports anywhere in its source (module level or inside functions)."""
    is_package = path.name == "__init__.py"
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".") if is_package else name.split(".")[:-1]
                anchor = anchor[:len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base)
    return {m for m in found if m in known and m != name}


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components with more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return components


def import_graph() -> dict[str, set[str]]:
    modules = module_files()
    return {name: imported_modules(name, path, set(modules)) for name, path in modules.items()}


def test_the_graph_sees_function_level_imports():
    graph = import_graph()
    # conformance/__main__.py imports the CLI; the CLI's handlers import the harness lazily.
    assert "tcgen05_conformance.cli" in graph["tcgen05_conformance.__main__"] or any(
        m.startswith("tcgen05_conformance.cli") for m in graph["tcgen05_conformance.__main__"])
    assert sum(len(targets) for targets in graph.values()) > 300


def test_a_planted_circle_is_found():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert strongly_connected(graph) == [["a", "b", "c"]]


@pytest.mark.parametrize("folder", PACKAGES)
def test_no_import_circles(folder):
    files = module_files()
    circles = [c for c in strongly_connected(import_graph()) if any(ROOT / folder in files[m].parents for m in c)]
    assert not circles, f"import circles: {circles}"

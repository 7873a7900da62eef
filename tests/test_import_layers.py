"""The simulator's modules import one way: no two modules of ``tiersweep.core`` import each
other, directly or round a loop (annotations included), and the ground-floor records import
nothing of the package."""

from __future__ import annotations

import ast
from pathlib import Path

import tiersweep.core

CORE = Path(tiersweep.core.__file__).resolve().parent


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(CORE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path, modules: set[str]) -> set[str]:
    """The package's modules ``path`` imports anywhere in its text (lazy and annotation-only
    imports too: each is a tie a reader must follow)."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package.split(".")
            base = base[: len(base) - node.level + 1]
            target = ".".join(base + ([node.module] if node.module else []))
            candidates = [target] + [f"{target}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("tiersweep."):
            target = node.module.removeprefix("tiersweep.")
            candidates = [target] + [f"{target}.{alias.name}" for alias in node.names]
        else:
            continue
        found.update(c for c in candidates if c in modules and c != name)
    return found


def import_graph() -> dict[str, set[str]]:
    """Module -> the modules of ``tiersweep.core`` it imports (package faces, the
    ``__init__`` modules that only hand names on, are left out: importing a subpackage runs
    its face, which is not a tie between two rooms)."""
    files = {_module_name(p): p for p in CORE.rglob("*.py") if p.name != "__init__.py"}
    return {name: _imports(path, set(files)) for name, path in files.items()}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in graph[node]:
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_module_of_the_simulator_imports_round_a_circle():
    assert circles(import_graph()) == []


def test_the_job_record_imports_nothing_of_the_package():
    assert import_graph()["core.jobs"] == set()


def test_the_circle_finder_finds_a_circle():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]

"""The package's import graph: no cycle between modules, no private name imported from another module.

Every `import` of a `pipeline` module counts, at module level or inside a function (a lazy import is still a
dependency); imports under `if TYPE_CHECKING:` do not (they never run). `from pipeline.a import b` is an edge to
`pipeline.a.b` when that is a module, else to `pipeline.a`.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "pipeline"


def modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _type_checking_only(tree: ast.Module) -> set[int]:
    """The ids of every node inside an `if TYPE_CHECKING:` body."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for stmt in node.body:
                skip.update(id(n) for n in ast.walk(stmt))
    return skip


def _owner(name: str, mods: dict[str, Path]) -> str | None:
    """The module `name` is, or the nearest package above it."""
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None


def imports(mods: dict[str, Path]) -> tuple[nx.DiGraph, list[str]]:
    """The import graph (an edge per import, with its file and line) and every private name imported across."""
    graph: nx.DiGraph = nx.DiGraph()
    graph.add_nodes_from(mods)
    private: list[str] = []
    for name, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = _type_checking_only(tree)
        where = path.relative_to(ROOT)
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("pipeline"):
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    targets.append(full if full in mods else node.module)
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        private.append(f"{where}:{node.lineno}: {alias.name} from {node.module}")
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names if a.name.startswith("pipeline")]
            for target in targets:
                owner = _owner(target, mods)
                if owner and owner != name:
                    graph.add_edge(name, owner, at=f"{where}:{node.lineno}")
    return graph, private


def test_the_graph_sees_every_module_and_lazy_imports():
    """The scan itself: it reads imports inside functions, and leaves TYPE_CHECKING ones out."""
    mods = modules()
    graph, _ = imports(mods)
    assert len(mods) > 100 and "pipeline.world.domain" in graph
    # Domain.capability falls back to the generic capabilities through an import inside the method
    assert graph.has_edge("pipeline.world.domain", "pipeline.explore.generic")
    # pipeline.world.tables names Domain only for the type checker
    assert not graph.has_edge("pipeline.world.tables", "pipeline.world.domain")


def test_no_import_cycle():
    graph, _ = imports(modules())
    cycles = []
    for component in nx.strongly_connected_components(graph):
        if len(component) > 1:
            cycle = nx.find_cycle(graph.subgraph(component))
            cycles.append(" -> ".join(f"{u} ({graph.edges[u, v]['at']})" for u, v in cycle) + f" -> {cycle[0][0]}")
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_no_private_name_imported_across_modules():
    _, private = imports(modules())
    assert not private, "private names imported from another module:\n" + "\n".join(private)

"""The package's import graph: packages in layers, no cycle between modules, no private name imported across.

Every `import` of a `pipeline` module counts, at module level or inside a function (a lazy import is still a
dependency); imports under `if TYPE_CHECKING:` do not (they never run). `from pipeline.a import b` is an edge to
`pipeline.a.b` when that is a module, else to `pipeline.a`. Importing `pipeline.a.b` from outside `pipeline.a`
first runs `pipeline/a/__init__.py`: that is an edge too.
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
        where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
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
                for package in _packages_entered(name, owner or "", mods):
                    graph.add_edge(name, package, at=f"{where}:{node.lineno} (runs {package}'s __init__)")
    return graph, private


def _packages_entered(importer: str, target: str, mods: dict[str, Path]) -> list[str]:
    """The packages whose `__init__` importing `target` runs first: each one above it that `importer` is not in."""
    parts = target.split(".")
    above = [".".join(parts[:i]) for i in range(2, len(parts))]
    return [p for p in above if p in mods and p != importer and not importer.startswith(p + ".")]


def test_the_graph_sees_every_module_and_lazy_imports():
    """The scan itself: it reads imports inside functions, and leaves TYPE_CHECKING ones out."""
    mods = modules()
    graph, _ = imports(mods)
    assert len(mods) > 100 and "pipeline.world.domain" in graph
    # `agentloop rollout` imports the runner inside the command
    assert graph.has_edge("pipeline.cli.rollout", "pipeline.rollout")
    # importing pipeline.grading.grader from outside grading first runs grading's __init__
    assert graph.has_edge("pipeline.trials.trial", "pipeline.grading")
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


LAYERS: list[tuple[str, ...]] = [
    ("errors", "progress", "strict", "digest", "jsondepth", "lazy"),  # the package's own bottom modules
    ("protocol",),  # the boundaries to the outside: an environment's six functions
    ("world", "outputs"),  # the stateful world and its tools; outputs written atomically
    ("dataset",),  # tasks (and their set-up and gold replay in a world)
    ("rollout",),  # an episode: the trajectory, the participants' protocols, the runner
    ("formats",),  # how a conversation is rendered for a model and read back
    ("endpoint",),  # an OpenAI-compatible endpoint's client
    ("users",),  # simulated customers
    ("grading",),  # the verdict from the state an episode leaves; the failure modes
    ("agents", "authoring", "environment", "metrics", "trials"),  # agents (which plant the modes), writing tasks, …
    ("curate", "explore", "gate", "measure", "programs", "serve", "target", "tracking", "train"),
    ("report", "synth", "tau2"),
    ("domains",),  # the built-in domains: plug-ins, loaded by name
    ("embedded",),  # the embedded default: a retail model built by the loop
    ("loop",),
    ("cli",),
]
"""Each package imports only packages of lower layers (bottom first); `pipeline/__init__.py` imports none."""


def _package(module: str) -> str:
    return module.split(".")[1] if module.count(".") else module


def test_every_package_has_a_layer():
    placed = {p for layer in LAYERS for p in layer}
    packages = {_package(m) for m in modules() if m != "pipeline"}
    assert packages - placed == set(), "place each new package in a layer of LAYERS"
    assert placed - packages == set(), "LAYERS names a package that does not exist"


def upward(graph: nx.DiGraph) -> list[str]:
    """Every import of a package in the same or a higher layer, with where it is."""
    level = {p: i for i, layer in enumerate(LAYERS) for p in layer}
    wrong = []
    for u, v, data in graph.edges(data=True):
        a, b = _package(u), _package(v)
        if a != b and b != "pipeline" and level.get(a, -1) <= level.get(b, -1):
            wrong.append(f"{a} (layer {level.get(a)}) -> {b} (layer {level.get(b)}): {data['at']}")
    return sorted(wrong)


def test_packages_import_only_lower_layers():
    graph, _ = imports(modules())
    wrong = upward(graph)
    assert not wrong, "imports of a package in the same or a higher layer:\n" + "\n".join(wrong)


def test_no_package_cycle():
    graph, _ = imports(modules())
    packages: nx.DiGraph = nx.DiGraph()
    packages.add_edges_from((_package(u), _package(v)) for u, v in graph.edges if _package(u) != _package(v))
    assert list(nx.simple_cycles(packages)) == []


def test_the_layer_check_sees_an_upward_import(tmp_path):
    """A world module importing grading inside a function is caught, with its file and line."""
    mods = modules()
    fake = tmp_path / "tools.py"
    fake.write_text("def f():\n    from pipeline.grading.static_checks import call_key\n", encoding="utf-8")
    mods["pipeline.world.fake"] = fake
    graph, _ = imports(mods)
    assert graph.has_edge("pipeline.world.fake", "pipeline.grading.static_checks")
    assert graph.has_edge("pipeline.world.fake", "pipeline.grading")  # grading's __init__ runs first
    assert upward(graph) == [
        f"world (layer 2) -> grading (layer 8): {fake}:2",
        f"world (layer 2) -> grading (layer 8): {fake}:2 (runs pipeline.grading's __init__)",
    ]


def _exports(init: Path) -> dict[str, str]:
    """Name → the module it comes from, for each name a package's `__init__` lists in `__all__`."""
    tree = ast.parse(init.read_text(encoding="utf-8"))
    listed: set[str] = set()
    source: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(ast.unparse(t) == "__all__" for t in node.targets):
            listed = set(ast.literal_eval(node.value))
        elif isinstance(node, ast.ImportFrom) and node.module:
            source.update({a.asname or a.name: node.module for a in node.names})
    return {name: source.get(name, "") for name in listed}


def test_a_name_a_package_exports_is_imported_from_the_package():
    """Across packages, what a package lists in `__all__` comes from the package, not from the module behind it."""
    mods = modules()
    exports = {name: _exports(path) for name, path in mods.items() if path.name == "__init__.py"}
    past = []
    for name, path in mods.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").count(".") >= 2):
                continue
            package = ".".join(node.module.split(".")[:2])
            if _package(package) == _package(name) or package not in exports:
                continue
            named = sorted(a.name for a in node.names if exports[package].get(a.name) == node.module)
            if named:
                past.append(f"{path.relative_to(ROOT)}:{node.lineno}: {', '.join(named)} from {node.module}")
    assert not past, "import these from their package:\n" + "\n".join(past)

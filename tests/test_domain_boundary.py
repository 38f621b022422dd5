"""The generic packages reach a domain only through the boundary (pipeline.world.domain / registry): no import of a
domain package, at module level or inside a function."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOMAIN_SIDE = ("domains", "embedded")  # the embedded default is a retail model by design
GENERIC = tuple(
    sorted(p.name for p in (ROOT / "pipeline").iterdir() if (p / "__init__.py").exists() and p.name not in DOMAIN_SIDE)
)
DOMAIN_PACKAGES = ("pipeline.domains.retail", "pipeline.domains")


def _imports(source: str, package: str) -> list[tuple[int, str]]:
    """(line, module) of every import in a module's source, relative imports resolved against its package."""
    tree = ast.parse(source)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            out += [(node.lineno, base)] + [(node.lineno, f"{base}.{a.name}") for a in node.names]
    return out


def _domain(module: str) -> bool:
    return any(module == d or module.startswith(d + ".") for d in DOMAIN_PACKAGES)


def _domain_imports(files: list[Path]) -> list[str]:
    out = []
    for f in files:
        rel = f.relative_to(ROOT)
        package = ".".join(rel.with_suffix("").parts[:-1])
        out += [f"{rel}:{n}: {m}" for n, m in _imports(f.read_text(encoding="utf-8"), package) if _domain(m)]
    return sorted(out)


@pytest.mark.parametrize("package", GENERIC)
def test_generic_package_imports_no_domain(package):
    files = sorted((ROOT / "pipeline" / package).rglob("*.py"))
    assert files, f"pipeline/{package} has no modules"
    assert _domain_imports(files) == []


def test_cli_entry_points_import_no_domain():
    files = sorted((ROOT / "pipeline" / "cli").rglob("*.py"))
    assert len(files) > 10, "pipeline/cli is the agentloop command's package"
    assert _domain_imports(files) == []


def test_the_check_sees_function_level_relative_and_plain_imports():
    source = (
        "import pipeline.domains.retail.tools as t\n"
        "def f():\n    from pipeline.domains.retail.schema import CANCEL_REASONS\n"
        "from ..domains import airline\n"
        "from ..world import registry\n"
    )
    found = sorted((n, m) for n, m in _imports(source, "pipeline.report") if _domain(m))
    assert found == [
        (1, "pipeline.domains.retail.tools"),
        (3, "pipeline.domains.retail.schema"),
        (3, "pipeline.domains.retail.schema.CANCEL_REASONS"),
        (4, "pipeline.domains"),
        (4, "pipeline.domains.airline"),
    ]


EMBEDDED_USERS = ("cli", "loop")  # they build and measure the embedded default


def _reached(graph, module: str, forbidden) -> str | None:
    import networkx as nx

    hits = sorted(d for d in nx.descendants(graph, module) if forbidden(d))
    return f"{module} -> {' -> '.join(nx.shortest_path(graph, module, hits[0])[1:])}" if hits else None


def test_no_generic_module_reaches_a_domain_indirectly():
    """Following imports through every module (package `__init__`s included): no generic module reaches a domain
    or the embedded default (a retail model by design), but the commands and the loop, which reach the embedded
    default and through it only."""
    from tests.test_import_graph import imports, modules

    graph, _ = imports(modules())
    without_embedded = graph.subgraph(n for n in graph if not n.startswith("pipeline.embedded"))
    reached = []
    for module in graph:
        package = module.split(".")[1] if module.count(".") else ""
        if package in EMBEDDED_USERS:
            reached.append(_reached(without_embedded, module, _domain))
        elif package in GENERIC:
            reached.append(_reached(graph, module, lambda m: _domain(m) or m.startswith("pipeline.embedded")))
    assert [r for r in reached if r] == []


def test_loading_a_checkpoint_imports_no_domain():
    """What runs: importing the checkpoint format and the model backends leaves every domain unloaded."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "import pipeline.agents.checkpoint, pipeline.agents.backends.loading, pipeline.agents.backends.gguf\n"
        "import pipeline.agents.backends.hf, pipeline.train.sft_base\n"
        "print(sorted(m for m in sys.modules if m.startswith(('pipeline.domains', 'pipeline.embedded'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]"

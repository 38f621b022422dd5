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

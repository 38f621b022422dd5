"""No generic module names a domain's tool in its code: every string literal outside docstrings, in every package
but `pipeline/domains` and `pipeline/embedded` (the embedded default is a retail model by design), is checked
against the tool names of every registered domain. The import rule is `test_domain_boundary`'s; this one catches
what imports cannot show (a tool named in a string)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from pipeline.world.registry import BUILTIN_DOMAINS, resolve_domain

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "pipeline"
DOMAIN_PACKAGES = {"domains", "embedded"}

CROSS_DOMAIN = {
    # τ²-bench's hand-off: every τ²-bench domain has this tool under this name, and τ²-bench's own evaluation
    # names it; the failure signature 'transferred' reads it.
    ("pipeline/grading/failure_modes.py", "transfer_to_human_agents"),
    # τ²-bench's arithmetic tool, the same in every domain that has one.
    ("*", "calculate"),
}


def tool_names() -> dict[str, str]:
    names: dict[str, str] = {}
    for spec in BUILTIN_DOMAINS:
        domain = resolve_domain(spec)
        for registry in (domain.tools, domain.user_tools):
            for name in registry.tools if registry is not None else ():
                names.setdefault(name, domain.name)
    return names


def generic_files() -> list[Path]:
    top = [p for p in PACKAGE.glob("*.py")]
    packages = [p for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()]
    return top + [f for p in packages if p.name not in DOMAIN_PACKAGES for f in sorted(p.rglob("*.py"))]


def literals(path: Path) -> list[tuple[int, str]]:
    """Every string constant in the module that is not a docstring or a bare string statement."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    prose: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            prose.add(id(node.value))
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose
    ]


def hits() -> set[tuple[str, str]]:
    names = tool_names()
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, sorted(names, key=len, reverse=True))) + r")\b")
    found: set[tuple[str, str]] = set()
    for path in generic_files():
        rel = path.relative_to(ROOT).as_posix()
        for _, text in literals(path):
            for m in pattern.finditer(text):
                name = m.group(1)
                if (rel, name) not in CROSS_DOMAIN and ("*", name) not in CROSS_DOMAIN:
                    found.add((rel, name))
    return found


def test_the_scan_knows_every_domains_tools():
    names = tool_names()
    assert {"cancel_pending_order", "book_reservation", "toggle_airplane_mode"} <= set(names)
    assert {"retail", "airline", "telecom"} <= set(names.values())


def test_docstrings_are_prose_not_code(tmp_path):
    module = tmp_path / "m.py"
    module.write_text('"""cancel_pending_order."""\n\nX = "cancel_pending_order"\n')
    assert literals(module) == [(3, "cancel_pending_order")]


def test_no_generic_module_names_a_domains_tool():
    found = sorted(hits())
    assert not found, "domain tool names in generic modules (move them behind the Domain):\n" + "\n".join(
        f"{path}: {name}" for path, name in found
    )

"""The import directions docs/architecture.md promises: each package imports only from the packages
below it at module level. Imports inside functions (made at call time, the documented upward
references) and under ``if TYPE_CHECKING:`` (never executed) are not module-level imports."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import agentstream

SRC = Path(agentstream.__file__).parent

# package -> the agentstream packages it may import at module level (docs/architecture.md, "Layers")
ALLOWED: dict[str, frozenset[str]] = {
    "chunks": frozenset(),
    "_abort": frozenset(),
    "_secrets": frozenset(),
    "_validate": frozenset(),
    "storage": frozenset(),
    "resumable": frozenset(),
    "stream": frozenset({"chunks", "_secrets"}),
    "models": frozenset({"_abort", "_secrets"}),
    "tools": frozenset({"chunks", "_abort", "_secrets", "_validate"}),
    "memory": frozenset({"chunks", "storage"}),
    "agent": frozenset({"chunks", "stream", "models", "tools", "memory", "tracing", "_abort"}),
    "tracing": frozenset({"_abort", "_secrets"}),
    "background": frozenset(
        {
            "agent",
            "chunks",
            "stream",
            "tools",
            "memory",
            "storage",
            "tracing",
            "_abort",
            "_secrets",
            "_validate",
        }
    ),
    "processors": frozenset({"agent", "chunks", "stream", "models"}),
    "workflows": frozenset({"agent", "chunks", "stream", "tools", "storage", "tracing", "_abort", "_validate"}),
    "durable": frozenset(
        {"agent", "ai_sdk", "background", "chunks", "models", "resumable", "tools", "workflows", "_abort"}
    ),
    "_mastra": frozenset({"agent", "storage", "workflows"}),
    "ai_sdk": frozenset({"chunks", "resumable", "stream", "tracing", "_abort", "_secrets"}),
    "server": frozenset({"ai_sdk", "resumable", "tracing", "_abort"}),
    "mcp": frozenset({"agent", "ai_sdk", "chunks", "server", "tools", "workflows", "_abort"}),
    "testing": frozenset({"models", "_abort"}),
}
# the top of the stack may import anything
UNRESTRICTED = frozenset({"__init__", "__main__", "_app", "_cli", "cli", "_web", "_demo", "_demo_workflow"})


def _package_of(path: Path) -> str:
    return path.relative_to(SRC).parts[0].removesuffix(".py")


def _module_level(nodes: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements executed at import: descends into if/try/with blocks, not into functions/classes'
    methods or ``if TYPE_CHECKING:`` blocks."""
    for node in nodes:
        if isinstance(node, ast.If):
            test = node.test
            if (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
                isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
            ):
                yield from _module_level(node.orelse)
                continue
            yield from _module_level(node.body)
            yield from _module_level(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers)):
                yield from _module_level(block)
        elif isinstance(node, (ast.With, ast.ClassDef)):
            yield from _module_level(node.body)
        else:
            yield node


def _imported_packages(path: Path) -> Iterator[tuple[str, int]]:
    """``(agentstream package, line)`` for each module-level import of another agentstream package."""
    module = list(path.relative_to(SRC.parent).with_suffix("").parts)
    package = module[:-1]  # the package a relative import is relative to (for __init__ too)
    for node in _module_level(ast.parse(path.read_text(encoding="utf-8")).body):
        targets: list[list[str]] = []
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            dotted = base + (node.module.split(".") if node.module else [])
            if dotted == ["agentstream"]:
                targets = [["agentstream", alias.name] for alias in node.names]
            else:
                targets = [dotted]
        elif isinstance(node, ast.Import):
            targets = [alias.name.split(".") for alias in node.names]
        for target in targets:
            if len(target) >= 2 and target[0] == "agentstream":
                yield target[1], node.lineno


def test_packages_import_only_downward_at_module_level() -> None:
    violations = []
    for path in sorted(SRC.rglob("*.py")):
        own = _package_of(path)
        if own in UNRESTRICTED:
            continue
        assert own in ALLOWED, f"{path.relative_to(SRC)}: package {own!r} is missing from the layer table"
        for imported, line in _imported_packages(path):
            if imported != own and imported not in ALLOWED[own]:
                violations.append(f"{path.relative_to(SRC)}:{line}: {own} imports {imported}")
    assert not violations, "imports against the layer order:\n" + "\n".join(violations)


def test_the_check_resolves_relative_imports_and_skips_call_time_ones() -> None:
    source = SRC / "agent" / "_agent.py"
    found = {name for name, _ in _imported_packages(source)}
    assert {"stream", "tools", "memory", "models"} <= found
    assert "background" not in found  # imported inside functions and under TYPE_CHECKING only

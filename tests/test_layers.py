"""The import directions docs/architecture.md promises: each package imports only from the packages
below it at module level. Imports inside functions (made at call time, the documented upward
references) and under ``if TYPE_CHECKING:`` (never executed) are not module-level imports.

The layer table in docs/architecture.md ("Layers") is the only copy of the rules: this test reads it,
so the page and the check cannot differ."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import agentstream

SRC = Path(agentstream.__file__).parent
ARCHITECTURE = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"
_HEADER = ["layer", "package", "owns", "imports from agentstream"]
_NAME = re.compile(r"`([A-Za-z_][A-Za-z0-9_]*)`")


@dataclass(frozen=True)
class Row:
    layer: int | None  # None: outside the stack ("—")
    packages: tuple[str, ...]
    imports: frozenset[str] | None  # None: "everything"


def parse_layer_table(text: str) -> list[Row]:
    """The rows of the first table under ``## Layers``; `ValueError` naming the line that is not
    a row of the expected shape."""
    section = re.search(r"^## Layers\n(.*?)(?=^## |\Z)", text, re.MULTILINE | re.DOTALL)
    if section is None:
        raise ValueError("docs/architecture.md has no '## Layers' section")
    lines = [line for line in section.group(1).splitlines() if line.startswith("|")]
    if len(lines) < 3:
        raise ValueError("the '## Layers' section of docs/architecture.md has no table")
    cells = [[c.strip() for c in line.strip().strip("|").split("|")] for line in lines]
    if cells[0] != _HEADER:
        raise ValueError(f"the layer table's header is {cells[0]}; expected {_HEADER}")
    rows = []
    for line, row in zip(lines[2:], cells[2:], strict=True):
        if len(row) != 4:
            raise ValueError(f"layer table row has {len(row)} cells, expected 4: {line}")
        layer_cell, package_cell, _, imports_cell = row
        if not (layer_cell.isdigit() or layer_cell == "—"):
            raise ValueError(f"layer table row: layer {layer_cell!r} is neither a number nor '—': {line}")
        packages = tuple(_NAME.findall(package_cell))
        if not packages:
            raise ValueError(f"layer table row names no package in backticks: {line}")
        imports: frozenset[str] | None
        if imports_cell == "everything":
            imports = None
        elif imports_cell == "nothing":
            imports = frozenset()
        else:
            imports = frozenset(_NAME.findall(imports_cell))
            if not imports or _NAME.sub("", imports_cell).strip(", ") != "":
                raise ValueError(
                    f"layer table row: imports {imports_cell!r} are not 'nothing', 'everything' or "
                    f"backticked package names separated by commas: {line}"
                )
        rows.append(Row(int(layer_cell) if layer_cell.isdigit() else None, packages, imports))
    return rows


ROWS = parse_layer_table(ARCHITECTURE.read_text(encoding="utf-8"))
LAYER = {package: row.layer for row in ROWS for package in row.packages}
# package -> the agentstream packages it imports at module level
ALLOWED: dict[str, frozenset[str]] = {
    package: row.imports for row in ROWS if row.imports is not None for package in row.packages
}
# the top of the stack may import anything
UNRESTRICTED = frozenset(package for row in ROWS if row.imports is None for package in row.packages)


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
    used: dict[str, set[str]] = {package: set() for package in ALLOWED}
    for path in sorted(SRC.rglob("*.py")):
        own = _package_of(path)
        if own in UNRESTRICTED:
            continue
        assert own in ALLOWED, (
            f"{path.relative_to(SRC)}: package {own!r} has no row in the layer table of docs/architecture.md"
        )
        for imported, line in _imported_packages(path):
            if imported == own:
                continue
            used[own].add(imported)
            if imported not in ALLOWED[own]:
                violations.append(f"{path.relative_to(SRC)}:{line}: {own} imports {imported}")
    assert not violations, "imports against docs/architecture.md's layer table:\n" + "\n".join(violations)
    stale = {
        package: sorted(ALLOWED[package] - found)
        for package, found in used.items()
        if ALLOWED[package] - found
    }
    assert not stale, (
        f"docs/architecture.md's layer table lists imports no module makes (remove them): {stale}"
    )


def test_every_listed_import_is_of_a_lower_layer() -> None:
    wrong = []
    for package, imports in ALLOWED.items():
        own = LAYER[package]
        if own is None:  # outside the stack (`testing`)
            continue
        for imported in sorted(imports):
            theirs = LAYER.get(imported)
            if theirs is None or theirs >= own:
                wrong.append(f"{package} (layer {own}) imports {imported} (layer {theirs})")
    assert not wrong, "docs/architecture.md's layer table breaks its own order: " + "; ".join(wrong)


def test_every_row_names_a_real_package() -> None:
    missing = [
        package for package in LAYER if not (SRC / package).is_dir() and not (SRC / f"{package}.py").exists()
    ]
    assert not missing, f"docs/architecture.md's layer table names packages that do not exist: {missing}"


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ("no section here", "no '## Layers' section"),
        ("## Layers\n\n| a | b |\n|---|---|\n| 0 | `x` |\n", "header is"),
        (
            "## Layers\n\n| layer | package | owns | imports from agentstream |\n|---|---|---|---|\n"
            "| one | `x` | y | nothing |\n",
            "layer 'one' is neither a number",
        ),
        (
            "## Layers\n\n| layer | package | owns | imports from agentstream |\n|---|---|---|---|\n"
            "| 1 | `x` | y | `chunks` and stream |\n",
            "are not 'nothing', 'everything' or backticked",
        ),
    ],
)
def test_a_malformed_table_is_refused_with_the_line(table: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_layer_table(table)


def test_the_check_resolves_relative_imports_and_skips_call_time_ones() -> None:
    source = SRC / "agent" / "_agent.py"
    found = {name for name, _ in _imported_packages(source)}
    assert {"stream", "tools", "memory", "models"} <= found
    assert "background" not in found  # imported inside functions and under TYPE_CHECKING only

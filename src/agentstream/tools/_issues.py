"""Validation issues and how they are shown: zod's wording, Mastra's ``- path: message`` lines.

Mastra validates tool input with zod and sends the model ``- city: Invalid input: expected string,
received undefined`` (one line per issue, the field path joined with dots, ``root`` for the value
itself) plus a ``{errors, fields}`` tree. Both validators (JSON Schema and pydantic) produce
`SchemaIssue` values worded as zod's English locale words them.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

__all__ = ["SchemaIssue", "format_issues", "issues_tree", "js_number", "js_type", "js_value"]


@dataclass(frozen=True)
class SchemaIssue:
    """One validation problem: the path of the offending field and what is wrong with it."""

    path: tuple[str | int, ...]
    message: str


def js_type(value: Any) -> str:
    """zod's ``parsedType``: the JavaScript type name of a JSON value (``NaN`` for a NaN float)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def js_number(value: Any) -> str:
    """A number as JavaScript's ``String(n)`` prints it (``5``, not ``5.0``)."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    return str(value)


def js_value(value: Any) -> str:
    """zod's ``stringifyPrimitive``: strings quoted, everything else as JavaScript prints it."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return js_number(value)
    return json.dumps(value, ensure_ascii=False, default=str)


def format_issues(issues: tuple[SchemaIssue, ...]) -> str:
    """``- a.b: message`` lines (``- root: message`` for the value itself), as Mastra writes them."""
    lines = []
    for issue in issues:
        where = ".".join(str(p) for p in issue.path) or "root"
        lines.append(f"- {where}: {issue.message}")
    return "\n".join(lines)


def issues_tree(issues: tuple[SchemaIssue, ...]) -> dict[str, Any]:
    """Mastra's ``validationErrors`` shape: ``{errors: [...], fields: {name: {errors, fields}}}``."""
    root: dict[str, Any] = {"errors": [], "fields": {}}
    for issue in issues:
        node = root
        for part in issue.path:
            node = node["fields"].setdefault(str(part), {"errors": [], "fields": {}})
        node["errors"].append(issue.message)
    return root

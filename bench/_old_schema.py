"""The hand-written JSON Schema subset agentstream used before jsonschema-rs (kept for bench_schema only).

A verbatim copy of the old agentstream.tools._schema: the reference the benchmark measures the new
validator against. Not part of the package; nothing outside bench/ imports it.

Original docstring: argument schemas: JSON Schema dicts or pydantic models, validated with zod-style messages.

Mastra validates tool input with zod and reports ``- city: Invalid input: expected string, received
undefined``; the messages here follow that wording for the common cases so that models (and the
conformance vectors) see the same text.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeAlias

import pydantic

__all__ = ["Schema", "SchemaIssue", "ValidationOutcome", "json_schema_of", "validate_value"]

Schema: TypeAlias = "dict[str, Any] | type[pydantic.BaseModel] | pydantic.TypeAdapter[Any]"

_DRAFT7 = "http://json-schema.org/draft-07/schema#"


@dataclass(frozen=True)
class SchemaIssue:
    """One validation problem: the path of the offending field and what is wrong with it."""

    path: tuple[str | int, ...]
    message: str


@dataclass(frozen=True)
class ValidationOutcome:
    """The result of `validate_value`: the (coerced) value and the issues found (none when `ok`)."""

    value: Any
    issues: tuple[SchemaIssue, ...]

    @property
    def ok(self) -> bool:
        """Whether the value was valid (no issues)."""
        return not self.issues


def json_schema_of(schema: Schema) -> dict[str, Any]:
    """The JSON Schema sent to the model for ``schema``."""
    if isinstance(schema, dict):
        return schema
    if isinstance(schema, pydantic.TypeAdapter):
        return {"$schema": _DRAFT7, **schema.json_schema()}
    return {"$schema": _DRAFT7, **schema.model_json_schema()}


def _js_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _type_matches(expected: str, value: Any) -> bool:
    actual = _js_type(value)
    if expected == "integer":
        return actual == "number" and (
            isinstance(value, int) or (isinstance(value, float) and value.is_integer())
        )
    return expected == actual


def _validate_json(
    schema: dict[str, Any], value: Any, path: tuple[str | int, ...], out: list[SchemaIssue]
) -> None:
    if value is _MISSING:
        expected = schema.get("type")
        name = expected if isinstance(expected, str) else "value"
        out.append(SchemaIssue(path, f"Invalid input: expected {name}, received undefined"))
        return
    if "anyOf" in schema or "oneOf" in schema:
        options = schema.get("anyOf") or schema.get("oneOf") or []
        for option in options:
            trial: list[SchemaIssue] = []
            _validate_json(option, value, path, trial)
            if not trial:
                return
        out.append(SchemaIssue(path, "Invalid input"))
        return
    if "const" in schema and value != schema["const"]:
        out.append(SchemaIssue(path, f"Invalid input: expected {json.dumps(schema['const'])}"))
        return
    if "enum" in schema and value not in schema["enum"]:
        options = "|".join(json.dumps(v) for v in schema["enum"])
        out.append(SchemaIssue(path, f"Invalid option: expected one of {options}"))
        return
    expected = schema.get("type")
    if isinstance(expected, list):
        if not any(_type_matches(t, value) for t in expected):
            out.append(
                SchemaIssue(path, f"Invalid input: expected {expected[0]}, received {_js_type(value)}")
            )
            return
    elif isinstance(expected, str) and not _type_matches(expected, value):
        if expected == "integer" and _js_type(value) == "number":
            out.append(SchemaIssue(path, "Invalid input: expected int, received number"))
        else:
            out.append(SchemaIssue(path, f"Invalid input: expected {expected}, received {_js_type(value)}"))
        return
    if isinstance(value, dict):
        props: dict[str, Any] = schema.get("properties", {})
        for key in schema.get("required", []):
            if key not in value:
                _validate_json(props.get(key, {}), _MISSING, (*path, key), out)
        for key, sub in props.items():
            if key in value:
                _validate_json(sub, value[key], (*path, key), out)
        extra = [k for k in value if k not in props]
        additional = schema.get("additionalProperties", True)
        if extra and additional is False:
            keys = ", ".join(f'"{k}"' for k in extra)
            out.append(SchemaIssue(path, f"Unrecognized key{'s' if len(extra) > 1 else ''}: {keys}"))
        elif extra and isinstance(additional, dict):
            for key in extra:
                _validate_json(additional, value[key], (*path, key), out)
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for i, item in enumerate(value):
                _validate_json(items, item, (*path, i), out)
        if "minItems" in schema and len(value) < schema["minItems"]:
            out.append(SchemaIssue(path, f"Too small: expected array to have >={schema['minItems']} items"))
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            out.append(SchemaIssue(path, f"Too big: expected array to have <={schema['maxItems']} items"))
    elif isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            out.append(
                SchemaIssue(path, f"Too small: expected string to have >={schema['minLength']} characters")
            )
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            out.append(
                SchemaIssue(path, f"Too big: expected string to have <={schema['maxLength']} characters")
            )
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        if isinstance(value, float) and not math.isfinite(value):
            out.append(SchemaIssue(path, "Invalid input: expected number, received NaN"))
        if "minimum" in schema and value < schema["minimum"]:
            out.append(SchemaIssue(path, f"Too small: expected number to be >={schema['minimum']}"))
        if "maximum" in schema and value > schema["maximum"]:
            out.append(SchemaIssue(path, f"Too big: expected number to be <={schema['maximum']}"))


class _Missing:
    pass


_MISSING: Any = _Missing()

_PYDANTIC_TYPES: dict[str, str] = {
    "string_type": "string",
    "int_type": "number",
    "int_parsing": "number",
    "float_type": "number",
    "float_parsing": "number",
    "bool_type": "boolean",
    "bool_parsing": "boolean",
    "list_type": "array",
    "dict_type": "object",
    "model_type": "object",
    "model_attributes_type": "object",
}


def _expected_from_schema(schema: dict[str, Any], path: tuple[str | int, ...]) -> str | None:
    node: Any = schema
    defs = schema.get("$defs", {})
    for part in path:
        if isinstance(node, dict) and "$ref" in node:
            node = defs.get(str(node["$ref"]).rsplit("/", 1)[-1], {})
        if isinstance(part, int):
            node = node.get("items", {}) if isinstance(node, dict) else {}
        else:
            node = node.get("properties", {}).get(part, {}) if isinstance(node, dict) else {}
    if isinstance(node, dict):
        if "$ref" in node:
            node = defs.get(str(node["$ref"]).rsplit("/", 1)[-1], {})
        t = node.get("type")
        if isinstance(t, str):
            return "number" if t == "integer" else t
    return None


def _pydantic_issues(exc: pydantic.ValidationError, schema: dict[str, Any], value: Any) -> list[SchemaIssue]:
    issues: list[SchemaIssue] = []
    for err in exc.errors():
        path = tuple(err["loc"])
        kind = err["type"]
        if kind == "missing":
            expected = _expected_from_schema(schema, path) or "value"
            issues.append(SchemaIssue(path, f"Invalid input: expected {expected}, received undefined"))
        elif kind in _PYDANTIC_TYPES:
            received = _js_type(err.get("input"))
            issues.append(
                SchemaIssue(path, f"Invalid input: expected {_PYDANTIC_TYPES[kind]}, received {received}")
            )
        elif kind == "extra_forbidden":
            issues.append(SchemaIssue(path[:-1], f'Unrecognized key: "{path[-1]}"'))
        else:
            issues.append(SchemaIssue(path, str(err["msg"])))
    return issues


def validate_value(schema: Schema, value: Any) -> ValidationOutcome:
    """Validate ``value``; on success ``value`` is the parsed value (a model instance for models)."""
    if isinstance(schema, dict):
        issues: list[SchemaIssue] = []
        _validate_json(schema, value, (), issues)
        return ValidationOutcome(value, tuple(issues))
    validate: Callable[[Any], Any]
    validate = schema.validate_python if isinstance(schema, pydantic.TypeAdapter) else schema.model_validate
    try:
        return ValidationOutcome(validate(value), ())
    except pydantic.ValidationError as exc:
        return ValidationOutcome(value, tuple(_pydantic_issues(exc, json_schema_of(schema), value)))


def format_issues(issues: tuple[SchemaIssue, ...]) -> str:
    """``- a.b: message`` lines, zod's ``prettifyError``-like summary."""
    lines = []
    for issue in issues:
        where = ".".join(str(p) for p in issue.path)
        lines.append(f"- {where}: {issue.message}" if where else f"- {issue.message}")
    return "\n".join(lines)


def issues_tree(issues: tuple[SchemaIssue, ...]) -> dict[str, Any]:
    """zod's ``treeifyError`` shape: ``{errors: [...], fields: {name: {errors, fields}}}``."""
    root: dict[str, Any] = {"errors": [], "fields": {}}
    for issue in issues:
        node = root
        for part in issue.path:
            node = node["fields"].setdefault(str(part), {"errors": [], "fields": {}})
        node["errors"].append(issue.message)
    return root

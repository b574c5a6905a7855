"""Argument schemas: JSON Schema dicts or pydantic models, validated with zod-style messages.

A JSON Schema dict is compiled once by `compile_schema` (jsonschema-rs; a schema it cannot enforce
is refused there with `SchemaDefinitionError`); a pydantic model or ``TypeAdapter`` validates
itself. Either way `validate_value` returns the issues worded as Mastra's zod schemas word them
(see ``_issues``), which is what the model is sent when it calls a tool with bad arguments.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeAlias

import pydantic

from ._issues import SchemaIssue, format_issues, issues_tree, js_number, js_type
from ._json_schema import JsonSchemaValidator, SchemaDefinitionError

__all__ = [
    "CompiledSchema",
    "Schema",
    "SchemaDefinitionError",
    "SchemaIssue",
    "ValidationOutcome",
    "compile_schema",
    "format_issues",
    "issues_tree",
    "json_schema_of",
    "validate_value",
]

Schema: TypeAlias = "dict[str, Any] | type[pydantic.BaseModel] | pydantic.TypeAdapter[Any]"

_DRAFT7 = "http://json-schema.org/draft-07/schema#"
_DRAFT2020 = "https://json-schema.org/draft/2020-12/schema"


@dataclass(frozen=True)
class ValidationOutcome:
    """The result of `validate_value`: the (coerced) value and the issues found (none when `ok`)."""

    value: Any
    issues: tuple[SchemaIssue, ...]

    @property
    def ok(self) -> bool:
        """Whether the value was valid (no issues)."""
        return not self.issues


def json_schema_of(schema: Schema | CompiledSchema) -> dict[str, Any]:
    """The JSON Schema sent to the model for ``schema``."""
    if isinstance(schema, CompiledSchema):
        return json_schema_of(schema.schema)
    if isinstance(schema, dict):
        return schema
    generated = (
        schema.json_schema() if isinstance(schema, pydantic.TypeAdapter) else schema.model_json_schema()
    )
    return {"$schema": _draft_of(generated), **generated}


def _draft_of(generated: dict[str, Any]) -> str:
    """Draft 7 (what zod-to-json-schema labels, as the recordings show) unless pydantic used a
    2020-12 keyword (``prefixItems`` for tuples), which Draft 7 would refuse."""
    return _DRAFT2020 if _uses_prefix_items(generated) else _DRAFT7


def _uses_prefix_items(node: Any) -> bool:
    if isinstance(node, dict):
        return "prefixItems" in node or any(_uses_prefix_items(v) for v in node.values())
    if isinstance(node, list):
        return any(_uses_prefix_items(v) for v in node)
    return False


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
            received = js_type(err.get("input"))
            issues.append(
                SchemaIssue(path, f"Invalid input: expected {_PYDANTIC_TYPES[kind]}, received {received}")
            )
        elif kind == "extra_forbidden":
            issues.append(SchemaIssue(path[:-1], f'Unrecognized key: "{path[-1]}"'))
        else:
            issues.append(SchemaIssue(path, _pydantic_check_message(kind, err.get("ctx") or {}, err)))
    return issues


_BOUNDS = {
    "greater_than": ("Too small", ">", "gt"),
    "greater_than_equal": ("Too small", ">=", "ge"),
    "less_than": ("Too big", "<", "lt"),
    "less_than_equal": ("Too big", "<=", "le"),
}
_SIZES = {
    "string_too_short": ("Too small", ">=", "min_length", "string", "characters"),
    "string_too_long": ("Too big", "<=", "max_length", "string", "characters"),
    "too_short": ("Too small", ">=", "min_length", "array", "items"),
    "too_long": ("Too big", "<=", "max_length", "array", "items"),
}


def _pydantic_check_message(kind: str, ctx: dict[str, Any], err: Any) -> str:
    """pydantic's constraint errors in zod's words (the same as the JSON Schema path gives)."""
    if kind in _BOUNDS and _BOUNDS[kind][2] in ctx:
        head, op, key = _BOUNDS[kind]
        return f"{head}: expected number to be {op}{js_number(ctx[key])}"
    if kind in _SIZES and _SIZES[kind][2] in ctx:
        head, op, key, origin, unit = _SIZES[kind]
        return f"{head}: expected {origin} to have {op}{ctx[key]} {unit}"
    if kind == "string_pattern_mismatch" and "pattern" in ctx:
        return f"Invalid string: must match pattern /{ctx['pattern']}/"
    if kind == "multiple_of" and "multiple_of" in ctx:
        return f"Invalid number: must be a multiple of {js_number(ctx['multiple_of'])}"
    if kind in ("int_from_float", "int_fractional"):
        return "Invalid input: expected int, received number"
    return str(err["msg"])


class CompiledSchema:
    """A schema checked and ready to validate: `compile_schema`'s result, accepted wherever a
    `Schema` is (so a tool compiles its schemas once, when it is defined)."""

    __slots__ = ("_json", "_validate", "schema")

    def __init__(self, schema: Schema) -> None:
        self.schema = schema
        self._json: JsonSchemaValidator | None = None
        self._validate: Callable[[Any], Any] | None = None
        if isinstance(schema, dict):
            self._json = JsonSchemaValidator(schema)
        elif isinstance(schema, pydantic.TypeAdapter):
            self._validate = schema.validate_python
        elif isinstance(schema, type) and issubclass(schema, pydantic.BaseModel):
            self._validate = schema.model_validate
        else:
            raise SchemaDefinitionError(
                "a schema is a JSON Schema dict, a pydantic model class or a pydantic.TypeAdapter, "
                f"got {type(schema).__name__}",
                keyword=None,
                path="",
            )

    def validate(self, value: Any) -> ValidationOutcome:
        """Validate ``value``; on success the outcome's value is the parsed value (a model instance
        for models, ``value`` itself for JSON Schema)."""
        if self._json is not None:
            return ValidationOutcome(value, self._json.issues(value))
        assert self._validate is not None
        try:
            return ValidationOutcome(self._validate(value), ())
        except pydantic.ValidationError as exc:
            return ValidationOutcome(value, tuple(_pydantic_issues(exc, json_schema_of(self.schema), value)))


@functools.lru_cache(maxsize=256)
def _compiled_json(text: str) -> CompiledSchema:
    return CompiledSchema(json.loads(text))


def compile_schema(schema: Schema | CompiledSchema) -> CompiledSchema:
    """Check ``schema`` and prepare it for validation.

    Raises `SchemaDefinitionError` (a ``ValueError``) naming the keyword and its JSON Pointer when
    a JSON Schema dict uses something the validator cannot enforce: a keyword outside its draft
    (Draft 2020-12, or Draft 7 by ``$schema``), an invalid schema, a ``$ref`` that does not resolve
    inside it (remote references are never fetched), an unknown ``format``.
    """
    if isinstance(schema, CompiledSchema):
        return schema
    if isinstance(schema, dict):
        try:
            text = json.dumps(schema, allow_nan=False)
        except (TypeError, ValueError):
            return CompiledSchema(schema)  # not JSON data: refused with the reason
        return _compiled_json(text)
    return CompiledSchema(schema)


def validate_value(schema: Schema | CompiledSchema, value: Any) -> ValidationOutcome:
    """Validate ``value`` against ``schema`` (a JSON Schema dict, a pydantic model, a
    ``TypeAdapter`` or a `CompiledSchema`); the issues are worded as zod words them.

    On success the outcome's value is the parsed value (a model instance for models). A dict
    schema is compiled on first use and cached; it raises `SchemaDefinitionError` if it cannot be
    enforced.
    """
    return compile_schema(schema).validate(value)

"""JSON Schema dicts compiled once, when the tool is defined, and validated with jsonschema-rs.

What is accepted is exactly what is enforced: every keyword of the schema's draft (Draft 2020-12,
the default, or Draft 7 when ``$schema`` says so) is validated by jsonschema-rs, and a schema that
uses anything else is refused here, with the keyword and its JSON Pointer, instead of being
silently ignored when the model calls the tool. Refused: keywords outside the draft's vocabularies
(``nullable``, a Draft 2020-12 keyword in a Draft 7 schema, ...), a schema invalid against its
metaschema, a ``$ref`` that does not resolve inside the schema (remote references are never
fetched), a ``format`` the validator does not know, a ``pattern`` it cannot compile and a
``$schema`` other than the two drafts. Annotations (``title``, ``description``, ``default``,
``examples``, ``x-*`` extensions, OpenAPI's ``discriminator``) are accepted and change nothing.

``pattern`` follows ECMA-262 as JSON Schema specifies (jsonschema-rs translates it for its regex
engine): ``\\d``/``\\w`` are ASCII-only, ``$`` matches only at the end, ``\\p{L}`` works. A pattern
whose matching exceeds the engine's backtracking limit fails validation rather than hanging.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, NoReturn

import jsonschema_rs

from ._issues import SchemaIssue
from ._zod_messages import zod_issues

__all__ = ["JsonSchemaValidator", "SchemaDefinitionError"]


class SchemaDefinitionError(ValueError):
    """A schema the validator cannot enforce, refused when the tool (or output schema) is defined.

    ``keyword`` is the offending keyword (``None`` when the schema as a whole is wrong) and ``path``
    its JSON Pointer inside the schema (``""`` for the root).
    """

    def __init__(self, message: str, *, keyword: str | None, path: str) -> None:
        super().__init__(message)
        self.keyword = keyword
        self.path = path


@dataclass(frozen=True)
class _Draft:
    name: str
    validator: type[jsonschema_rs.Validator]
    keywords: frozenset[str]
    schema_maps: frozenset[str]
    """Keywords whose value maps names to subschemas."""
    schema_lists: frozenset[str]
    """Keywords whose value is a list of subschemas."""
    schemas: frozenset[str]
    """Keywords whose value is one subschema."""


_ANNOTATIONS = frozenset(
    {"title", "description", "default", "examples", "readOnly", "writeOnly", "$comment", "discriminator"}
)
_VALIDATION = frozenset(
    {
        "type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum",
        "exclusiveMinimum", "maxLength", "minLength", "pattern", "maxItems", "minItems", "uniqueItems",
        "maxProperties", "minProperties", "required", "format",
    }
)  # fmt: skip
_COMMON_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions"})
_COMMON_SCHEMAS = frozenset(
    {"additionalProperties", "contains", "propertyNames", "not", "if", "then", "else", "items"}
)

_DRAFT7 = _Draft(
    name="Draft 7",
    validator=jsonschema_rs.Draft7Validator,
    # ``$defs`` is not a Draft 7 keyword, but ``#/$defs/X`` resolves as a plain JSON Pointer and
    # schemas labelled Draft 7 (zod's, pydantic's) keep their definitions there.
    keywords=_ANNOTATIONS
    | _VALIDATION
    | _COMMON_MAPS
    | _COMMON_SCHEMAS
    | {"$schema", "$id", "$ref", "allOf", "anyOf", "oneOf", "additionalItems", "dependencies"}
    | {"contentMediaType", "contentEncoding", "deprecated"},  # `deprecated`: an annotation pydantic emits
    schema_maps=_COMMON_MAPS,
    schema_lists=frozenset({"allOf", "anyOf", "oneOf"}),
    schemas=_COMMON_SCHEMAS | {"additionalItems"},
)
_DRAFT2020 = _Draft(
    name="Draft 2020-12",
    validator=jsonschema_rs.Draft202012Validator,
    keywords=_ANNOTATIONS
    | _VALIDATION
    | _COMMON_MAPS
    | _COMMON_SCHEMAS
    | {"$schema", "$id", "$ref", "$anchor", "$dynamicRef", "$dynamicAnchor", "allOf", "anyOf", "oneOf"}
    | {"prefixItems", "dependentSchemas", "dependentRequired", "minContains", "maxContains"}
    | {"unevaluatedItems", "unevaluatedProperties", "deprecated"},
    schema_maps=_COMMON_MAPS | {"dependentSchemas"},
    schema_lists=frozenset({"allOf", "anyOf", "oneOf", "prefixItems"}),
    schemas=_COMMON_SCHEMAS | {"unevaluatedItems", "unevaluatedProperties"},
)
_BESIDE_REF_IN_DRAFT7 = _ANNOTATIONS | {"$ref", "$id", "$schema", "definitions", "$defs", "deprecated"}
"""What may stand beside ``$ref`` in Draft 7, which ignores the rest there."""
_DRAFTS: dict[str, _Draft] = {
    "http://json-schema.org/draft-07/schema": _DRAFT7,
    "https://json-schema.org/draft/2020-12/schema": _DRAFT2020,
}
_HINTS = {
    "nullable": 'use "type": ["<type>", "null"] (OpenAPI 3.0\'s nullable is not JSON Schema)',
    "contentSchema": "Draft 2020-12 makes it an annotation; validate the decoded content in the tool",
    "$vocabulary": "custom metaschemas are not supported",
}


def _pointer(parts: tuple[str | int, ...]) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def _refuse(message: str, *, keyword: str | None, at: tuple[str | int, ...]) -> NoReturn:
    path = _pointer(at)
    raise SchemaDefinitionError(f"{message} (at {path or '/'} in the schema)", keyword=keyword, path=path)


def _declared(uri: Any) -> _Draft | None:
    key = str(uri).rstrip("#").replace("https://json-schema.org/draft-07", "http://json-schema.org/draft-07")
    return _DRAFTS.get(key)


def _draft_of(schema: Mapping[str, Any]) -> _Draft:
    declared = schema.get("$schema")
    if declared is None:
        return _DRAFT2020
    draft = _declared(declared)
    if draft is None:
        _refuse(
            f"unsupported $schema {declared!r}: tool schemas are validated as JSON Schema Draft 2020-12 "
            '(no $schema) or Draft 7 ("http://json-schema.org/draft-07/schema#")',
            keyword="$schema",
            at=("$schema",),
        )
    return draft


def _subschemas(
    draft: _Draft, node: Mapping[str, Any], at: tuple[str | int, ...]
) -> Iterator[tuple[Any, tuple[str | int, ...]]]:
    for key, value in node.items():
        if key in draft.schema_maps and isinstance(value, Mapping):
            yield from ((sub, (*at, key, name)) for name, sub in value.items())
        elif key in draft.schema_lists and isinstance(value, list):
            yield from ((sub, (*at, key, i)) for i, sub in enumerate(value))
        elif key == "items" and draft is _DRAFT7 and isinstance(value, list):
            yield from ((sub, (*at, key, i)) for i, sub in enumerate(value))
        elif key in draft.schemas:
            yield value, (*at, key)
        elif key == "dependencies" and isinstance(value, Mapping):
            yield from ((sub, (*at, key, name)) for name, sub in value.items() if not isinstance(sub, list))


def _check_keywords(draft: _Draft, node: Any, at: tuple[str | int, ...]) -> None:
    if not isinstance(node, Mapping):
        return
    for key in node:
        if key in draft.keywords or key.startswith("x-"):
            continue
        other = _DRAFT7 if draft is _DRAFT2020 else _DRAFT2020
        if key in other.keywords:
            hint = f"it is a {other.name} keyword; this schema is {draft.name}"
        else:
            hint = _HINTS.get(key, f"it is not a {draft.name} keyword and would not be enforced")
        _refuse(f"unsupported JSON Schema keyword {key!r}: {hint}", keyword=key, at=(*at, key))
    if draft is _DRAFT7 and "$ref" in node:
        ignored = [k for k in node if k not in _BESIDE_REF_IN_DRAFT7 and not k.startswith("x-")]
        if ignored:
            _refuse(
                f"{ignored[0]!r} next to $ref: Draft 7 ignores every keyword beside $ref; wrap them as "
                '{"allOf": [{"$ref": ...}, {...}]} or use Draft 2020-12',
                keyword=ignored[0],
                at=(*at, ignored[0]),
            )
    if at and "$schema" in node and _declared(node["$schema"]) is not draft:
        _refuse("a subschema may not switch $schema to another draft", keyword="$schema", at=(*at, "$schema"))
    for sub, where in _subschemas(draft, node, at):
        _check_keywords(draft, sub, where)


def _refuse_remote(uri: str) -> Any:
    raise ValueError(f"remote $ref {uri!r} is not fetched: embed it under $defs instead")


def _refs(draft: _Draft, node: Any, at: tuple[str | int, ...]) -> Iterator[tuple[str, tuple[str | int, ...]]]:
    if not isinstance(node, Mapping):
        return
    for key in ("$ref", "$dynamicRef"):
        if isinstance(node.get(key), str):
            yield node[key], (*at, key)
    for sub, where in _subschemas(draft, node, at):
        yield from _refs(draft, sub, where)


def _build(draft: _Draft, schema: Mapping[str, Any]) -> jsonschema_rs.Validator:
    try:
        return draft.validator(
            dict(schema),
            validate_formats=True,
            ignore_unknown_formats=False,
            retriever=_refuse_remote,
        )
    except jsonschema_rs.ValidationError as exc:
        reason = exc.message.split("\n\n", 1)[0]
        if reason.startswith("Unknown format"):
            reason = f"unknown format {exc.instance!r}: only the formats of the JSON Schema specification are checked"
        at: tuple[str | int, ...] = tuple(exc.instance_path)
        if isinstance(exc.kind, jsonschema_rs.ValidationErrorKind.Referencing):
            # the error names the reference, not where it is: find the $ref that says it
            at = next((where for ref, where in _refs(draft, schema, ()) if ref.lstrip("#") in reason), at)
        keyword = next((str(p) for p in reversed(at) if isinstance(p, str)), None)
        _refuse(f"invalid {draft.name} schema: {reason}", keyword=keyword, at=at)
    except ValueError as exc:  # a schema that is not JSON data (a set, an object, a NaN bound...)
        _refuse(f"a JSON Schema must be JSON data: {exc}", keyword=None, at=())


class JsonSchemaValidator:
    """A JSON Schema dict compiled for validation; raises `SchemaDefinitionError` when it cannot be
    enforced. `issues` returns the problems of a value, worded as zod words them."""

    __slots__ = ("_validator", "draft", "schema")

    def __init__(self, schema: Mapping[str, Any]) -> None:
        if not isinstance(schema, Mapping):
            raise SchemaDefinitionError(
                f"a JSON Schema must be a dict, got {type(schema).__name__}", keyword=None, path=""
            )
        self.schema = schema if isinstance(schema, dict) else dict(schema)
        draft = _draft_of(schema)
        self.draft = draft.name
        self._validator = _build(draft, schema)
        _check_keywords(draft, schema, ())

    def issues(self, value: Any) -> tuple[SchemaIssue, ...]:
        """The problems of ``value`` (empty when it is valid)."""
        try:
            if self._validator.is_valid(value):
                return ()
            errors = list(self._validator.iter_errors(value))
        except ValueError:  # not JSON data (a set, a datetime...)
            return (SchemaIssue((), f"Invalid input: expected JSON data, received {type(value).__name__}"),)
        return zod_issues(errors, self.schema, value)

"""jsonschema-rs errors worded as zod's English locale words the equivalent zod check.

Mastra's tools are zod schemas; the recorded runs show what the model is told, e.g. ``Invalid
input: expected string, received undefined``. A JSON Schema keyword maps onto the zod check a
zod-to-JSON-Schema conversion would have produced it from (``pattern`` → ``.regex()``,
``multipleOf`` → ``.multipleOf()``, ``format: email`` → ``z.email()``...). Keywords zod has no
check for get a message in the same style. Unions follow zod's rule: when exactly one branch
failed only on refinements (lengths, bounds, pattern, format...), its issues are reported;
otherwise the union reports ``Invalid input``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from typing import Any

import jsonschema_rs

from ._issues import SchemaIssue, js_number, js_type, js_value

__all__ = ["missing_message", "zod_issues"]

Kind = jsonschema_rs.ValidationErrorKind

_FORMAT_NOUNS = {
    "email": "email address",
    "idn-email": "email address",
    "uri": "URL",
    "iri": "URL",
    "uuid": "UUID",
    "date-time": "ISO datetime",
    "date": "ISO date",
    "time": "ISO time",
    "duration": "ISO duration",
    "ipv4": "IPv4 address",
    "ipv6": "IPv6 address",
    "regex": "input",
}
_MINIMA = (Kind.MinLength, Kind.MinItems, Kind.MinProperties, Kind.Minimum, Kind.ExclusiveMinimum)
_MAXIMA = (Kind.MaxLength, Kind.MaxItems, Kind.MaxProperties, Kind.Maximum, Kind.ExclusiveMaximum)
_REFINEMENTS = frozenset(
    {*_MINIMA, *_MAXIMA, Kind.MultipleOf, Kind.Pattern, Kind.Format, Kind.UniqueItems, Kind.Contains}
    | {Kind.BacktrackLimitExceeded, Kind.RegexEngineFailure}
)
"""Checks zod runs with ``continue: true``: an issue of one of these does not abort a union branch."""


def _node_at(root: Any, path: Sequence[str | int]) -> Any:
    node = root
    for part in path:
        if isinstance(node, dict):
            node = node.get(part)
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            node = node[part]
        else:
            return None
    return node


def _resolve(root: Any, node: Any) -> Any:
    for _ in range(32):  # a $ref chain longer than this is a cycle
        if not (
            isinstance(node, dict) and isinstance(node.get("$ref"), str) and node["$ref"].startswith("#")
        ):
            return node
        pointer = node["$ref"][1:]
        if pointer and not pointer.startswith("/"):  # a $anchor: no static answer needed for messages
            return None
        parts = [p.replace("~1", "/").replace("~0", "~") for p in pointer.split("/")[1:]] if pointer else []
        node = _node_at(root, [int(p) if p.isdigit() else p for p in parts])
    return node


def _expected(types: Sequence[str], value: Any) -> str:
    named = [t for t in types if t != "null"] or list(types)
    if "integer" in named and "number" not in named and js_type(value) == "number":
        return "int"
    first = named[0] if named else "value"
    return "number" if first == "integer" else first


def missing_message(schema: Any, root: Any) -> str:
    """What zod says when a required property with schema ``schema`` is absent (``undefined``)."""
    node = _resolve(root, schema)
    if not isinstance(node, dict):
        return "Invalid input: expected value, received undefined"
    if "const" in node:
        return f"Invalid input: expected {js_value(node['const'])}"
    if isinstance(node.get("enum"), list):
        return _enum_message(node["enum"])
    kind = node.get("type")
    if isinstance(kind, str) or (isinstance(kind, list) and kind):
        return f"Invalid input: expected {_expected([kind] if isinstance(kind, str) else kind, None)}, received undefined"
    if "anyOf" in node or "oneOf" in node:
        return "Invalid input"
    return "Invalid input: expected value, received undefined"


def _enum_message(options: Sequence[Any]) -> str:
    if len(options) == 1:
        return f"Invalid input: expected {js_value(options[0])}"
    return "Invalid option: expected one of " + "|".join(js_value(o) for o in options)


def _js_regex(pattern: str) -> str:
    escaped, backslash = [], False
    for ch in pattern:
        escaped.append("\\/" if ch == "/" and not backslash else ch)
        backslash = ch == "\\" and not backslash
    return "/" + ("".join(escaped) or "(?:)") + "/"


def _size(kind: Kind, value: Any, limit: Any, small: bool) -> str:
    origin = js_type(value)
    unit = {"string": "characters", "array": "items", "object": "properties"}.get(origin)
    head = "Too small" if small else "Too big"
    exclusive = type(kind) in (Kind.ExclusiveMinimum, Kind.ExclusiveMaximum)
    op = (">" if small else "<") + ("" if exclusive else "=")
    if unit is None:
        return f"{head}: expected {origin} to be {op}{js_number(limit)}"
    return f"{head}: expected {origin} to have {op}{js_number(limit)} {unit}"


def _contains_message(error: jsonschema_rs.ValidationError, root: Any) -> str:
    node = _node_at(root, error.schema_path[:-1])
    node = node if isinstance(node, dict) else {}
    if error.schema_path and error.schema_path[-1] == "maxContains":
        return f'Invalid array: must contain at most {node.get("maxContains")} items matching "contains"'
    least = node.get("minContains", 1)
    return f'Invalid array: must contain at least {least} item{"s" if least != 1 else ""} matching "contains"'


_Message = Callable[[Any, Any, jsonschema_rs.ValidationError, Any], str]
"""(kind, instance, error, root schema) → message."""

_MESSAGES: dict[type, _Message] = {
    Kind.Type: lambda k, v, e, r: f"Invalid input: expected {_expected(k.types, v)}, received {js_type(v)}",
    Kind.Constant: lambda k, v, e, r: f"Invalid input: expected {js_value(k.expected_value)}",
    Kind.Enum: lambda k, v, e, r: _enum_message(k.options),
    **{c: lambda k, v, e, r: _size(k, v, k.limit, small=True) for c in _MINIMA},
    **{c: lambda k, v, e, r: _size(k, v, k.limit, small=False) for c in _MAXIMA},
    Kind.MultipleOf: lambda k, v, e, r: f"Invalid number: must be a multiple of {js_number(k.multiple_of)}",
    Kind.Pattern: lambda k, v, e, r: f"Invalid string: must match pattern {_js_regex(k.pattern)}",
    **{c: lambda k, v, e, r: f"Invalid string: must match pattern {_js_regex(str(_node_at(r, e.schema_path)))}"
       for c in (Kind.BacktrackLimitExceeded, Kind.RegexEngineFailure)},
    Kind.Format: lambda k, v, e, r: f"Invalid {_FORMAT_NOUNS.get(k.format, k.format)}",
    Kind.UniqueItems: lambda k, v, e, r: "Invalid array: items must be unique",
    Kind.Contains: lambda k, v, e, r: _contains_message(e, r),
    Kind.FalseSchema: lambda k, v, e, r: f"Invalid input: expected never, received {js_type(v)}",
    Kind.Not: lambda k, v, e, r: 'Invalid input: must not match the schema in "not"',
    Kind.OneOfMultipleValid: lambda k, v, e, r: 'Invalid input: matches more than one option of "oneOf"',
    Kind.ContentEncoding: lambda k, v, e, r: f"Invalid {k.content_encoding}-encoded string",
    Kind.ContentMediaType: lambda k, v, e, r: (
        "Invalid JSON string" if k.content_media_type == "application/json" else "Invalid input"
    ),
    Kind.Custom: lambda k, v, e, r: str(k.message),
}  # fmt: skip


def _message(error: jsonschema_rs.ValidationError, root: Any) -> str:
    kind = error.kind
    wording = _MESSAGES.get(type(kind))
    return "Invalid input" if wording is None else wording(kind, error.instance, error, root)


def _issues_of(error: jsonschema_rs.ValidationError, root: Any) -> list[SchemaIssue]:
    kind, path = error.kind, tuple(error.instance_path)
    t = type(kind)
    if t is Kind.Required:
        assert isinstance(kind, Kind.Required)
        # the property's schema: beside this `required`, else where the object itself is described
        sub = _property(_resolve(root, _node_at(root, error.schema_path[:-1])), kind.property)
        if sub is None:
            sub = _property(_describing(root, path), kind.property)
        return [SchemaIssue((*path, kind.property), missing_message(sub, root))]
    if t is Kind.AdditionalProperties or t is Kind.UnevaluatedProperties:
        assert isinstance(kind, (Kind.AdditionalProperties, Kind.UnevaluatedProperties))
        keys = ", ".join(json.dumps(k, ensure_ascii=False) for k in kind.unexpected)
        return [SchemaIssue(path, f"Unrecognized key{'s' if len(kind.unexpected) > 1 else ''}: {keys}")]
    if t is Kind.AdditionalItems:
        assert isinstance(kind, Kind.AdditionalItems)
        return [SchemaIssue(path, f"Too big: expected array to have <={kind.limit} items")]
    if t is Kind.UnevaluatedItems:
        assert isinstance(kind, Kind.UnevaluatedItems)
        return [SchemaIssue(path, f"Too big: expected array to have <={min(kind.unexpected)} items")]
    if t is Kind.PropertyNames:
        assert isinstance(kind, Kind.PropertyNames)
        inner = kind.error
        return [SchemaIssue(path, f"Invalid key {js_value(inner.instance)}: {_message(inner, root)}")]
    if t is Kind.AnyOf or t is Kind.OneOfNotValid:
        assert isinstance(kind, (Kind.AnyOf, Kind.OneOfNotValid))
        return _union_issues(kind.context, path, root)
    return [SchemaIssue(path, _message(error, root))]


def _union_issues(
    branches: Sequence[Sequence[jsonschema_rs.ValidationError]], path: tuple[str | int, ...], root: Any
) -> list[SchemaIssue]:
    refined_only = [b for b in branches if b and all(type(e.kind) in _REFINEMENTS for e in b)]
    if len(refined_only) == 1:
        return [issue for error in refined_only[0] for issue in _issues_of(error, root)]
    return [SchemaIssue(path, "Invalid input")]


def _property(node: Any, name: str | int) -> Any:
    props = node.get("properties") if isinstance(node, dict) else None
    return props.get(name) if isinstance(props, dict) else None


def _describing(root: Any, path: Sequence[str | int]) -> Any:
    """The (resolved) schema describing the value at ``path``, following properties and items."""
    node = _resolve(root, root)
    for part in path:
        if not isinstance(node, dict):
            return None
        node = _resolve(root, node.get("items") if isinstance(part, int) else _property(node, part))
    return node


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _order(issue: SchemaIssue, root: Any) -> tuple[float, ...]:
    """zod reports an object's fields in shape order, then the object's own issues: rank each path
    segment by its position among the (resolved) schema's ``properties``."""
    ranks: list[float] = []
    node = _resolve(root, root)
    for part in issue.path:
        props = node.get("properties") if isinstance(node, dict) else None
        if isinstance(part, int):
            ranks.append(part)
            node = _resolve(root, node.get("items") if isinstance(node, dict) else None)
        elif isinstance(props, dict) and part in props:
            ranks.append(list(props).index(part))
            node = _resolve(root, props[part])
        else:
            ranks.append(math.inf)
            node = None
    return (*ranks, math.inf)


def zod_issues(
    errors: Sequence[jsonschema_rs.ValidationError], root: Any, value: Any
) -> tuple[SchemaIssue, ...]:
    """The zod-worded issues of ``errors`` (from validating ``value`` against ``root``), in zod's order."""
    issues: list[SchemaIssue] = []
    seen: set[SchemaIssue] = set()
    # zod stops checking a value whose type is wrong: no bounds or pattern issues next to the type's
    kinds = [type(e.kind) for e in errors]
    mistyped = {tuple(e.instance_path) for e, k in zip(errors, kinds, strict=True) if k is Kind.Type}
    for error, kind in zip(errors, kinds, strict=True):
        if kind in _REFINEMENTS and tuple(error.instance_path) in mistyped:
            continue
        if kind is Kind.Type and _is_nan(_node_at(value, error.instance_path)):
            # jsonschema-rs reports a NaN as null; zod names it
            found = [SchemaIssue(tuple(error.instance_path), "Invalid input: expected number, received NaN")]
        else:
            found = _issues_of(error, root)
        for issue in found:
            if issue not in seen:
                seen.add(issue)
                issues.append(issue)
    if len(issues) > 1:
        issues.sort(key=lambda issue: _order(issue, root))
    return tuple(issues)

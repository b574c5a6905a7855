"""JSON Schema validation: every keyword enforced with zod's wording, or refused when compiled."""

from __future__ import annotations

from typing import Any

import pydantic
import pytest

from agentstream.tools import (
    SchemaDefinitionError,
    Tool,
    compile_schema,
    format_issues,
    json_schema_of,
    validate_value,
)

D7 = "http://json-schema.org/draft-07/schema#"


def _obj(props: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props, **extra}


# (id, schema, a valid value, an invalid value, the issue lines for the invalid value)
CASES: list[tuple[str, dict[str, Any], Any, Any, list[str]]] = [
    (
        "type",
        _obj({"city": {"type": "string"}}),
        {"city": "Oslo"},
        {"city": 3},
        ["- city: Invalid input: expected string, received number"],
    ),
    (
        "type-integer",
        _obj({"n": {"type": "integer"}}),
        {"n": 2},
        {"n": 2.5},
        ["- n: Invalid input: expected int, received number"],
    ),
    (
        "type-integer-string",
        _obj({"n": {"type": "integer"}}),
        {"n": 2},
        {"n": "2"},
        ["- n: Invalid input: expected number, received string"],
    ),
    (
        "type-nullable",
        _obj({"s": {"type": ["string", "null"]}}),
        {"s": None},
        {"s": True},
        ["- s: Invalid input: expected string, received boolean"],
    ),
    ("type-root", {"type": "object"}, {}, [1], ["- root: Invalid input: expected object, received array"]),
    (
        "required",
        _obj({"city": {"type": "string"}}, required=["city"]),
        {"city": "x"},
        {},
        ["- city: Invalid input: expected string, received undefined"],
    ),
    (
        "required-enum",
        _obj({"u": {"enum": ["C", "F"]}}, required=["u"]),
        {"u": "C"},
        {},
        ['- u: Invalid option: expected one of "C"|"F"'],
    ),
    (
        "additionalProperties",
        _obj({"a": {}}, additionalProperties=False),
        {"a": 1},
        {"a": 1, "b": 2, "c": 3},
        ['- root: Unrecognized keys: "b", "c"'],
    ),
    (
        "additionalProperties-schema",
        _obj({}, additionalProperties={"type": "number"}),
        {"x": 1},
        {"x": "1"},
        ["- x: Invalid input: expected number, received string"],
    ),
    (
        "enum",
        _obj({"u": {"enum": ["C", "F"]}}),
        {"u": "F"},
        {"u": "K"},
        ['- u: Invalid option: expected one of "C"|"F"'],
    ),
    ("const", _obj({"v": {"const": 2}}), {"v": 2}, {"v": 3}, ["- v: Invalid input: expected 2"]),
    (
        "minLength",
        _obj({"s": {"type": "string", "minLength": 2}}),
        {"s": "ab"},
        {"s": "a"},
        ["- s: Too small: expected string to have >=2 characters"],
    ),
    (
        "maxLength",
        _obj({"s": {"type": "string", "maxLength": 2}}),
        {"s": "ab"},
        {"s": "abc"},
        ["- s: Too big: expected string to have <=2 characters"],
    ),
    (
        "minimum",
        _obj({"n": {"type": "number", "minimum": 1}}),
        {"n": 1},
        {"n": 0},
        ["- n: Too small: expected number to be >=1"],
    ),
    (
        "exclusiveMinimum",
        _obj({"n": {"type": "number", "exclusiveMinimum": 1}}),
        {"n": 1.5},
        {"n": 1},
        ["- n: Too small: expected number to be >1"],
    ),
    (
        "maximum",
        _obj({"n": {"type": "number", "maximum": 10}}),
        {"n": 10},
        {"n": 10.5},
        ["- n: Too big: expected number to be <=10"],
    ),
    (
        "exclusiveMaximum",
        _obj({"n": {"type": "number", "exclusiveMaximum": 10}}),
        {"n": 9},
        {"n": 10},
        ["- n: Too big: expected number to be <10"],
    ),
    (
        "multipleOf",
        _obj({"n": {"type": "number", "multipleOf": 5}}),
        {"n": 15},
        {"n": 7},
        ["- n: Invalid number: must be a multiple of 5"],
    ),
    (
        "multipleOf-decimal",
        _obj({"p": {"type": "number", "multipleOf": 0.01}}),
        {"p": 0.07},
        {"p": 0.075},
        ["- p: Invalid number: must be a multiple of 0.01"],
    ),
    (
        "pattern",
        _obj({"code": {"type": "string", "pattern": "^[A-Z]{3}$"}}),
        {"code": "OSL"},
        {"code": "osl"},
        ["- code: Invalid string: must match pattern /^[A-Z]{3}$/"],
    ),
    # ECMA-262: `$` does not match before a trailing newline (Python's `re` would accept this)
    (
        "pattern-dollar",
        _obj({"code": {"type": "string", "pattern": "^[A-Z]{3}$"}}),
        {"code": "OSL"},
        {"code": "OSL\n"},
        ["- code: Invalid string: must match pattern /^[A-Z]{3}$/"],
    ),
    # ECMA-262: `\d` is ASCII only (Python's `re` would accept Arabic-Indic digits)
    (
        "pattern-digits",
        _obj({"n": {"type": "string", "pattern": "^\\d+$"}}),
        {"n": "42"},
        {"n": "٤٢"},
        ["- n: Invalid string: must match pattern /^\\d+$/"],
    ),
    (
        "pattern-slash",
        _obj({"p": {"type": "string", "pattern": "^a/b$"}}),
        {"p": "a/b"},
        {"p": "ab"},
        ["- p: Invalid string: must match pattern /^a\\/b$/"],
    ),
    (
        "patternProperties",
        {"type": "object", "patternProperties": {"^n_": {"type": "number"}}},
        {"n_a": 1},
        {"n_a": "1"},
        ["- n_a: Invalid input: expected number, received string"],
    ),
    (
        "format-email",
        _obj({"e": {"type": "string", "format": "email"}}),
        {"e": "a@b.co"},
        {"e": "nope"},
        ["- e: Invalid email address"],
    ),
    (
        "format-date-time",
        _obj({"t": {"type": "string", "format": "date-time"}}),
        {"t": "2024-01-01T00:00:00Z"},
        {"t": "yesterday"},
        ["- t: Invalid ISO datetime"],
    ),
    (
        "format-uuid",
        _obj({"u": {"type": "string", "format": "uuid"}}),
        {"u": "123e4567-e89b-12d3-a456-426614174000"},
        {"u": "123"},
        ["- u: Invalid UUID"],
    ),
    (
        "format-hostname",
        _obj({"h": {"type": "string", "format": "hostname"}}),
        {"h": "example.com"},
        {"h": "-bad-"},
        ["- h: Invalid hostname"],
    ),
    (
        "format-draft7",
        {"$schema": D7, **_obj({"e": {"type": "string", "format": "ipv4"}})},
        {"e": "1.2.3.4"},
        {"e": "1.2.3"},
        ["- e: Invalid IPv4 address"],
    ),
    (
        "items",
        _obj({"xs": {"type": "array", "items": {"type": "string"}}}),
        {"xs": ["a"]},
        {"xs": ["a", 2]},
        ["- xs.1: Invalid input: expected string, received number"],
    ),
    (
        "minItems",
        _obj({"xs": {"type": "array", "minItems": 1}}),
        {"xs": [1]},
        {"xs": []},
        ["- xs: Too small: expected array to have >=1 items"],
    ),
    (
        "maxItems",
        _obj({"xs": {"type": "array", "maxItems": 1}}),
        {"xs": [1]},
        {"xs": [1, 2]},
        ["- xs: Too big: expected array to have <=1 items"],
    ),
    (
        "uniqueItems",
        _obj({"xs": {"type": "array", "uniqueItems": True}}),
        {"xs": [1, 2]},
        {"xs": [1, 1]},
        ["- xs: Invalid array: items must be unique"],
    ),
    (
        "contains",
        _obj({"xs": {"type": "array", "contains": {"const": "x"}}}),
        {"xs": ["x"]},
        {"xs": ["y"]},
        ['- xs: Invalid array: must contain at least 1 item matching "contains"'],
    ),
    (
        "prefixItems",
        _obj({"t": {"type": "array", "prefixItems": [{"type": "string"}], "items": False}}),
        {"t": ["a"]},
        {"t": ["a", 1]},
        ["- t.1: Invalid input: expected never, received number"],
    ),
    (
        "items-tuple-draft7",
        {"$schema": D7, "type": "array", "items": [{"type": "string"}], "additionalItems": False},
        ["a"],
        ["a", 1],
        ["- root: Too big: expected array to have <=1 items"],
    ),
    (
        "minProperties",
        {"type": "object", "minProperties": 1},
        {"a": 1},
        {},
        ["- root: Too small: expected object to have >=1 properties"],
    ),
    (
        "propertyNames",
        {"type": "object", "propertyNames": {"pattern": "^[a-z]+$"}},
        {"ab": 1},
        {"AB": 1},
        ['- root: Invalid key "AB": Invalid string: must match pattern /^[a-z]+$/'],
    ),
    (
        "dependentRequired",
        _obj({"a": {}, "b": {"type": "string"}}, dependentRequired={"a": ["b"]}),
        {"a": 1, "b": "x"},
        {"a": 1},
        ["- b: Invalid input: expected string, received undefined"],
    ),
    (
        "$ref-$defs",
        {
            "type": "object",
            "properties": {"p": {"$ref": "#/$defs/P"}},
            "required": ["p"],
            "$defs": {"P": _obj({"x": {"type": "integer"}}, required=["x"])},
        },
        {"p": {"x": 1}},
        {"p": {}},
        ["- p.x: Invalid input: expected number, received undefined"],
    ),
    (
        "$ref-missing-property",
        {
            "type": "object",
            "properties": {"p": {"$ref": "#/$defs/P"}},
            "required": ["p"],
            "$defs": {"P": {"type": "string"}},
        },
        {"p": "x"},
        {},
        ["- p: Invalid input: expected string, received undefined"],
    ),
    (
        "$ref-definitions-draft7",
        {
            "$schema": D7,
            "type": "object",
            "properties": {"p": {"$ref": "#/definitions/P"}},
            "definitions": {"P": {"type": "string", "pattern": "^x"}},
        },
        {"p": "xy"},
        {"p": "yx"},
        ["- p: Invalid string: must match pattern /^x/"],
    ),
    (
        "$ref-recursive",
        {
            "$defs": {"node": _obj({"next": {"$ref": "#/$defs/node"}, "v": {"type": "number"}})},
            "$ref": "#/$defs/node",
        },
        {"next": {"next": {"v": 1}}},
        {"next": {"next": {"v": "1"}}},
        ["- next.next.v: Invalid input: expected number, received string"],
    ),
    (
        "allOf",
        {
            "allOf": [
                _obj({"a": {"type": "string"}}, required=["a"]),
                _obj({"b": {"type": "number"}}, required=["b"]),
            ]
        },
        {"a": "x", "b": 1},
        {"a": 1},
        [
            "- a: Invalid input: expected string, received number",
            "- b: Invalid input: expected number, received undefined",
        ],
    ),
    (
        "anyOf",
        _obj({"v": {"anyOf": [{"type": "string"}, {"type": "number"}]}}),
        {"v": 1},
        {"v": True},
        ["- v: Invalid input"],
    ),
    # zod: the one branch that failed only on a refinement reports its issues
    (
        "anyOf-refined",
        _obj({"v": {"anyOf": [{"type": "string", "minLength": 3}, {"type": "null"}]}}),
        {"v": None},
        {"v": "ab"},
        ["- v: Too small: expected string to have >=3 characters"],
    ),
    (
        "oneOf",
        _obj({"v": {"oneOf": [{"type": "integer"}, {"type": "string"}]}}),
        {"v": "x"},
        {"v": 1.5},
        ["- v: Invalid input"],
    ),
    (
        "oneOf-multiple",
        _obj({"v": {"oneOf": [{"type": "integer"}, {"type": "number"}]}}),
        {"v": 1.5},
        {"v": 1},
        ['- v: Invalid input: matches more than one option of "oneOf"'],
    ),
    (
        "not",
        _obj({"v": {"not": {"type": "null"}}}),
        {"v": 1},
        {"v": None},
        ['- v: Invalid input: must not match the schema in "not"'],
    ),
    (
        "if-then-else",
        {
            "type": "object",
            "if": _obj({"kind": {"const": "zip"}}, required=["kind"]),
            "then": _obj({"code": {"type": "string"}}, required=["code"]),
        },
        {"kind": "zip", "code": "0150"},
        {"kind": "zip"},
        ["- code: Invalid input: expected string, received undefined"],
    ),
    (
        "unevaluatedProperties",
        {"allOf": [_obj({"a": {}})], "unevaluatedProperties": False},
        {"a": 1},
        {"a": 1, "b": 2},
        ['- root: Unrecognized key: "b"'],
    ),
    (
        "nan",
        _obj({"n": {"type": "number"}}),
        {"n": 1.0},
        {"n": float("nan")},
        ["- n: Invalid input: expected number, received NaN"],
    ),
    (
        "not-json",
        _obj({"n": {"type": "number"}}),
        {"n": 1},
        {"n": {1, 2}},
        ["- root: Invalid input: expected JSON data, received dict"],
    ),
]


@pytest.mark.parametrize(
    ("schema", "valid", "invalid", "lines"), [pytest.param(*c[1:], id=c[0]) for c in CASES]
)
def test_keyword_table(schema: dict[str, Any], valid: Any, invalid: Any, lines: list[str]) -> None:
    assert validate_value(schema, valid).ok
    outcome = validate_value(schema, invalid)
    assert not outcome.ok
    assert format_issues(outcome.issues).splitlines() == lines


def test_issues_follow_the_schema_property_order_then_the_object() -> None:
    schema = _obj(
        {"a": {"type": "string"}, "b": {"type": "number", "minimum": 3}, "c": {"type": "boolean"}},
        required=["a", "b", "c"],
        additionalProperties=False,
    )
    issues = validate_value(schema, {"zz": 1, "c": 1, "b": 1}).issues
    assert format_issues(issues).splitlines() == [
        "- a: Invalid input: expected string, received undefined",
        "- b: Too small: expected number to be >=3",
        "- c: Invalid input: expected boolean, received number",
        '- root: Unrecognized key: "zz"',
    ]


def test_a_mistyped_value_reports_only_its_type() -> None:
    schema = _obj({"n": {"type": "integer", "minimum": 10, "multipleOf": 5}})
    assert (
        format_issues(validate_value(schema, {"n": 7.5}).issues)
        == "- n: Invalid input: expected int, received number"
    )


def test_catastrophic_pattern_fails_instead_of_hanging() -> None:
    schema = _obj({"s": {"type": "string", "pattern": "^(a+)+(?=b)$"}})
    outcome = validate_value(schema, {"s": "a" * 64 + "c"})
    assert format_issues(outcome.issues) == "- s: Invalid string: must match pattern /^(a+)+(?=b)$/"


# (id, schema, the refused keyword, its JSON Pointer, a phrase of the message)
REFUSED: list[tuple[str, dict[str, Any], str | None, str, str]] = [
    (
        "unknown-keyword",
        _obj({"x": {"type": "string", "nullable": True}}),
        "nullable",
        "/properties/x/nullable",
        '"type": ["<type>", "null"]',
    ),
    (
        "typo",
        _obj({"x": {"type": "string", "maxLenght": 3}}),
        "maxLenght",
        "/properties/x/maxLenght",
        "not a Draft 2020-12 keyword",
    ),
    (
        "2020-keyword-in-draft7",
        {"$schema": D7, "type": "array", "prefixItems": [{}]},
        "prefixItems",
        "/prefixItems",
        "Draft 2020-12 keyword; this schema is Draft 7",
    ),
    (
        "draft7-keyword-in-2020",
        {"type": "object", "dependencies": {"a": ["b"]}},
        "dependencies",
        "/dependencies",
        "Draft 7 keyword",
    ),
    (
        "nested-in-$defs",
        {"$defs": {"A": {"allOf": [{"exotic": 1}]}}},
        "exotic",
        "/$defs/A/allOf/0/exotic",
        "exotic",
    ),
    (
        "content-schema",
        {"type": "string", "contentSchema": {}},
        "contentSchema",
        "/contentSchema",
        "annotation",
    ),
    (
        "remote-$ref",
        _obj({"x": {"$ref": "https://example.com/x.json"}}),
        "$ref",
        "/properties/x/$ref",
        "not fetched",
    ),
    (
        "unresolvable-$ref",
        _obj({"x": {"$ref": "#/$defs/Missing"}}),
        "$ref",
        "/properties/x/$ref",
        "/$defs/Missing",
    ),
    (
        "unknown-format",
        _obj({"x": {"type": "string", "format": "zipcode"}}),
        "format",
        "/properties/x/format",
        "unknown format 'zipcode'",
    ),
    (
        "invalid-pattern",
        _obj({"x": {"type": "string", "pattern": "(["}}),
        "pattern",
        "/properties/x/pattern",
        "regex",
    ),
    ("invalid-type", _obj({"x": {"type": "strnig"}}), "type", "/properties/x/type", "strnig"),
    ("invalid-required", {"type": "object", "required": "a"}, "required", "/required", "invalid"),
    (
        "unsupported-$schema",
        {"$schema": "http://json-schema.org/draft-04/schema#"},
        "$schema",
        "/$schema",
        "Draft 2020-12",
    ),
    (
        "draft7-beside-$ref",
        {
            "$schema": D7,
            "definitions": {"A": {"type": "string"}},
            "properties": {"x": {"$ref": "#/definitions/A", "minLength": 3}},
        },
        "minLength",
        "/properties/x/minLength",
        "ignores every keyword beside $ref",
    ),
    ("mixed-drafts", {"$defs": {"A": {"$schema": D7}}}, "$schema", "/$defs/A/$schema", "another draft"),
]


@pytest.mark.parametrize(
    ("schema", "keyword", "path", "phrase"), [pytest.param(*c[1:], id=c[0]) for c in REFUSED]
)
def test_refused_when_compiled(schema: dict[str, Any], keyword: str | None, path: str, phrase: str) -> None:
    with pytest.raises(SchemaDefinitionError) as info:
        compile_schema(schema)
    assert (info.value.keyword, info.value.path) == (keyword, path)
    assert phrase in str(info.value) and path in str(info.value)


def test_a_tool_refuses_its_schema_when_defined_naming_tool_and_keyword() -> None:
    schema = _obj({"code": {"type": "string", "patern": "^[A-Z]{3}$"}})
    with pytest.raises(
        SchemaDefinitionError, match=r"tool 'airport': input_schema: .*'patern'.*/properties/code"
    ):
        Tool("airport", "d", schema, lambda i, c: i)
    with pytest.raises(SchemaDefinitionError, match="tool 'airport': output_schema"):
        Tool("airport", "d", {}, lambda i, c: i, output_schema={"type": "object", "nullable": True})


def test_annotations_and_extensions_are_accepted() -> None:
    schema = {
        "$schema": D7,
        "$id": "https://example.com/tool.json",
        "title": "T",
        "description": "d",
        "$comment": "c",
        "x-vendor": {"anything": True},
        "type": "object",
        "properties": {"a": {"type": "string", "default": "x", "examples": ["y"], "readOnly": True}},
    }
    assert compile_schema(schema).validate({"a": "z"}).ok


def test_property_names_are_not_keywords() -> None:
    schema = _obj({"nullable": {"type": "boolean"}, "pattern": {"type": "string"}})
    assert validate_value(schema, {"nullable": True, "pattern": "x"}).ok


def test_compile_is_cached_and_a_compiled_schema_validates() -> None:
    schema = _obj({"a": {"type": "string"}})
    compiled = compile_schema(schema)
    assert compile_schema(dict(schema)) is compiled
    assert compile_schema(compiled) is compiled
    assert not validate_value(compiled, {"a": 1}).ok


def test_a_subschema_may_restate_the_root_draft() -> None:
    schema = {
        "$schema": D7,
        "definitions": {"A": {"$schema": D7, "type": "string"}},
        "$ref": "#/definitions/A",
    }
    assert (
        format_issues(validate_value(schema, 1).issues)
        == "- root: Invalid input: expected string, received number"
    )


def test_a_property_required_by_then_is_described_by_the_object_schema() -> None:
    schema = {
        "type": "object",
        "properties": {"kind": {"type": "string"}, "code": {"type": "integer"}},
        "if": {"properties": {"kind": {"const": "zip"}}, "required": ["kind"]},
        "then": {"required": ["code"]},
    }
    outcome = validate_value(schema, {"kind": "zip"})
    assert format_issues(outcome.issues) == "- code: Invalid input: expected number, received undefined"


def test_pattern_inside_an_embedded_resource_is_named() -> None:
    schema = {
        "$defs": {"Code": {"$id": "https://example.com/code.json", "type": "string", "pattern": "^[A-Z]+$"}},
        "type": "object",
        "properties": {"c": {"$ref": "https://example.com/code.json"}},
    }
    outcome = validate_value(schema, {"c": "abc"})
    assert format_issues(outcome.issues) == "- c: Invalid string: must match pattern /^[A-Z]+$/"


class _Point(pydantic.BaseModel):
    point: tuple[int, int]


def test_a_pydantic_schema_with_a_tuple_is_labelled_2020_12_and_compiles_as_a_dict() -> None:
    # zod's Draft 7 label would make the generated ``prefixItems`` a refused keyword when the
    # schema is re-used as a dict (the background wrapper does that)
    schema = json_schema_of(_Point)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    compiled = compile_schema(schema)
    assert validate_value(compiled, {"point": [1, 2]}).ok
    assert [i.message for i in validate_value(compiled, {"point": [1]}).issues] == [
        "Too small: expected array to have >=2 items"
    ]


def test_a_pydantic_schema_without_2020_12_keywords_keeps_the_draft_7_label() -> None:
    class Plain(pydantic.BaseModel):
        city: str

    assert json_schema_of(Plain)["$schema"] == "http://json-schema.org/draft-07/schema#"

"""Tool input validation cost per call: jsonschema-rs (compiled when the tool is defined) against the
hand-written subset it replaced (``_old_schema.py``), measured in the same run.

Run: ``.venv/bin/python bench/bench_schema.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import _old_schema
from _util import best_of, row

from agentstream.tools import CompiledSchema, compile_schema, validate_value

WEATHER = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "properties": {"city": {"type": "string", "description": "City name"}},
    "required": ["city"],
    "additionalProperties": False,
}
"""The recorded vectors' tool schema."""

ORDER = {
    "type": "object",
    "properties": {
        "customer": {
            "type": "object",
            "properties": {"name": {"type": "string", "minLength": 1}, "vip": {"type": "boolean"}},
            "required": ["name"],
        },
        "items": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "properties": {
                    "sku": {"type": "string", "maxLength": 12},
                    "qty": {"type": "integer", "minimum": 1, "maximum": 99},
                },
                "required": ["sku", "qty"],
                "additionalProperties": False,
            },
        },
        "priority": {"enum": ["low", "normal", "high"]},
        "note": {"type": ["string", "null"]},
    },
    "required": ["customer", "items"],
    "additionalProperties": False,
}
"""A richer schema using only keywords the old subset handled, so both validate the same thing."""

CASES: list[tuple[str, dict[str, Any], Any]] = [
    ("weather valid", WEATHER, {"city": "Oslo"}),
    ("weather invalid (missing city)", WEATHER, {}),
    (
        "order valid (3 items)",
        ORDER,
        {
            "customer": {"name": "Ada", "vip": True},
            "items": [{"sku": f"SKU-{i}", "qty": i + 1} for i in range(3)],
            "priority": "high",
            "note": None,
        },
    ),
    (
        "order invalid (4 issues)",
        ORDER,
        {"customer": {}, "items": [{"sku": "x" * 20, "qty": 0}, {"qty": 1.5}], "priority": "urgent"},
    ),
]


def main() -> None:
    n = 20_000
    print(f"tool input validation, {n:,} calls per case (best of 5); reference: the old hand-written subset")
    for name, schema, value in CASES:
        old_issues = _old_schema.validate_value(schema, value).issues
        compiled = compile_schema(schema)
        new_issues = compiled.validate(value).issues
        assert bool(old_issues) == bool(new_issues), name

        def old(schema: dict[str, Any] = schema, value: Any = value) -> None:
            for _ in range(n):
                _old_schema.validate_value(schema, value)

        def new(compiled: Any = compiled, value: Any = value) -> None:
            for _ in range(n):
                compiled.validate(value)

        def new_uncompiled(schema: dict[str, Any] = schema, value: Any = value) -> None:
            for _ in range(n):
                validate_value(schema, value)

        reference = best_of(old)
        print(row(f"{name}: old subset", n, reference))
        print(row(f"{name}: jsonschema-rs, compiled (Tool)", n, best_of(new), reference))
        print(row(f"{name}: validate_value(dict) (cached)", n, best_of(new_uncompiled), reference))
    compiles = 200
    seconds = best_of(lambda: [CompiledSchema(ORDER) for _ in range(compiles)])
    print(f"compiling the order schema (once, when the tool is defined): {seconds / compiles * 1e6:.0f} us")


if __name__ == "__main__":
    main()

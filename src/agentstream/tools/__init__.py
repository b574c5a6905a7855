"""Tools: ``Tool``, ``@tool``, argument schemas and the tool execution context."""

from __future__ import annotations

from ._errors import RedactedToolError, ToolErrorMask
from ._schema import Schema, SchemaIssue, ValidationOutcome, json_schema_of, validate_value
from ._tool import Tool, ToolContext, ToolInputValidationError, ToolWriter, tool

__all__ = [
    "RedactedToolError",
    "Schema",
    "SchemaIssue",
    "Tool",
    "ToolContext",
    "ToolErrorMask",
    "ToolInputValidationError",
    "ToolWriter",
    "ValidationOutcome",
    "json_schema_of",
    "tool",
    "validate_value",
]

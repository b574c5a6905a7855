"""Tools: ``Tool``, ``@tool``, argument schemas and the tool execution context."""

from __future__ import annotations

from ._background import AgentBackgroundConfig, AgentToolBackgroundConfig, TaskCallback, ToolBackgroundConfig
from ._schema import Schema, SchemaIssue, ValidationOutcome, format_issues, json_schema_of, validate_value
from ._tool import Tool, ToolContext, ToolInputValidationError, ToolWriter, tool

__all__ = [
    "AgentBackgroundConfig",
    "AgentToolBackgroundConfig",
    "Schema",
    "SchemaIssue",
    "TaskCallback",
    "Tool",
    "ToolBackgroundConfig",
    "ToolContext",
    "ToolInputValidationError",
    "ToolWriter",
    "ValidationOutcome",
    "format_issues",
    "json_schema_of",
    "tool",
    "validate_value",
]

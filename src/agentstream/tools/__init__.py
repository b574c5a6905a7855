"""Tools: ``Tool``, ``@tool``, argument schemas and the tool execution context."""

from __future__ import annotations

from ._background import AgentBackgroundConfig, AgentToolBackgroundConfig, TaskCallback, ToolBackgroundConfig
from ._errors import RedactedToolError, ToolErrorMask, reported_tool_error
from ._schema import Schema, SchemaIssue, ValidationOutcome, format_issues, json_schema_of, validate_value
from ._suspend import ToolSuspended
from ._tool import Tool, ToolContext, ToolInputValidationError, ToolWriter, tool

__all__ = [
    "AgentBackgroundConfig",
    "AgentToolBackgroundConfig",
    "RedactedToolError",
    "Schema",
    "SchemaIssue",
    "TaskCallback",
    "Tool",
    "ToolBackgroundConfig",
    "ToolContext",
    "ToolErrorMask",
    "ToolInputValidationError",
    "ToolSuspended",
    "ToolWriter",
    "ValidationOutcome",
    "format_issues",
    "json_schema_of",
    "reported_tool_error",
    "tool",
    "validate_value",
]

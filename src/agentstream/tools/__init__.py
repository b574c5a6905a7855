"""Tools: ``Tool``, ``@tool``, argument schemas and the tool execution context."""

from __future__ import annotations

from ._background import AgentBackgroundConfig, AgentToolBackgroundConfig, TaskCallback, ToolBackgroundConfig
from ._errors import RedactedToolError, ToolErrorMask, reported_tool_error
from ._schema import (
    CompiledSchema,
    Schema,
    SchemaDefinitionError,
    SchemaIssue,
    ValidationOutcome,
    compile_schema,
    format_issues,
    issues_tree,
    json_schema_of,
    validate_value,
)
from ._suspend import ToolSuspended
from ._tool import Tool, ToolContext, ToolInputValidationError, ToolWriter, tool

__all__ = [
    "AgentBackgroundConfig",
    "AgentToolBackgroundConfig",
    "CompiledSchema",
    "RedactedToolError",
    "Schema",
    "SchemaDefinitionError",
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
    "compile_schema",
    "format_issues",
    "issues_tree",
    "json_schema_of",
    "reported_tool_error",
    "tool",
    "validate_value",
]

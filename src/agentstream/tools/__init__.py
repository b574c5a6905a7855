"""Tools: ``Tool``, ``@tool``, argument schemas and the tool execution context."""

from __future__ import annotations

from ._background import AgentBackgroundConfig, AgentToolBackgroundConfig, TaskCallback, ToolBackgroundConfig
from ._errors import RedactedToolError, ToolErrorMask, reported_tool_error
from ._mcp_context import LogLevel, MCPElicitation, MCPToolExecutionContext
from ._provider import (
    ProviderTool,
    anthropic_code_execution,
    anthropic_web_search,
    google_code_execution,
    google_search,
    google_url_context,
    openai_web_search,
)
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
    "LogLevel",
    "MCPElicitation",
    "MCPToolExecutionContext",
    "ProviderTool",
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
    "anthropic_code_execution",
    "anthropic_web_search",
    "compile_schema",
    "format_issues",
    "google_code_execution",
    "google_search",
    "google_url_context",
    "issues_tree",
    "json_schema_of",
    "openai_web_search",
    "reported_tool_error",
    "tool",
    "validate_value",
]

"""An MCP server's tools as agentstream `Tool` objects (Mastra's ``<server>_<tool>`` tools).

A call validates its arguments against the server's input schema like any local tool (the loop
does, before ``execute``), streams the server's progress notifications as ``tool-output`` while it
runs, is cancelled when the run's abort signal fires, is bounded by the server's ``timeout``, and
reconnects once when the session died. The result is what Mastra hands on: the server's
``structuredContent`` when it sent one, else the raw ``{content: [...]}``; an ``isError`` result
raises `MCPToolError` (a ``tool-error`` chunk; the model gets the server's text).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

import jsonschema  # type: ignore[import-untyped]
from mcp_types import CallToolResult, TextContent
from mcp_types import Tool as MCPToolDefinition

from .._abort import AbortError, until_aborted
from ..tools import SchemaIssue, Tool, ToolContext, ToolSuspended, format_issues, issues_tree
from ._connection import Connection, is_connection_failure, is_timeout
from ._elicit_suspend import calling_tool, reset_calling
from ._errors import MCPConnectionError, MCPTimeoutError, MCPToolError

__all__ = ["MCPTool", "ajv_issues", "build_tool", "call_tool", "listed_schema"]

INSTRUCTIONS_MAX_LENGTH = 512


@dataclass
class MCPTool(Tool):
    """A `Tool` that calls ``mcp_name`` on MCP server ``server_name``."""

    server_name: str = ""
    mcp_name: str = ""
    annotations: dict[str, Any] | None = None
    """The server's tool annotations (``readOnlyHint``, ...), as Mastra's ``tool.mcp.annotations``."""
    mcp_metadata: dict[str, Any] = field(default_factory=dict)
    """``{serverName, serverVersion, serverInstructions, forwardInstructions, instructionsMaxLength}``."""

    def validation_error(self, args: Any) -> tuple[Any, dict[str, Any] | None]:
        """The shared JSON Schema validation; a failure worded as Mastra words it for MCP tools.

        ``@mastra/mcp`` checks MCP arguments against the server's JSON Schema with ajv, so the
        model reads ``- a: must be number`` where a local (zod) tool says ``Invalid input: ...``
        (recorded in ``client-stdio-agent-tool-errors``).
        """
        parsed, error = super().validation_error(args)
        if error is None:
            return parsed, None
        issues = ajv_issues(self.input_schema if isinstance(self.input_schema, dict) else {}, args)
        if not issues:
            return parsed, error
        provided = json.dumps(args, indent=2, ensure_ascii=False, default=str)
        message = (
            f"Tool input validation failed for {self.id}. Please fix the following errors and try again:\n"
            f"{format_issues(issues)}\n\nProvided arguments: {provided}"
        )
        return args, {"error": True, "message": message, "validationErrors": issues_tree(issues)}


def _ajv_message(error: jsonschema.ValidationError) -> str:
    """ajv's English wording of one failed keyword."""
    keyword, value = error.validator, error.validator_value
    if keyword == "type":
        return f"must be {','.join(value) if isinstance(value, list) else value}"
    if keyword == "required":
        missing = str(error.message).split("'")[1] if "'" in str(error.message) else ""
        return f"must have required property '{missing}'"
    if keyword == "additionalProperties":
        return "must NOT have additional properties"
    if keyword == "enum":
        return "must be equal to one of the allowed values"
    if keyword == "const":
        return "must be equal to constant"
    bounds = {"minimum": ">=", "maximum": "<=", "exclusiveMinimum": ">", "exclusiveMaximum": "<"}
    if keyword in bounds:
        return f"must be {bounds[keyword]} {value}"
    if keyword in ("minLength", "maxLength", "minItems", "maxItems"):
        kind = "characters" if "Length" in keyword else "items"
        return f"must NOT have {'fewer' if keyword.startswith('min') else 'more'} than {value} {kind}"
    if keyword == "pattern":
        return f'must match pattern "{value}"'
    if keyword == "format":
        return f'must match format "{value}"'
    return str(error.message)


def ajv_issues(schema: dict[str, Any], value: Any) -> tuple[SchemaIssue, ...]:
    """``value``'s problems against ``schema`` as ajv words them (``required`` at the missing key)."""
    validator_cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft7Validator)
    out = []
    for error in sorted(validator_cls(schema).iter_errors(value), key=lambda e: list(e.absolute_path)):
        path = tuple(error.absolute_path)
        message = _ajv_message(error)
        if error.validator == "required":
            path = (*path, message.split("'")[1])
        out.append(SchemaIssue(path=path, message=message))
    return tuple(out)


def listed_schema(schema: dict[str, Any] | None) -> dict[str, Any]:
    """A server's JSON Schema as Mastra offers it: draft-07, objects closed (``additionalProperties: false``)."""
    out = dict(schema or {"type": "object", "properties": {}})
    out.setdefault("$schema", "http://json-schema.org/draft-07/schema#")
    if out.get("type") == "object":
        out.setdefault("additionalProperties", False)
    return out


def _text_of(result: CallToolResult) -> str:
    texts = [c.text for c in result.content if isinstance(c, TextContent)]
    return "\n".join(texts) if texts else json.dumps(result.model_dump(mode="json", by_alias=True))


def _progress_writer(connection: Connection, tool: str, context: ToolContext | None) -> Any:
    if context is None:
        return None

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        output: dict[str, Any] = {
            "type": "mcp-progress",
            "serverName": connection.name,
            "toolName": tool,
            "progress": progress,
        }
        if total is not None:
            output["total"] = total
        if message is not None:
            output["message"] = message
        context.writer.write(output)

    return on_progress


async def call_tool(
    connection: Connection, name: str, arguments: dict[str, Any], context: ToolContext | None = None
) -> CallToolResult:
    """``tools/call`` on ``connection``: bounded, abortable, reconnecting once after a lost session."""
    signal = context.abort_signal if context is not None else None
    progress = _progress_writer(connection, name, context)
    token = calling_tool(context)  # a server's question during the call finds its tool
    try:
        return await _call_with_retry(connection, name, arguments, progress, signal)
    finally:
        reset_calling(token)


async def _call_with_retry(
    connection: Connection, name: str, arguments: dict[str, Any], progress: Any, signal: Any
) -> CallToolResult:
    for attempt in (1, 2):
        try:
            client = await connection.client()
            call = client.call_tool(
                name, arguments, read_timeout_seconds=connection.timeout, progress_callback=progress
            )
            # The SDK bounds the read; the outer bound also covers a transport that never answers.
            return await until_aborted(asyncio.wait_for(call, connection.timeout + 5), signal)
        except AbortError:
            raise
        except Exception as exc:
            suspended = _suspension_in(exc)
            if suspended is not None:  # the elicitation callback suspended the run
                raise suspended from None
            if is_timeout(exc):
                raise MCPTimeoutError(
                    f"MCP server {connection.name!r} did not answer tools/call {name!r} "
                    f"within {connection.timeout:g}s",
                    server_name=connection.name,
                    tool_name=name,
                ) from exc
            if attempt == 1 and is_connection_failure(exc):
                try:
                    await connection.reconnect()
                except MCPConnectionError:
                    pass  # the second attempt reports it
                continue
            if is_connection_failure(exc):
                raise MCPConnectionError(
                    f"MCP server {connection.name!r}: tools/call {name!r} failed after a reconnect: "
                    f"{exc if str(exc) else type(exc).__name__}",
                    server_name=connection.name,
                    tool_name=name,
                ) from exc
            raise
    raise AssertionError("unreachable")  # pragma: no cover


def _suspension_in(exc: BaseException) -> ToolSuspended | None:
    if isinstance(exc, ToolSuspended):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = _suspension_in(inner)
            if found is not None:
                return found
    return None


def _result_of(definition: MCPToolDefinition, server: str, result: CallToolResult) -> Any:
    if result.is_error:
        raise MCPToolError(_text_of(result), server_name=server, tool_name=definition.name, result=result)
    if result.structured_content is not None:
        return result.structured_content
    if definition.output_schema is not None:
        # A server older than structuredContent sends the value as its one text item.
        texts = [c for c in result.content if isinstance(c, TextContent)]
        if len(result.content) == 1 and len(texts) == 1:
            try:
                return json.loads(texts[0].text)
            except ValueError:
                return texts[0].text
    return result.model_dump(mode="json", by_alias=True, exclude_unset=True)


def build_tool(
    connection: Connection,
    definition: MCPToolDefinition,
    *,
    server_version: str | None,
    instructions: str | None,
) -> MCPTool:
    """``definition`` (from ``tools/list``) as an `MCPTool` named ``<server>_<tool>``."""
    server = connection.name

    async def execute(args: Any, context: ToolContext) -> Any:
        arguments = args if isinstance(args, dict) else {}
        result = await call_tool(connection, definition.name, arguments, context)
        return _result_of(definition, server, result)

    output_schema = None if definition.output_schema is None else listed_schema(definition.output_schema)
    annotations = (
        None
        if definition.annotations is None
        else definition.annotations.model_dump(mode="json", by_alias=True, exclude_none=True)
    )
    return MCPTool(
        id=f"{server}_{definition.name}",
        description=definition.description or "",
        input_schema=listed_schema(definition.input_schema),
        output_schema=output_schema,
        execute=execute,
        # Mastra gives an outputSchema tool a toModelOutput: the model sees the unwrapped value as JSON.
        to_model_output=None if output_schema is None else (lambda value: {"type": "json", "value": value}),
        server_name=server,
        mcp_name=definition.name,
        annotations=annotations,
        mcp_metadata={
            "serverName": server,
            "serverVersion": server_version,
            "serverInstructions": instructions,
            "forwardInstructions": False,
            "instructionsMaxLength": INSTRUCTIONS_MAX_LENGTH,
        },
    )

"""`MCPServer`: agentstream tools, agents and workflows as MCP tools (Mastra's ``MCPServer``).

Tools keep their keys; each agent is ``ask_<key>`` (input ``{message}``), each workflow
``run_<key>`` (the workflow's input schema): the names, descriptions and result shapes recorded
from ``@mastra/mcp`` 2.0 (``conformance/mcp/server-*.json``). Failures are ``isError`` results,
never JSON-RPC errors. Served over stdio (`run_stdio`, ``agentstream mcp serve``) or streamable
HTTP (`http_app`, an ASGI app behind a `RequestGuard`).
"""

from __future__ import annotations

import asyncio
import json
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.subscriptions import SubscriptionBus
from mcp.shared.exceptions import MCPDeprecationWarning

from .._abort import AbortController
from ..agent import Agent
from ..chunks import TextDelta, ToolOutput, to_jsonable
from ..tools import Tool, ToolContext, ToolWriter, json_schema_of
from ..workflows import Workflow
from ._server_context import InputRequired, LogLevels, ServerToolContext, UnsupportedByClient
from ._server_notify import Notifier, PromptNotifications, ResourceNotifications, ToolNotifications
from ._server_resources import MCPPrompt, MCPResource, MCPResourceTemplate, ServedExtras

__all__ = ["MCPServer"]

_DRAFT_2020 = "https://json-schema.org/draft/2020-12/schema"
_DRAFT_07 = "http://json-schema.org/draft-07/schema#"
_AGENT_INPUT = {
    "$schema": _DRAFT_07,
    "type": "object",
    "properties": {"message": {"type": "string", "description": "The question or input for the agent."}},
    "required": ["message"],
    "additionalProperties": False,
}


def _compact(value: Any) -> str:
    return json.dumps(to_jsonable(value), separators=(",", ":"), ensure_ascii=False)


def _js_name(error: BaseException) -> str:
    name = getattr(error, "name", None)
    if isinstance(name, str):
        return name
    return "Error" if type(error) is Exception else type(error).__name__


def _failure(error: BaseException) -> dict[str, Any]:
    """A tool's exception as Mastra's ``TOOL_EXECUTION_FAILED`` error JSON."""
    name = _js_name(error)
    return {
        "message": str(error),
        "domain": "TOOL",
        "category": "USER",
        "code": "TOOL_EXECUTION_FAILED",
        "details": {"errorMessage": f"{name}: {error}", "model": ""},
        "cause": {"message": str(error), "name": name},
    }


def _text(text: str, *, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=error)


def _schema(schema: Any, draft: str) -> dict[str, Any]:
    out = dict(json_schema_of(schema)) if schema is not None else {"type": "object", "properties": {}}
    out.pop("$schema", None)
    return {"$schema": draft, **out}


def _check_names(tools: Mapping[str, Any], agents: Mapping[str, Any], workflows: Mapping[str, Any]) -> None:
    for kind, entries, cls in (
        ("tools", tools, Tool),
        ("agents", agents, Agent),
        ("workflows", workflows, Workflow),
    ):
        for key, value in entries.items():
            if not isinstance(key, str) or not key:
                raise TypeError(f"MCPServer {kind} keys must be non-empty strings, got {key!r}")
            if not isinstance(value, cls):
                raise TypeError(
                    f"MCPServer {kind}[{key!r}] must be a {cls.__name__}, got {type(value).__name__}"
                )
    names = [*tools, *(f"ask_{k}" for k in agents), *(f"run_{k}" for k in workflows)]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(
            f"MCPServer: tool names {duplicates} are given twice (tools, ask_<agent>, run_<workflow>)"
        )


def _mcp_result(value: Any) -> types.CallToolResult | None:
    """``value`` if it is already an MCP tool result (``{content: [{type, ...}], ...}``: a proxied MCP
    tool's raw result, images and resources included), else ``None``."""
    if not isinstance(value, dict) or not isinstance(value.get("content"), list):
        return None
    if not value["content"] or not all(isinstance(c, dict) and "type" in c for c in value["content"]):
        return None
    try:
        return types.CallToolResult.model_validate(value)
    except ValueError:
        return None


def _result(tool: Tool, result: Any) -> types.CallToolResult:
    passthrough = _mcp_result(result)
    if passthrough is not None:
        return passthrough
    if tool.output_schema is not None:
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=_compact(result))],
            structured_content=result if isinstance(result, dict) else {"result": result},
            is_error=False,
        )
    return _text(result if isinstance(result, str) else _compact(result))


class _Lowlevel(Server[Any]):
    """The SDK server, advertising ``listChanged`` to 2025-11-25 clients: `MCPServer` sends list
    changes when the app calls ``notify_list_changed`` (2026-07-28 derives it from
    ``subscriptions/listen`` being served)."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or NotificationOptions(True, True, True),
            experimental_capabilities,
            extensions,
        )


class _ProgressPump:
    """A tool's ``context.writer.write(x)`` calls, sent in order as MCP progress notifications.

    ``x`` = ``{"progress": n, "total"?: t, "message"?: m}`` is sent as those numbers; anything else
    as the next count with its JSON as the message. The writer is synchronous, so writes queue
    here and one task sends them; `drain` waits for the last before the result goes out.
    """

    def __init__(self, ctx: ServerRequestContext[Any] | None) -> None:
        self._ctx = ctx
        self._count = 0
        self._queue: asyncio.Queue[tuple[float, float | None, str | None] | None] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None

    def emit(self, chunk: Any) -> None:
        if self._ctx is None or not isinstance(chunk, ToolOutput):
            return
        output = chunk.payload.output
        self._count += 1
        if isinstance(output, dict) and isinstance(output.get("progress"), (int, float)):
            total, message = output.get("total"), output.get("message")
            item = (
                float(output["progress"]),
                float(total) if isinstance(total, (int, float)) else None,
                message if isinstance(message, str) else None,
            )
        else:
            item = (float(self._count), None, output if isinstance(output, str) else _compact(output))
        self._queue.put_nowait(item)
        if self._task is None:
            self._task = asyncio.create_task(self._pump())

    async def _pump(self) -> None:
        assert self._ctx is not None
        while (item := await self._queue.get()) is not None:
            await self._ctx.session.report_progress(*item)

    async def drain(self) -> None:
        if self._task is not None:
            self._queue.put_nowait(None)
            await self._task


class MCPServer:
    """An MCP server exposing ``tools`` (by key), ``agents`` (as ``ask_<key>``) and ``workflows``
    (as ``run_<key>``), and the ``resources``, ``resource_templates`` and ``prompts`` given.

    ``run_stdio()`` serves the process's stdin/stdout; ``http_app(guard=...)`` is an ASGI app for
    streamable HTTP. An agent's answer streams to the caller as MCP progress notifications (one per
    text delta, the delta as the notification's ``message``) when the caller asked for progress.
    """

    def __init__(
        self,
        *,
        name: str,
        version: str,
        tools: Mapping[str, Tool] | None = None,
        agents: Mapping[str, Agent] | None = None,
        workflows: Mapping[str, Workflow] | None = None,
        instructions: str | None = None,
        resources: Sequence[MCPResource] = (),
        resource_templates: Sequence[MCPResourceTemplate] = (),
        prompts: Sequence[MCPPrompt] = (),
        id: str | None = None,
        subscription_bus: SubscriptionBus | None = None,
    ) -> None:
        if not isinstance(name, str) or not name or not isinstance(version, str) or not version:
            raise ValueError(f"MCPServer needs a non-empty name and version, got {name!r}, {version!r}")
        self.name, self.version, self.id = name, version, id or name
        self.instructions = instructions
        self.tools = dict(tools or {})
        self.agents = dict(agents or {})
        self.workflows = dict(workflows or {})
        _check_names(self.tools, self.agents, self.workflows)
        self.notifier = Notifier(subscription_bus)
        self.resources = ResourceNotifications(self.notifier)
        """``notify_updated(uri=...)``, ``notify_list_changed()`` (Mastra's ``server.resources``)."""
        self.prompts = PromptNotifications(self.notifier)
        """``notify_list_changed()`` (Mastra's ``server.prompts``)."""
        self.tool_actions = ToolNotifications(self.notifier)
        """``notify_list_changed()`` after changing ``tools`` (Mastra's ``server.toolActions``)."""
        self.extras = ServedExtras(resources, resource_templates, prompts, self.notifier)
        self.log_levels = LogLevels()
        with warnings.catch_warnings():
            # logging/setLevel is deprecated from 2026-07-28 on, but 2025-11-25 clients still use it
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            self.lowlevel: Server[Any] = _Lowlevel(
                name,
                version=version,
                instructions=instructions,
                on_list_tools=self._on_list_tools,
                on_call_tool=self._on_call_tool,
                on_set_logging_level=self._on_set_logging_level,
                on_subscriptions_listen=self.notifier.listen,
                **self.extras.handlers(),
            )
        self.lowlevel.add_notification_handler(
            "notifications/initialized", types.NotificationParams, self.notifier.on_initialized
        )

    # ------------------------------------------------------------------ listing

    def tool_definitions(self) -> list[types.Tool]:
        """What ``tools/list`` answers."""
        out = []
        for key, tool in self.tools.items():
            output = None if tool.output_schema is None else _schema(tool.output_schema, _DRAFT_2020)
            out.append(
                types.Tool(
                    name=key,
                    description=tool.description,
                    input_schema=_schema(tool.input_schema, _DRAFT_2020),
                    output_schema=output,
                )
            )
        for key, agent in self.agents.items():
            description = f"Ask agent '{agent.name}' a question. Agent description: {agent.description or ''}"
            out.append(
                types.Tool(name=f"ask_{key}", description=description, input_schema=dict(_AGENT_INPUT))
            )
        for key, workflow in self.workflows.items():
            description = f"Run workflow '{key}'. Workflow description: {workflow.description or ''}"
            out.append(
                types.Tool(
                    name=f"run_{key}",
                    description=description,
                    input_schema=_schema(workflow.input_schema, _DRAFT_07),
                )
            )
        return out

    async def _on_list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self.tool_definitions())

    async def _on_set_logging_level(
        self, ctx: ServerRequestContext[Any], params: types.SetLevelRequestParams
    ) -> types.EmptyResult:
        self.log_levels.set(ctx, params.level)
        return types.EmptyResult()

    # ------------------------------------------------------------------ calling

    async def _on_call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        return await self.execute_tool(params.name, dict(params.arguments or {}), ctx)

    async def execute_tool(
        self, name: str, arguments: dict[str, Any], ctx: ServerRequestContext[Any] | None = None
    ) -> types.CallToolResult | types.InputRequiredResult:
        """Call tool ``name`` as an MCP client would (Mastra's ``server.executeTool``)."""
        if name in self.tools:
            return await self._call_tool(self.tools[name], name, arguments, ctx)
        if name.startswith("ask_") and name[4:] in self.agents:
            return await self._ask(self.agents[name[4:]], arguments, ctx)
        if name.startswith("run_") and name[4:] in self.workflows:
            return await self._run(self.workflows[name[4:]], name[4:], arguments)
        return _text(f"Unknown tool: {name}", error=True)

    async def _call_tool(
        self, tool: Tool, key: str, arguments: dict[str, Any], ctx: ServerRequestContext[Any] | None
    ) -> types.CallToolResult | types.InputRequiredResult:
        parsed, invalid = tool.validation_error(arguments)
        if invalid is not None:
            return _text(str(invalid["message"]).replace(f"for {tool.id}.", f"for {key}.", 1), error=True)
        controller = AbortController()
        progress = _ProgressPump(ctx)
        context = ToolContext(
            run_id=f"mcp-{key}",
            tool_call_id=f"mcp-{key}",
            tool_name=key,
            agent_id=None,
            abort_signal=controller.signal,
            writer=ToolWriter(progress.emit, run_id=f"mcp-{key}", tool_call_id=f"mcp-{key}", tool_name=key),
            mcp=None if ctx is None else ServerToolContext(ctx, self.log_levels),
        )
        try:
            result = await tool.run(parsed, context)
        except asyncio.CancelledError:
            controller.abort()
            raise
        except UnsupportedByClient as exc:
            return _text(str(exc), error=True)
        except InputRequired as needed:
            return types.InputRequiredResult(input_requests=needed.requests)
        except Exception as exc:
            return _text(_compact(_failure(exc)), error=True)
        finally:
            await progress.drain()
        return _result(tool, result)

    async def _ask(
        self, agent: Agent, arguments: dict[str, Any], ctx: ServerRequestContext[Any] | None
    ) -> types.CallToolResult:
        message = arguments.get("message")
        if not isinstance(message, str):
            return _text(
                "Tool input validation failed for ask agent. Please fix the following errors and try again:\n"
                f"- message: Invalid input: expected string, received {type(message).__name__}",
                error=True,
            )
        controller = AbortController()
        output = agent.stream(message, abort_signal=controller.signal)
        sent = 0
        try:
            async for chunk in output.full_stream:
                if isinstance(chunk, TextDelta) and ctx is not None:
                    sent += 1
                    await ctx.session.report_progress(sent, None, chunk.payload.text)
            answer = {
                "text": await output.text,
                "usage": to_jsonable(await output.usage),
                "finishReason": await output.finish_reason,
                "toolCalls": to_jsonable(await output.tool_calls),
                "toolResults": to_jsonable(await output.tool_results),
            }
        except asyncio.CancelledError:
            controller.abort()
            raise
        except Exception as exc:
            return _text(_compact(_failure(exc)), error=True)
        return _text(_compact(answer))

    async def _run(self, workflow: Workflow, key: str, arguments: dict[str, Any]) -> types.CallToolResult:
        try:
            run = await workflow.create_run()
            result = await run.start(input_data=arguments)
        except Exception as exc:
            return _text(_compact(_failure(exc)), error=True)
        return _text(_compact(result.to_dict()), error=result.status == "failed")

    # ------------------------------------------------------------------ transports

    async def run_stdio(self) -> None:
        """Serve MCP over this process's stdin/stdout until stdin closes."""
        from mcp.server.stdio import stdio_server

        async with stdio_server() as (read, write):
            await self.lowlevel.run(read, write, self.lowlevel.create_initialization_options())

    def http_app(self, *, path: str = "/mcp", guard: Any = None) -> Any:
        """The streamable HTTP endpoint at ``path`` as an ASGI app, checked by ``guard`` (a
        `RequestGuard`; the default one when ``None``). See `agentstream.mcp.MCPHttpApp`."""
        from ._http import MCPHttpApp

        return MCPHttpApp(self, path=path, guard=guard)

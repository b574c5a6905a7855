"""The Mastra API's tools: ``GET /api/tools``, ``GET /api/tools/:toolId``, ``POST
/api/tools/:toolId/execute`` and the agent-scoped ``GET /api/agents/:agentId/tools/:toolId`` and
``POST …/execute`` (what ``client.getTool(id)`` and ``agent.getTool(id)`` call).

A tool is described as Mastra serialises it: ``{id, description, inputSchema, outputSchema,
requireApproval}`` with each schema a superjson string (``'{"json": <JSON Schema>}'``), which
Studio's tool form parses. ``execute`` answers the tool's own result, or for arguments that do not
match the schema Mastra's ``{error: true, message, validationErrors}``; a tool that raises is a 500
with its (redacted) message.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import TYPE_CHECKING, Any

from .._abort import AbortController
from .._request_context import RequestContext
from ..chunks import Chunk
from ..tools import Tool, ToolContext, ToolWriter, json_schema_of, reported_tool_error
from ._http import ApiError, api_route, json_answer, read_object

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import BaseRoute

    from ..agent import Agent
    from ._context import ApiContext

__all__ = ["all_tools", "find_agent", "routes", "tool_json"]


def _schema_string(schema: Any) -> str:
    """A schema as Mastra's wire carries it: superjson's ``{"json": …}``, as a JSON string."""
    return json.dumps({"json": json_schema_of(schema)}, separators=(",", ":"), ensure_ascii=False)


def tool_json(tool: Tool) -> dict[str, Any]:
    """A tool as Mastra's ``SerializedTool`` (absent keys rather than nulls)."""
    out: dict[str, Any] = {"id": tool.id, "description": tool.description}
    out["inputSchema"] = _schema_string(tool.input_schema)
    if tool.output_schema is not None:
        out["outputSchema"] = _schema_string(tool.output_schema)
    if tool.suspend_schema is not None:
        out["suspendSchema"] = _schema_string(tool.suspend_schema)
    if tool.resume_schema is not None:
        out["resumeSchema"] = _schema_string(tool.resume_schema)
    out["requireApproval"] = tool.require_approval
    return out


def find_agent(context: ApiContext, agent_id: str) -> tuple[str, Agent]:
    """The agent by its registration key or its id (Mastra looks up both); 404 otherwise."""
    agents = context.mastra.get_agents()
    if agent_id in agents:
        return agent_id, agents[agent_id]
    for key, agent in agents.items():
        if agent.id == agent_id:
            return key, agent
    raise ApiError(f"Agent with id {agent_id} not found", 404)


def all_tools(context: ApiContext) -> dict[str, Tool]:
    """The server's tools: every agent's, by tool id (the first agent to name an id wins).

    Mastra lists the tools registered on the ``Mastra`` itself; ours has no such registry, so the
    agents' tools stand for it (docs/mastra-api.md)."""
    out: dict[str, Tool] = {}
    for agent in context.mastra.get_agents().values():
        for tool in agent.tools.values():
            out.setdefault(tool.id, tool)
    return out


def _tool_of(tools: dict[str, Tool], tool_id: str) -> Tool:
    if tool_id in tools:
        return tools[tool_id]
    raise ApiError(f"Tool with id {tool_id} not found", 404)


async def execute_tool(tool: Tool, body: dict[str, Any], agent_id: str | None) -> Any:
    """Run ``tool`` on ``body["data"]`` as Mastra's execute route does; its JSON result."""
    if "data" not in body:
        raise ApiError("Tool input data is required (the body's 'data')")
    parsed, invalid = tool.validation_error(body["data"])
    if invalid is not None:
        return invalid
    given = body.get("runId")
    run_id = given if isinstance(given, str) and given else f"tool-{uuid.uuid4()}"
    controller = AbortController()

    def drop(_: Chunk) -> None:
        """Progress a tool writes has no stream to go to on this route (Mastra drops it too)."""

    context = ToolContext(
        run_id=run_id,
        tool_call_id=run_id,
        tool_name=tool.id,
        agent_id=agent_id,
        abort_signal=controller.signal,
        writer=ToolWriter(drop, run_id=run_id, tool_call_id=run_id, tool_name=tool.id),
        request_context=RequestContext(),
    )
    try:
        return await tool.run(parsed, context)
    except asyncio.CancelledError:
        controller.abort()
        raise
    except Exception as exc:
        shown = reported_tool_error(exc, run_id=run_id, tool_name=tool.id)
        raise ApiError(f"Error executing tool {tool.id}: {shown}", 500) from None


def routes(context: ApiContext) -> list[BaseRoute]:
    """The tools routes, server-wide and agent-scoped."""

    async def list_tools(request: Request, _: object) -> Response:
        return json_answer(context, request, {k: tool_json(t) for k, t in all_tools(context).items()})

    async def get_tool(request: Request, _: object) -> Response:
        tool = _tool_of(all_tools(context), request.path_params["tool_id"])
        return json_answer(context, request, tool_json(tool))

    async def execute(request: Request, _: object) -> Response:
        tool = _tool_of(all_tools(context), request.path_params["tool_id"])
        body = await read_object(context, request)
        if "runId" in request.query_params:  # client-js sends it in the query
            body.setdefault("runId", request.query_params["runId"])
        return json_answer(context, request, await execute_tool(tool, body, None))

    async def agent_tool(request: Request, _: object) -> Response:
        _, agent = find_agent(context, request.path_params["agent_id"])
        tools = {t.id: t for t in agent.tools.values()} | dict(agent.tools)
        return json_answer(context, request, tool_json(_tool_of(tools, request.path_params["tool_id"])))

    async def agent_execute(request: Request, _: object) -> Response:
        _, agent = find_agent(context, request.path_params["agent_id"])
        tools = {t.id: t for t in agent.tools.values()} | dict(agent.tools)
        tool = _tool_of(tools, request.path_params["tool_id"])
        body = await read_object(context, request)
        return json_answer(context, request, await execute_tool(tool, body, agent.id))

    return [
        api_route(context, "/tools", list_tools, ["GET"], "mastra tools"),
        api_route(context, "/tools/{tool_id}", get_tool, ["GET"], "mastra tool"),
        api_route(context, "/tools/{tool_id}/execute", execute, ["POST"], "mastra tool execute"),
        api_route(context, "/agents/{agent_id}/tools/{tool_id}", agent_tool, ["GET"], "mastra agent tool"),
        api_route(
            context,
            "/agents/{agent_id}/tools/{tool_id}/execute",
            agent_execute,
            ["POST"],
            "mastra agent tool execute",
        ),
    ]

"""The conformance vectors' tools, written in Python per each ``behaviour``."""

from __future__ import annotations

import asyncio
from typing import Any

from agentstream.tools import Tool, ToolContext


async def _weather(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    await asyncio.sleep(0.025)
    return {"city": args["city"], "temperatureC": 21, "conditions": "sunny"}


async def _time(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    return {"timezone": args["timezone"], "time": "12:00"}


async def _book(args: dict[str, Any], ctx: ToolContext) -> Any:
    if ctx.resume_data is None:
        return await ctx.suspend({"question": "Really book " + args["flight"] + "?"})
    return {"booked": ctx.resume_data["confirmed"], "flight": args["flight"]}


async def _research(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    return {"topic": args["topic"], "summary": "Research complete"}


async def _transfer(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    return {"transferred": True, "amount": args["amount"], "to": args["to"]}


IMPLEMENTATIONS = {
    "weather": _weather,
    "time": _time,
    "book": _book,
    "research": _research,
    "transfer": _transfer,
}

_DRAFT7 = "http://json-schema.org/draft-07/schema#"


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    """A zod ``z.object`` as zod-to-json-schema writes it (key order included)."""
    return {
        "$schema": _DRAFT7,
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


# What the recordings' ``behaviour`` text says the createTool config has besides the input schema.
EXTRA_CONFIG: dict[str, dict[str, Any]] = {
    "book": {
        "suspend_schema": _object({"question": {"type": "string"}}),
        "resume_schema": _object({"confirmed": {"type": "boolean"}}),
    },
}


def _recorded(name: str, executions: list[dict[str, Any]] | None) -> Any:
    implementation = IMPLEMENTATIONS[name]
    if executions is None:
        return implementation

    async def execute(args: dict[str, Any], ctx: ToolContext) -> Any:
        executions.append({"tool": name, "input": args})
        return await implementation(args, ctx)

    return execute


def tools_for(vector: dict[str, Any], executions: list[dict[str, Any]] | None = None) -> list[Tool]:
    """The vector's tools; each ``execute()`` call is appended to ``executions`` when given."""
    out = []
    for spec in vector["agent"].get("tools", []):
        out.append(
            Tool(
                id=spec["id"],
                description=spec.get("description", ""),
                input_schema=spec["inputSchema"],
                execute=_recorded(spec["id"], executions),
                require_approval=bool(spec.get("requireApproval", False)),
                **EXTRA_CONFIG.get(spec["id"], {}),
            )
        )
    return out

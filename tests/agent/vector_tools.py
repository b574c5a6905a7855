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
    return await ctx.suspend({"question": "Really book " + args["flight"] + "?"})


async def _research(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    return {"topic": args["topic"], "summary": "Research complete"}


IMPLEMENTATIONS = {"weather": _weather, "time": _time, "book": _book, "research": _research}


def tools_for(vector: dict[str, Any]) -> list[Tool]:
    out = []
    for spec in vector["agent"].get("tools", []):
        out.append(
            Tool(
                id=spec["id"],
                description=spec.get("description", ""),
                input_schema=spec["inputSchema"],
                execute=IMPLEMENTATIONS[spec["id"]],
            )
        )
    return out

"""The MCP server `bench/bench_mcp.py` calls: one tool, the recorded vectors' weather tool."""

from __future__ import annotations

from typing import Any

from agentstream.mcp import MCPServer
from agentstream.tools import Tool, ToolContext

WEATHER_SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "properties": {"city": {"type": "string", "description": "City name"}},
    "required": ["city"],
    "additionalProperties": False,
}


async def _weather(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    return {"city": args["city"], "temperatureC": 21, "conditions": "sunny"}


weather = Tool(
    id="weather",
    description="Get the current weather for a city",
    input_schema=WEATHER_SCHEMA,
    execute=_weather,
)
server = MCPServer(name="bench", version="1.0.0", tools={"weather": weather})

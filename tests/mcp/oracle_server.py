"""The server the ``mcp-server`` recordings describe (``server.tools[*].behaviour``, ``agents``,
``workflows``), written in Python: the same tools, agent and workflow behind an `MCPServer`."""

from __future__ import annotations

from typing import Any

from agentstream.agent import Agent
from agentstream.mcp import MCPServer
from agentstream.testing import ScriptedModel
from agentstream.tools import Tool, ToolContext
from agentstream.workflows import create_step, create_workflow

BEHAVIOURS: dict[str, Any] = {
    "weather": lambda args: {"city": args["city"], "temperatureC": 21, "conditions": "sunny"},
    "shout": lambda args: args["text"].upper(),
}


def _fail(args: dict[str, Any]) -> Any:
    raise Exception(f"Weather service unavailable for {args['city']}")  # a plain Error, as recorded


def stream_steps(model_steps: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The recording's ``{"generate": result}`` steps as the stream parts ``Agent.stream`` reads."""
    out = []
    for step in model_steps:
        result = step["generate"]
        parts: list[dict[str, Any]] = [{"type": "stream-start", "warnings": result.get("warnings", [])}]
        if "response" in result:
            parts.append({"type": "response-metadata", **result["response"]})
        for i, item in enumerate(result["content"]):
            assert item["type"] == "text", item
            parts += [
                {"type": "text-start", "id": f"t{i}"},
                {"type": "text-delta", "id": f"t{i}", "delta": item["text"]},
                {"type": "text-end", "id": f"t{i}"},
            ]
        parts.append({"type": "finish", "finishReason": result["finishReason"], "usage": result["usage"]})
        out.append(parts)
    return out


def build(vector: dict[str, Any]) -> MCPServer:
    spec = vector["server"]
    construct = spec["construct"]
    name = construct.split("name: '", 1)[1].split("'", 1)[0]
    version = construct.split("version: '", 1)[1].split("'", 1)[0]
    instructions = (
        construct.split("instructions: '", 1)[1].split("'", 1)[0] if "instructions: '" in construct else None
    )
    tools = {}
    for key, tool in spec["tools"].items():
        behaviour = BEHAVIOURS.get(key, _fail)

        async def execute(args: dict[str, Any], ctx: ToolContext, behaviour: Any = behaviour) -> Any:
            return behaviour(args)

        tools[key] = Tool(
            id=tool["id"],
            description=tool["description"],
            input_schema=tool["inputSchema"],
            output_schema=tool.get("outputSchema"),
            execute=execute,
        )
    agents = {
        key: Agent(
            id=a["id"],
            name=a["name"],
            description=a["description"],
            instructions=a["instructions"],
            model=ScriptedModel(stream_steps(vector["modelSteps"])),
        )
        for key, a in spec["agents"].items()
    }
    workflows = {}
    for key, w in spec["workflows"].items():
        (step_spec,) = w["steps"]
        step = create_step(
            id=step_spec["id"],
            input_schema=w["inputSchema"],
            output_schema=w["outputSchema"],
            execute=lambda ctx: {"doubled": ctx.input_data["n"] * 2},
        )
        workflows[key] = (
            create_workflow(
                id=w["id"],
                description=w["description"],
                input_schema=w["inputSchema"],
                output_schema=w["outputSchema"],
            )
            .then(step)
            .commit()
        )
    return MCPServer(
        name=name, version=version, instructions=instructions, tools=tools, agents=agents, workflows=workflows
    )

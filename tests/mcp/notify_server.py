"""An `MCPServer` whose resources change when the app says so: the subscription tests' server
(in-process over HTTP, or ``agentstream mcp serve --app tests.mcp.notify_server:server`` over
stdio, where its ``touch`` tool is how a test makes it send an update)."""

from __future__ import annotations

from typing import Any

from agentstream.mcp import MCPPrompt, MCPResource, MCPServer
from agentstream.tools import Tool, ToolContext

WATCHED = "test://watched-resource"
OTHER = "test://other-resource"


def build() -> MCPServer:
    state = {"version": 0}

    async def touch(args: dict[str, Any], ctx: ToolContext) -> Any:
        state["version"] += 1
        await served.resources.notify_updated(uri=args["uri"])
        return f"version {state['version']}"

    served = MCPServer(
        name="notify",
        version="1.0.0",
        tools={
            "touch": Tool(
                id="touch",
                description="Change a resource and tell the subscribers",
                input_schema={
                    "type": "object",
                    "properties": {"uri": {"type": "string"}},
                    "required": ["uri"],
                },
                execute=touch,
            )
        },
        resources=[
            MCPResource(uri=WATCHED, name="watched", read=lambda: f"version {state['version']}"),
            MCPResource(uri=OTHER, name="other", read=lambda: "other"),
        ],
        prompts=[
            MCPPrompt(
                name="hello", description="Say hello", get=lambda a: [{"role": "user", "content": "hi"}]
            )
        ],
    )
    return served


server = build()


def main() -> None:
    """``python tests/mcp/notify_server.py --port N``: the server over HTTP in a process of its own."""
    import argparse

    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    port = parser.parse_args().port
    uvicorn.run(build().http_app(), host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main()

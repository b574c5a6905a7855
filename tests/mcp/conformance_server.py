"""``tests/mcp/conformance_server.py --port N``: an `MCPServer` with the tools the official suite's
server scenarios call (``@modelcontextprotocol/conformance server --url http://127.0.0.1:N/mcp``),
served over streamable HTTP behind the default `RequestGuard`. What it does not serve (resources,
prompts, completion, logging, sampling, elicitation) is in ``conformance-baseline.yml``."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from agentstream.mcp import MCPServer
from agentstream.tools import Tool, ToolContext

# A 1x1 red PNG and a tiny WAV header, as the suite's SERVER_REQUIREMENTS suggest.
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
WAV = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA="
EMPTY = {"type": "object", "properties": {}}


def _constant(result: Any) -> Any:
    async def execute(args: Any, ctx: ToolContext) -> Any:
        return result

    return execute


async def _fail(args: Any, ctx: ToolContext) -> Any:
    raise RuntimeError("This tool intentionally returns an error for testing")


async def _progress(args: Any, ctx: ToolContext) -> Any:
    for step in (0, 50, 100):
        ctx.writer.write({"progress": step, "total": 100, "message": f"Completed step {step}"})
        await asyncio.sleep(0.05)
    return "Progress test completed"


def _tool(name: str, execute: Any, schema: dict[str, Any] | None = None) -> Tool:
    return Tool(
        id=name, description=f"Conformance tool {name}", input_schema=schema or EMPTY, execute=execute
    )


def build() -> MCPServer:
    resource = {
        "uri": "test://embedded-resource",
        "mimeType": "text/plain",
        "text": "This is an embedded resource content.",
    }
    tools = [
        _tool("test_simple_text", _constant("This is a simple text response for testing.")),
        _tool(
            "test_image_content",
            _constant({"content": [{"type": "image", "data": PNG, "mimeType": "image/png"}]}),
        ),
        _tool(
            "test_audio_content",
            _constant({"content": [{"type": "audio", "data": WAV, "mimeType": "audio/wav"}]}),
        ),
        _tool("test_embedded_resource", _constant({"content": [{"type": "resource", "resource": resource}]})),
        _tool(
            "test_multiple_content_types",
            _constant(
                {
                    "content": [
                        {"type": "text", "text": "Multiple content types test:"},
                        {"type": "image", "data": PNG, "mimeType": "image/png"},
                        {"type": "resource", "resource": resource},
                    ]
                }
            ),
        ),
        _tool("test_error_handling", _fail),
        _tool("test_tool_with_progress", _progress),
        _tool(
            "json_schema_2020_12_tool",
            _constant("ok"),
            {
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "$defs": {"address": {"type": "object", "properties": {"street": {"type": "string"}}}},
                "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
                "additionalProperties": False,
            },
        ),
    ]
    return MCPServer(name="agentstream-conformance", version="1.0.0", tools={t.id: t for t in tools})


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    uvicorn.run(build().http_app(), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()

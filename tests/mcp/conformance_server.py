"""``tests/mcp/conformance_server.py --port N``: an `MCPServer` with the tools the official suite's
server scenarios call (``@modelcontextprotocol/conformance server --url http://127.0.0.1:N/mcp``),
served over streamable HTTP behind the default `RequestGuard`. What it does not serve (resources,
prompts, completion, logging, sampling, elicitation) is in ``conformance-baseline.yml``."""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
from typing import Any

from agentstream.mcp import MCPPrompt, MCPResource, MCPResourceTemplate, MCPServer
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
    image = {"type": "image", "data": PNG, "mimeType": "image/png"}
    return MCPServer(
        name="agentstream-conformance",
        version="1.0.0",
        tools={t.id: t for t in tools},
        resources=[
            MCPResource(
                uri="test://static-text",
                name="static-text",
                mime_type="text/plain",
                read=lambda: "This is the content of the static text resource.",
            ),
            MCPResource(
                uri="test://static-binary",
                name="static-binary",
                mime_type="image/png",
                read=lambda: base64.b64decode(PNG),
            ),
            MCPResource(
                uri="test://watched-resource",
                name="watched-resource",
                mime_type="text/plain",
                read=lambda: "Watched resource content",
            ),
        ],
        resource_templates=[
            MCPResourceTemplate(
                uri_template="test://template/{id}/data",
                name="template",
                mime_type="application/json",
                read=lambda uri, p: json.dumps(
                    {"id": p["id"], "templateTest": True, "data": f"Data for ID: {p['id']}"}
                ),
            ),
        ],
        prompts=[
            MCPPrompt(
                name="test_simple_prompt",
                description="A simple prompt without arguments",
                get=lambda a: [{"role": "user", "content": "This is a simple prompt for testing."}],
            ),
            MCPPrompt(
                name="test_prompt_with_arguments",
                description="A prompt with arguments",
                arguments=[{"name": "arg1", "required": True}, {"name": "arg2", "required": True}],
                get=lambda a: [
                    {
                        "role": "user",
                        "content": f"Prompt with arguments: arg1='{a['arg1']}', arg2='{a['arg2']}'",
                    }
                ],
            ),
            MCPPrompt(
                name="test_prompt_with_embedded_resource",
                description="A prompt with an embedded resource",
                arguments=[{"name": "resourceUri", "required": True}],
                get=lambda a: [
                    {
                        "role": "user",
                        "content": {
                            "type": "resource",
                            "resource": {
                                "uri": a["resourceUri"],
                                "mimeType": "text/plain",
                                "text": "Embedded resource content for testing.",
                            },
                        },
                    },
                    {"role": "user", "content": "Please process the embedded resource above."},
                ],
            ),
            MCPPrompt(
                name="test_prompt_with_image",
                description="A prompt with an image",
                get=lambda a: [
                    {"role": "user", "content": image},
                    {"role": "user", "content": "Please analyze the image above."},
                ],
            ),
        ],
    )


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    uvicorn.run(build().http_app(), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()

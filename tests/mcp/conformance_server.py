"""``tests/mcp/conformance_server.py --port N``: an `MCPServer` with the tools the official suite's
server scenarios call (``@modelcontextprotocol/conformance server --url http://127.0.0.1:N/mcp``),
served over streamable HTTP behind the default `RequestGuard`: tools (logging, progress, sampling
and elicitation through ``context.mcp``), resources, prompts and completion."""

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


async def _logging(args: Any, ctx: ToolContext) -> Any:
    assert ctx.mcp is not None
    for i, text in enumerate(("Tool execution started", "Tool processing data", "Tool execution completed")):
        if i:
            await asyncio.sleep(0.05)
        await ctx.mcp.log("info", text)
    return "Logging test completed"


async def _sampling(args: Any, ctx: ToolContext) -> Any:
    assert ctx.mcp is not None
    answer = await ctx.mcp.request_sampling(
        {
            "messages": [{"role": "user", "content": {"type": "text", "text": args["prompt"]}}],
            "maxTokens": 100,
        }
    )
    content = answer["content"]
    text = content.get("text") if isinstance(content, dict) else json.dumps(content)
    return f"LLM response: {text}"


def _elicit(message: Any, schema: dict[str, Any], prefix: str) -> Any:
    async def execute(args: Any, ctx: ToolContext) -> Any:
        assert ctx.mcp is not None
        text = args.get("message", message) if isinstance(args, dict) else message
        answer = await ctx.mcp.elicitation.send_request({"message": text, "requestedSchema": schema})
        return f"{prefix}action={answer['action']}, content={json.dumps(answer.get('content', {}))}"

    return execute


def _options(values: list[str], titles: list[str]) -> list[dict[str, str]]:
    return [{"const": v, "title": t} for v, t in zip(values, titles, strict=True)]


USER_SCHEMA = {
    "type": "object",
    "properties": {
        "username": {"type": "string", "description": "User's response"},
        "email": {"type": "string", "description": "User's email address"},
    },
    "required": ["username", "email"],
}
DEFAULTS_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "default": "John Doe"},
        "age": {"type": "integer", "default": 30},
        "score": {"type": "number", "default": 95.5},
        "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
        "verified": {"type": "boolean", "default": True},
    },
}
ENUMS_SCHEMA = {
    "type": "object",
    "properties": {
        "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
        "titledSingle": {
            "type": "string",
            "oneOf": _options(
                ["value1", "value2", "value3"], ["First Option", "Second Option", "Third Option"]
            ),
        },
        "legacyEnum": {
            "type": "string",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {
            "type": "array",
            "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
        },
        "titledMulti": {
            "type": "array",
            "items": {
                "anyOf": _options(
                    ["value1", "value2", "value3"], ["First Choice", "Second Choice", "Third Choice"]
                )
            },
        },
    },
}


def _complete_arg(argument: str, value: str, others: dict[str, str]) -> list[str]:
    return [word for word in ("paris", "park", "party") if word.startswith(value)]


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
        _tool("test_tool_with_logging", _logging),
        _tool(
            "test_sampling",
            _sampling,
            {"type": "object", "properties": {"prompt": {"type": "string"}}, "required": ["prompt"]},
        ),
        _tool(
            "test_elicitation",
            _elicit("", USER_SCHEMA, "User response: "),
            {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]},
        ),
        _tool(
            "test_elicitation_sep1034_defaults",
            _elicit("Please review your information", DEFAULTS_SCHEMA, "Elicitation completed: "),
        ),
        _tool(
            "test_elicitation_sep1330_enums",
            _elicit("Please select options", ENUMS_SCHEMA, "Elicitation completed: "),
        ),
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
                complete=_complete_arg,
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

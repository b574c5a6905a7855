"""``response_format`` (JSON output) in the request bodies of the three providers, on the loopback server."""

from __future__ import annotations

import json
from typing import Any

from agentstream.models import AnthropicModel, OpenAIChatModel, OpenAIResponsesModel

from .conftest import API_KEY, ReplayServer, Reply, load

PROMPT: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": "A city, please."}]}]
TOOLS = [{"type": "function", "name": "lookup", "description": "Look up", "inputSchema": {"type": "object"}}]
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


async def _send(
    server: ReplayServer, model: Any, recording: str, **options: Any
) -> tuple[dict[str, Any], list[Any]]:
    server.queue_recording(load(recording))
    parts = [p async for p in model.do_stream({"prompt": PROMPT, **options})]
    assert parts[-1]["type"] == "finish"
    body: dict[str, Any] = server.received[-1].body
    return body, parts


# -- OpenAI chat --------------------------------------------------------------------------------


async def test_chat_json_schema(server: ReplayServer) -> None:
    model = OpenAIChatModel("gpt-4o", base_url=server.url + "/v1", api_key=API_KEY)
    body, parts = await _send(
        server,
        model,
        "openai-chat/text-stream-usage.json",
        response_format={"type": "json", "schema": SCHEMA, "name": "city", "description": "A city"},
    )
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "city", "description": "A city", "schema": SCHEMA, "strict": False},
    }
    assert parts[0] == {"type": "stream-start", "warnings": []}


async def test_chat_json_schema_defaults_and_strict_option(server: ReplayServer) -> None:
    model = OpenAIChatModel("gpt-4o", base_url=server.url + "/v1", api_key=API_KEY)
    body, _ = await _send(
        server,
        model,
        "openai-chat/text-stream-usage.json",
        response_format={"type": "json", "schema": SCHEMA},
        provider_options={"openai": {"strictJsonSchema": True, "user": "u1"}},
    )
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "response", "schema": SCHEMA, "strict": True},
    }
    assert "strict_json_schema" not in body and body["user"] == "u1"


async def test_chat_json_object_without_schema(server: ReplayServer) -> None:
    model = OpenAIChatModel("gpt-4o", base_url=server.url + "/v1", api_key=API_KEY)
    body, parts = await _send(
        server, model, "openai-chat/text-stream-usage.json", response_format={"type": "json"}
    )
    assert body["response_format"] == {"type": "json_object"}
    assert parts[0]["warnings"] == []


async def test_chat_json_object_when_server_lacks_structured_outputs(server: ReplayServer) -> None:
    model = OpenAIChatModel("llama", base_url=server.url + "/v1", api_key=API_KEY, structured_outputs=False)
    body, parts = await _send(
        server,
        model,
        "openai-chat/text-stream-usage.json",
        response_format={"type": "json", "schema": SCHEMA},
    )
    assert body["response_format"] == {"type": "json_object"}
    assert parts[0]["warnings"] == [
        {
            "type": "unsupported-setting",
            "setting": "responseFormat",
            "details": "JSON response format schema is only supported with structuredOutputs",
        }
    ]
    # the provider option overrides the constructor setting, and is not sent itself
    body, _ = await _send(
        server,
        model,
        "openai-chat/text-stream-usage.json",
        response_format={"type": "json", "schema": SCHEMA},
        provider_options={"openai": {"structuredOutputs": True}},
    )
    assert body["response_format"]["type"] == "json_schema"
    assert "structured_outputs" not in body


async def test_chat_text_format_sends_nothing(server: ReplayServer) -> None:
    model = OpenAIChatModel("gpt-4o", base_url=server.url + "/v1", api_key=API_KEY)
    body, _ = await _send(
        server, model, "openai-chat/text-stream-usage.json", response_format={"type": "text"}
    )
    assert "response_format" not in body


# -- OpenAI responses ---------------------------------------------------------------------------


async def test_responses_text_format(server: ReplayServer) -> None:
    model = OpenAIResponsesModel("gpt-4o", base_url=server.url + "/v1", api_key=API_KEY)
    body, _ = await _send(
        server,
        model,
        "openai-responses/function-call-then-text.json",
        response_format={"type": "json", "schema": SCHEMA, "name": "city", "description": "A city"},
        provider_options={"openai": {"strictJsonSchema": True, "textVerbosity": "low"}},
    )
    assert body["text"] == {
        "format": {
            "type": "json_schema",
            "strict": True,
            "name": "city",
            "description": "A city",
            "schema": SCHEMA,
        },
        "verbosity": "low",
    }
    assert "strict_json_schema" not in body


async def test_responses_json_object_and_default_name(server: ReplayServer) -> None:
    model = OpenAIResponsesModel("gpt-4o", base_url=server.url + "/v1", api_key=API_KEY)
    body, _ = await _send(
        server, model, "openai-responses/function-call-then-text.json", response_format={"type": "json"}
    )
    assert body["text"] == {"format": {"type": "json_object"}}
    body, _ = await _send(
        server,
        model,
        "openai-responses/function-call-then-text.json",
        response_format={"type": "json", "schema": SCHEMA},
    )
    assert body["text"] == {
        "format": {"type": "json_schema", "strict": False, "name": "response", "schema": SCHEMA}
    }


# -- Anthropic: a forced "json" tool, streamed back as text ------------------------------------------


def _sse(*events: dict[str, Any]) -> str:
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)


JSON_TOOL_STREAM = _sse(
    {"type": "message_start", "message": {"id": "msg_1", "model": "claude-x", "usage": {"input_tokens": 10}}},
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Sure:"}},
    {"type": "content_block_stop", "index": 0},
    {
        "type": "content_block_start",
        "index": 1,
        "content_block": {"type": "tool_use", "id": "toolu_1", "name": "json", "input": {}},
    },
    {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": ""}},
    {
        "type": "content_block_delta",
        "index": 1,
        "delta": {"type": "input_json_delta", "partial_json": '{"city": '},
    },
    {
        "type": "content_block_delta",
        "index": 1,
        "delta": {"type": "input_json_delta", "partial_json": '"Oslo"}'},
    },
    {"type": "content_block_stop", "index": 1},
    {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 5}},
    {"type": "message_stop"},
)


async def test_anthropic_json_tool_request_and_stream(server: ReplayServer) -> None:
    model = AnthropicModel("claude-x", base_url=server.url + "/v1", api_key=API_KEY)
    server.replies.append(Reply(body=JSON_TOOL_STREAM))
    parts = [
        p
        async for p in model.do_stream(
            {
                "prompt": PROMPT,
                "tools": TOOLS,
                "tool_choice": {"type": "auto"},
                "response_format": {"type": "json", "schema": SCHEMA},
            }
        )
    ]
    body = server.received[-1].body
    assert body["tools"] == [
        {"name": "json", "description": "Respond with a JSON object.", "input_schema": SCHEMA}
    ]
    assert body["tool_choice"] == {"type": "tool", "name": "json"}
    assert parts[0] == {
        "type": "stream-start",
        "warnings": [
            {
                "type": "unsupported-setting",
                "setting": "tools",
                "details": "JSON response format does not support tools. The provided tools are ignored.",
            }
        ],
    }
    kinds = [p["type"] for p in parts]
    assert kinds == [
        "stream-start",
        "response-metadata",
        "text-start",
        "text-delta",
        "text-delta",
        "text-end",
        "finish",
    ]
    assert "".join(p["delta"] for p in parts if p["type"] == "text-delta") == '{"city": "Oslo"}'
    assert {p["id"] for p in parts if p["type"].startswith("text-")} == {"1"}
    assert parts[-1]["finishReason"] == "stop"


async def test_anthropic_json_without_schema_is_ignored(server: ReplayServer) -> None:
    model = AnthropicModel("claude-x", base_url=server.url + "/v1", api_key=API_KEY)
    server.replies.append(Reply(body=JSON_TOOL_STREAM))
    parts = [
        p
        async for p in model.do_stream(
            {
                "prompt": PROMPT,
                "tools": TOOLS,
                "response_format": {"type": "json"},
            }
        )
    ]
    body = server.received[-1].body
    assert [t["name"] for t in body["tools"]] == ["lookup"]
    assert parts[0]["warnings"] == [
        {
            "type": "unsupported-setting",
            "setting": "responseFormat",
            "details": "JSON response format requires a schema. The response format is ignored.",
        }
    ]
    # without JSON mode the same events are a prose block and a tool call
    kinds = [p["type"] for p in parts]
    assert "tool-call" in kinds and parts[-1]["finishReason"] == "tool-calls"

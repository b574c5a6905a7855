"""Model router and the request bodies each provider sends (checked on the loopback server)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentstream.models import (
    AnthropicModel,
    LanguageModel,
    MissingAPIKeyError,
    ModelStream,
    OpenAIChatModel,
    OpenAICompatible,
    OpenAIResponsesModel,
    UnknownProviderError,
    register_model_factory,
    resolve_model,
)

from .conftest import API_KEY, ReplayServer, Reply, load

PROMPT: list[dict[str, Any]] = [
    {"role": "system", "content": "Be brief."},
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "What is this?"},
            {"type": "file", "mediaType": "image/png", "data": b"\x89PNG"},
        ],
    },
    {
        "role": "assistant",
        "content": [
            {"type": "reasoning", "text": "hmm", "providerOptions": {"anthropic": {"signature": "sig"}}},
            {"type": "text", "text": "Let me look."},
            {"type": "tool-call", "toolCallId": "call_1", "toolName": "lookup", "input": {"q": "png"}},
        ],
    },
    {
        "role": "tool",
        "content": [
            {
                "type": "tool-result",
                "toolCallId": "call_1",
                "toolName": "lookup",
                "output": {"type": "json", "value": {"kind": "image"}},
            }
        ],
    },
]
TOOLS = [{"type": "function", "name": "lookup", "description": "Look up", "inputSchema": {"type": "object"}}]


async def _send(server: ReplayServer, model: Any, recording: str, **options: Any) -> dict[str, Any]:
    server.queue_recording(load(recording))
    parts = [p async for p in model.do_stream({"prompt": PROMPT, "tools": TOOLS, **options})]
    assert parts[-1]["type"] == "finish"
    body: dict[str, Any] = server.received[-1].body
    return body


async def test_chat_request_body(server: ReplayServer) -> None:
    model = OpenAIChatModel("gpt-4o", base_url=server.url + "/v1", api_key=API_KEY)
    body = await _send(
        server,
        model,
        "openai-chat/text-stream-usage.json",
        temperature=0.2,
        max_output_tokens=50,
        tool_choice={"type": "tool", "toolName": "lookup"},
        provider_options={"openai": {"parallelToolCalls": False}},
    )
    assert body == {
        "model": "gpt-4o",
        "stream": True,
        "stream_options": {"include_usage": True},
        "messages": [
            {"role": "system", "content": "Be brief."},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is this?"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw=="}},
                ],
            },
            {
                "role": "assistant",
                "content": "Let me look.",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "lookup", "arguments": '{"q":"png"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": '{"kind": "image"}'},
        ],
        "max_tokens": 50,
        "temperature": 0.2,
        "tools": [
            {
                "type": "function",
                "function": {"name": "lookup", "parameters": {"type": "object"}, "description": "Look up"},
            }
        ],
        "tool_choice": {"type": "function", "function": {"name": "lookup"}},
        "parallel_tool_calls": False,
    }
    assert server.received[-1].headers["authorization"] == f"Bearer {API_KEY}"


async def test_anthropic_request_body(server: ReplayServer) -> None:
    model = AnthropicModel("claude-sonnet-4-5", base_url=server.url + "/v1", api_key=API_KEY)
    body = await _send(
        server,
        model,
        "anthropic/text-minimal.json",
        tool_choice={"type": "required"},
        provider_options={"anthropic": {"thinking": {"type": "enabled", "budgetTokens": 1024}}},
    )
    assert body == {
        "model": "claude-sonnet-4-5",
        "max_tokens": 4096 + 1024,
        "stream": True,
        "system": [{"type": "text", "text": "Be brief."}],
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is this?"},
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw=="},
                    },
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "hmm", "signature": "sig"},
                    {"type": "text", "text": "Let me look."},
                    {"type": "tool_use", "id": "call_1", "name": "lookup", "input": {"q": "png"}},
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": '{"kind": "image"}'}],
            },
        ],
        "tools": [{"name": "lookup", "input_schema": {"type": "object"}, "description": "Look up"}],
        "tool_choice": {"type": "any"},
    }
    headers = server.received[-1].headers
    assert headers["x-api-key"] == API_KEY and headers["anthropic-version"] == "2023-06-01"


async def test_responses_request_body(server: ReplayServer) -> None:
    model = OpenAIResponsesModel("gpt-4o", base_url=server.url + "/v1", api_key=API_KEY)
    body = await _send(
        server,
        model,
        "openai-responses/function-call-then-text.json",
        tool_choice={"type": "auto"},
        provider_options={"openai": {"reasoningEffort": "low", "store": False}},
    )
    assert body["input"] == [
        {"role": "system", "content": "Be brief."},
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "What is this?"},
                {"type": "input_image", "image_url": "data:image/png;base64,iVBORw=="},
            ],
        },
        {"role": "assistant", "content": [{"type": "output_text", "text": "Let me look."}]},
        {"type": "function_call", "call_id": "call_1", "name": "lookup", "arguments": '{"q":"png"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": '{"kind": "image"}'},
    ]
    assert body["tools"] == [
        {"type": "function", "name": "lookup", "parameters": {"type": "object"}, "description": "Look up"}
    ]
    assert (body["tool_choice"], body["reasoning"], body["store"]) == ("auto", {"effort": "low"}, False)


def test_router_resolves_providers(monkeypatch: pytest.MonkeyPatch) -> None:
    for env in (
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "GROQ_API_KEY",
        "OPENROUTER_API_KEY",
        "DEEPSEEK_API_KEY",
        "OPENAI_BASE_URL",
        "ANTHROPIC_BASE_URL",
    ):
        monkeypatch.setenv(env, f"key-for-{env}") if env.endswith("KEY") else monkeypatch.delenv(env, False)
    chat = resolve_model("openai/gpt-4o-mini")
    assert isinstance(chat, OpenAIChatModel) and chat.base_url == "https://api.openai.com/v1"
    assert (chat.provider, chat.model_id, chat.specification_version) == ("openai", "gpt-4o-mini", "v2")
    assert isinstance(resolve_model("openai/gpt-5", api="responses"), OpenAIResponsesModel)
    assert isinstance(resolve_model("openai.responses/gpt-5"), OpenAIResponsesModel)
    claude = resolve_model("anthropic/claude-sonnet-4-5")
    assert isinstance(claude, AnthropicModel) and claude.base_url == "https://api.anthropic.com/v1"
    groq = resolve_model("groq/llama-3.3-70b-versatile")
    assert isinstance(groq, OpenAIChatModel) and groq.base_url == "https://api.groq.com/openai/v1"
    assert resolve_model("openrouter/anthropic/claude-sonnet-4.5").model_id == "anthropic/claude-sonnet-4.5"
    assert resolve_model("deepseek/deepseek-reasoner").base_url == "https://api.deepseek.com"
    assert resolve_model("ollama/llama3.2").base_url == "http://localhost:11434/v1"  # no key needed
    monkeypatch.setenv("OPENAI_BASE_URL", "http://proxy.local/v1")
    assert resolve_model("openai/gpt-4o").base_url == "http://proxy.local/v1"  # type: ignore[attr-defined]
    assert resolve_model(chat) is chat
    assert isinstance(chat, LanguageModel)


def test_router_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(MissingAPIKeyError, match="ANTHROPIC_API_KEY"):
        resolve_model("anthropic/claude-sonnet-4-5")
    with pytest.raises(UnknownProviderError, match="nope"):
        resolve_model("nope/model")
    with pytest.raises(ValueError, match="provider/model-id"):
        resolve_model("gpt-4o")
    # "demo" is the router's own offline model
    import agentstream  # noqa: F401

    assert resolve_model("demo").model_id == "demo"


def test_register_model_factory() -> None:
    made: list[str] = []

    def factory(model_id: str, **kw: Any) -> LanguageModel:
        made.append(model_id)
        return OpenAICompatible(base_url="http://127.0.0.1:1", model=model_id or "demo")

    register_model_factory("unit-test-demo", factory)
    assert resolve_model("unit-test-demo/fast").model_id == "fast"
    assert resolve_model("unit-test-demo").model_id == "demo"
    assert made == ["fast", ""]
    with pytest.raises(ValueError):
        register_model_factory("a/b", factory)


def test_openai_compatible_without_key_sends_no_auth() -> None:
    model = OpenAICompatible(base_url="http://localhost:1234/v1/", model="qwen", name="lmstudio")
    assert (model.provider, model.base_url, model._auth_headers()) == (
        "lmstudio",
        "http://localhost:1234/v1",
        {},
    )


def test_exported_members() -> None:
    import agentstream.models as models

    assert models.__all__ == sorted(models.__all__)
    assert set(models.__all__) == {n for n in dir(models) if not n.startswith("_") and n != "annotations"}


async def test_stream_reports_request_body_and_response_headers(server: ReplayServer) -> None:
    """``do_stream`` returns a ``ModelStream``: the exact JSON body sent and the response headers."""
    model = OpenAIChatModel("gpt-4o", base_url=server.url + "/v1", api_key=API_KEY)
    recording = load("openai-chat/text-stream-usage.json")
    body = recording["interactions"][0]["response"]["body"]
    server.replies.append(Reply(body=body, headers={"x-ratelimit-remaining-tokens": "1500"}))
    stream = model.do_stream({"prompt": PROMPT[:2], "temperature": 0.5})
    assert isinstance(stream, ModelStream)
    assert (stream.request, stream.response) == ({}, {})
    first = await stream.__anext__()
    assert first["type"] == "stream-start"
    sent = json.loads(stream.request["body"])
    assert sent == server.received[-1].body and sent["temperature"] == 0.5
    assert server.received[-1].headers["content-type"] == "application/json"
    headers = stream.response["headers"]
    assert headers["x-ratelimit-remaining-tokens"] == "1500"
    assert headers["content-type"] == "text/event-stream"
    rest = [p async for p in stream]
    assert rest[-1]["type"] == "finish"


async def test_stream_reports_headers_of_a_failed_call(server: ReplayServer) -> None:
    model = OpenAIChatModel("gpt-4o", base_url=server.url + "/v1", api_key=API_KEY, max_retries=0)
    server.replies.append(
        Reply(
            status=400,
            content_type="application/json",
            body='{"error": {"message": "bad"}}',
            headers={"x-request-id": "req-1"},
        )
    )
    stream = model.do_stream({"prompt": PROMPT[:2]})
    parts = [p async for p in stream]
    assert [p["type"] for p in parts] == ["error"]
    assert json.loads(stream.request["body"])["model"] == "gpt-4o"
    assert stream.response["headers"]["x-request-id"] == "req-1"


def test_offline_is_read_once_per_model_spec(monkeypatch: pytest.MonkeyPatch) -> None:
    """``AGENTSTREAM_OFFLINE`` is read once for a whole spec, however many fallbacks it lists."""
    from agentstream.models import FallbackModel, OfflineModel, _router

    reads: list[bool] = []
    real = _router.offline_forced

    def counting() -> bool:
        reads.append(real())
        return reads[-1]

    monkeypatch.setenv("AGENTSTREAM_OFFLINE", "1")
    monkeypatch.setattr(_router, "offline_forced", counting)
    model = _router.resolve_model(["openai/a", {"model": "anthropic/b"}, "cohere/c"])
    assert isinstance(model, FallbackModel)
    assert all(isinstance(e.model, OfflineModel) for e in model.entries)
    assert [e.model.model_id for e in model.entries] == ["openai/a", "anthropic/b", "cohere/c"]
    assert reads == [True]

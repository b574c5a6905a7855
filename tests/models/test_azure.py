"""Azure OpenAI against its recorded deployment call, over a real loopback HTTP server.

The recording is of the non-streaming call; `_as_stream` sends the same completion as the one
``chat.completion.chunk`` a stream carries for it (``message`` → ``delta``, Azure's
``content_filter_results`` kept), and the assertions are the facts the recording shows.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentstream.models import AzureOpenAIModel, MissingAPIKeyError, resolve_model

from .conftest import API_KEY, ReplayServer, Reply, load

NAME = "azure/chat-content-filter-results-nonstream.json"


def _as_stream(completion: dict[str, Any]) -> str:
    choices = [
        {
            "index": c["index"],
            "delta": {"role": "assistant", "content": c["message"]["content"]},
            "finish_reason": c["finish_reason"],
            "content_filter_results": c.get("content_filter_results"),
        }
        for c in completion["choices"]
    ]
    head = {
        "id": completion["id"],
        "object": "chat.completion.chunk",
        "created": completion["created"],
        "model": completion["model"],
        "choices": [],
        "prompt_filter_results": completion.get("prompt_filter_results"),
    }
    chunk = {**head, "choices": choices}
    usage = {**head, "usage": completion["usage"]}
    return "".join(f"data: {json.dumps(e)}\n\n" for e in (head, chunk, usage)) + "data: [DONE]\n\n"


async def test_deployment_call(server: ReplayServer) -> None:
    recording = load(NAME)
    interaction = recording["interactions"][0]
    completion = json.loads(interaction["response"]["body"])
    server.replies.append(Reply(body=_as_stream(completion)))
    model = AzureOpenAIModel(
        "gpt-4o", base_url=server.url, api_key=API_KEY, api_version="2024-12-01-preview", max_retries=0
    )
    prompt = [{"role": "user", "content": [{"type": "text", "text": "What is the capital of France?"}]}]
    parts = [dict(p) async for p in model.do_stream({"prompt": prompt})]
    sent = server.received[0]
    assert (sent.path, sent.query) == (interaction["request"]["path"], interaction["request"]["query"])
    assert sent.headers["api-key"] == API_KEY and "authorization" not in sent.headers
    assert sent.body["messages"] == interaction["request"]["body"]["messages"]
    assert sent.body["model"] == interaction["request"]["body"]["model"]
    text = "".join(p["delta"] for p in parts if p["type"] == "text-delta")
    assert text == completion["choices"][0]["message"]["content"]
    finish = parts[-1]
    assert finish["finishReason"] == "stop"
    assert finish["usage"]["inputTokens"] == completion["usage"]["prompt_tokens"]
    assert finish["usage"]["outputTokens"] == completion["usage"]["completion_tokens"]
    assert finish["usage"]["totalTokens"] == completion["usage"]["total_tokens"]


async def test_entra_id_token_is_asked_for_each_request(server: ReplayServer) -> None:
    completion = json.loads(load(NAME)["interactions"][0]["response"]["body"])
    tokens = iter(["tok-1", "tok-2"])
    model = AzureOpenAIModel(
        "gpt-4o", base_url=server.url, azure_ad_token_provider=lambda: next(tokens), max_retries=0
    )
    for _ in range(2):
        server.replies.append(Reply(body=_as_stream(completion)))
        [p async for p in model.do_stream({"prompt": [{"role": "user", "content": "hi"}]})]
    assert [r.headers["authorization"] for r in server.received] == ["Bearer tok-1", "Bearer tok-2"]
    assert all("api-key" not in r.headers for r in server.received)


def test_router(monkeypatch: pytest.MonkeyPatch) -> None:
    for env in ("AZURE_API_KEY", "AZURE_OPENAI_API_KEY", "AZURE_RESOURCE_NAME", "AZURE_OPENAI_BASE_URL"):
        monkeypatch.delenv(env, raising=False)
    with pytest.raises(MissingAPIKeyError, match="AZURE_API_KEY"):
        resolve_model("azure/gpt-4o")
    monkeypatch.setenv("AZURE_API_KEY", "k")
    with pytest.raises(MissingAPIKeyError, match="AZURE_OPENAI_BASE_URL"):
        resolve_model("azure/gpt-4o")
    monkeypatch.setenv("AZURE_RESOURCE_NAME", "acme")
    model = resolve_model("azure/my-deployment")
    assert isinstance(model, AzureOpenAIModel)
    assert model._url == (
        "https://acme.openai.azure.com/openai/deployments/my-deployment/chat/completions?api-version=2024-10-21"
    )
    monkeypatch.setenv("AZURE_OPENAI_BASE_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("AZURE_OPENAI_API_VERSION", "2025-01-01-preview")
    model = resolve_model("azure/d")
    assert isinstance(model, AzureOpenAIModel)
    assert (
        model._url
        == "http://127.0.0.1:9/openai/deployments/d/chat/completions?api-version=2025-01-01-preview"
    )

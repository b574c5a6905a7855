"""Every recording replayed over a real loopback HTTP server, asserting the exact stream parts."""

from __future__ import annotations

from typing import Any

import pytest
from inline_snapshot import external_file

from agentstream.models import AnthropicModel, APICallError, OpenAIChatModel, OpenAIResponsesModel

from ._cases import (
    CASES,
    GOOGLE_ONE_SHOT,
    GOOGLE_STREAMED,
    NON_STREAMING_ONLY,
    NOT_BUILT,
    OWN_TESTS,
    RECORDED_PROMPTS,
)
from ._drive import drive
from ._typed_parts import assert_typed_parts
from .conftest import (
    API_KEY,
    RECORDINGS,
    SNAPSHOTS,
    ReplayServer,
    collapse,
    counter_ids,
    load,
    recorded_events,
    snapshot,
)

CLASSES: dict[str, Any] = {
    "chat": OpenAIChatModel,
    "responses": OpenAIResponsesModel,
    "anthropic": AnthropicModel,
}


def make(api: str, server: ReplayServer, recording: dict[str, Any], base: str, **kw: Any) -> Any:
    model_id = recording["interactions"][0]["request"]["body"]["model"]
    return CLASSES[api](
        model_id, base_url=server.url + base, api_key=API_KEY, generate_id=counter_ids(), max_retries=0, **kw
    )


def test_every_streaming_recording_has_a_case() -> None:
    streaming = {
        str(p.relative_to(RECORDINGS)) for p in RECORDINGS.glob("*/*.json") if not p.name.startswith("error-")
    }
    expected = {str(p.relative_to(SNAPSHOTS)) for p in SNAPSHOTS.glob("*/*.json")}
    own = set(GOOGLE_STREAMED + GOOGLE_ONE_SHOT) | set(OWN_TESTS) | set(NON_STREAMING_ONLY)
    assert streaming - set(NOT_BUILT) - own == set(CASES) == expected
    assert {n for n in streaming if n.startswith("google")} == set(GOOGLE_STREAMED + GOOGLE_ONE_SHOT)
    assert all((RECORDINGS / name).is_file() for name in NOT_BUILT), "NOT_BUILT names a missing recording"


def test_not_built_provider_recordings(monkeypatch: pytest.MonkeyPatch) -> None:
    """The router has no model for these recordings' provider yet (their issue builds it)."""
    from agentstream.models import UnknownProviderError, resolve_model

    for name in NOT_BUILT:
        provider = name.split("/")[0]
        model_id = load(name)["interactions"][0]["request"].get("body", {}).get("model") or "model"
        with pytest.raises(UnknownProviderError):
            resolve_model(f"{provider}/{model_id}")


@pytest.mark.parametrize("name", sorted(NON_STREAMING_ONLY))
def test_non_streaming_only(name: str) -> None:
    for interaction in load(name)["interactions"]:
        request, response = interaction["request"], interaction["response"]
        assert response["contentType"].startswith("application/json")
        assert not request["path"].endswith("-stream") and not (request.get("body") or {}).get("stream")


@pytest.mark.parametrize("name", sorted(CASES))
async def test_recording_stream_parts(server: ReplayServer, name: str) -> None:
    api, base, kw, turns = CASES[name]
    recording = load(name)
    model = make(api, server, recording, base, **kw)
    outputs = await drive(server, model, recording, turns, recorded_prompts=name in RECORDED_PROMPTS)
    # one list of collapsed parts per turn; `--inline-snapshot=fix` rewrites the file (tests/data/README.md)
    assert [snapshot(parts) for parts in outputs] == external_file(SNAPSHOTS / name)
    for parts in outputs:
        assert_typed_parts(parts)
        assert parts[0] == {"type": "stream-start", "warnings": []}
        assert parts[-1]["type"] == "finish"
        assert sum(p["type"] == "finish" for p in parts) == 1
        # the API key never leaks into any part
        assert API_KEY not in repr(parts)


def _joined(parts: list[dict[str, Any]], kind: str) -> str:
    return "".join(p["delta"] for p in parts if p["type"] == kind)


@pytest.mark.parametrize(
    "name",
    [
        "openai-chat/text-stream-usage.json",
        "crusoe/llama-text-usage.json",
        "zai/glm-reasoning-content.json",
        "deepseek/reasoning-content-stream.json",
        "openrouter/web-search-annotations.json",
    ],
)
async def test_chat_text_matches_recorded_deltas(server: ReplayServer, name: str) -> None:
    """Oracle independent of the client: the recorded `delta.content` / reasoning strings, joined."""
    api, base, kw, _ = CASES[name]
    recording = load(name)
    [parts] = await drive(server, make(api, server, recording, base, **kw), recording)
    events = recorded_events(recording)
    deltas = [c["delta"] for e in events for c in e.get("choices", []) if c.get("delta")]
    assert _joined(parts, "text-delta") == "".join(d.get("content") or "" for d in deltas)
    assert _joined(parts, "reasoning-delta") == "".join(d.get("reasoning_content") or "" for d in deltas)


async def test_think_tags_split_matches_recorded_content(server: ReplayServer) -> None:
    name = "huggingface/together-deepseek-r1-think-tags.json"
    api, base, kw, _ = CASES[name]
    recording = load(name)
    [parts] = await drive(server, make(api, server, recording, base, **kw), recording)
    content = "".join(
        c["delta"].get("content") or "" for e in recorded_events(recording) for c in e["choices"]
    )
    reasoning, _, text = content.removeprefix("<think>").partition("</think>")
    assert _joined(parts, "reasoning-delta") == reasoning
    assert _joined(parts, "text-delta") == text


@pytest.mark.parametrize(
    "name",
    [
        "openai-responses/reasoning-summary-deltas.json",
        "openai-responses/web-search-builtin-tool.json",
        "openai-responses/text-with-logprobs.json",
        "openrouter/responses-raw-reasoning-text.json",
    ],
)
async def test_responses_text_matches_completed_output(server: ReplayServer, name: str) -> None:
    """`response.completed` holds the full output: the streamed deltas must reassemble to it."""
    api, base, kw, _ = CASES[name]
    recording = load(name)
    [parts] = await drive(server, make(api, server, recording, base, **kw), recording)
    completed = next(e for e in recorded_events(recording) if e["type"] == "response.completed")["response"]
    text = "".join(
        c["text"] for item in completed["output"] if item["type"] == "message" for c in item["content"]
    )
    assert _joined(parts, "text-delta") == text
    summary = "".join(
        s["text"]
        for item in completed["output"]
        if item["type"] == "reasoning"
        for s in item.get("summary") or []
    )
    raw = "".join(
        c["text"]
        for item in completed["output"]
        if item["type"] == "reasoning"
        for c in item.get("content") or []
    )
    assert _joined(parts, "reasoning-delta") == (summary or raw)


async def test_responses_logprobs_in_provider_metadata(server: ReplayServer) -> None:
    name = "openai-responses/text-with-logprobs.json"
    recording = load(name)
    [parts] = await drive(server, make("responses", server, recording, "/v1"), recording)
    expected = [
        e["logprobs"] for e in recorded_events(recording) if e["type"] == "response.output_text.delta"
    ]
    assert parts[-1]["providerMetadata"]["openai"]["logprobs"] == expected


async def test_anthropic_citations_and_usage(server: ReplayServer) -> None:
    name = "anthropic/web-search-citations.json"
    recording = load(name)
    [parts] = await drive(server, make("anthropic", server, recording, "/v1"), recording)
    citations = [
        e["delta"]["citation"]
        for e in recorded_events(recording)
        if e["type"] == "content_block_delta" and e["delta"]["type"] == "citations_delta"
    ]
    cited = [p for p in parts if p["type"] == "source" and "citedText" in p["providerMetadata"]["anthropic"]]
    assert [(p["url"], p["providerMetadata"]["anthropic"]["citedText"]) for p in cited] == [
        (c["url"], c["cited_text"]) for c in citations
    ]
    assert len(cited) == 7
    finish = parts[-1]
    assert finish["usage"] == {
        "inputTokens": 22397,
        "outputTokens": 637,
        "totalTokens": 23034,
        "cachedInputTokens": 0,
    }
    assert finish["providerMetadata"]["anthropic"]["usage"]["server_tool_use"] == {
        "web_search_requests": 2,
        "web_fetch_requests": 0,
    }


async def test_groq_error_event_is_an_error_part_then_finish_error(server: ReplayServer) -> None:
    name = "groq/tool-use-failed-error-event.json"
    recording = load(name)
    [parts] = await drive(
        server,
        make("chat", server, recording, "/openai/v1", provider="groq"),
        recording,
        1,
        recorded_prompts=True,
    )
    [err] = [p["error"] for p in parts if p["type"] == "error"]
    assert isinstance(err, APICallError)
    assert err.status_code == 400 and err.provider == "groq" and not err.is_retryable
    assert err.message.startswith("Tool call validation failed")
    assert err.data["code"] == "tool_use_failed"
    assert parts[-1]["finishReason"] == "error"


async def test_include_raw_chunks(server: ReplayServer) -> None:
    name = "anthropic/text-minimal.json"
    recording = load(name)
    [parts] = await drive(
        server, make("anthropic", server, recording, "/v1"), recording, include_raw_chunks=True
    )
    raws = [p["rawValue"] for p in parts if p["type"] == "raw"]
    assert raws == recorded_events(recording)
    # a raw part precedes the parts made from its event
    assert [p["type"] for p in collapse(parts)][:5] == [
        "stream-start",
        "raw",
        "response-metadata",
        "raw",
        "text-start",
    ]

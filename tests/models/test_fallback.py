"""Model fallbacks over real loopback HTTP: which errors fall over, when, and what the answer says."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentstream import Agent
from agentstream.chunks import encode_chunk
from agentstream.models import FallbackModel, OpenAIChatModel, resolve_model
from agentstream.models._fallback import ModelEntry, fallback_entries

from .conftest import API_KEY, ReplayServer, Reply, load

ANSWER = load("openai-chat/text-stream-usage.json")["interactions"][0]["response"]["body"]
UNAVAILABLE = Reply(status=503, content_type="application/json", body='{"error": {"message": "overloaded"}}')
BAD = Reply(status=400, content_type="application/json", body='{"error": {"message": "bad request"}}')


async def _no_sleep(_: float) -> None:
    return None


def _model(server: ReplayServer, name: str) -> OpenAIChatModel:
    return OpenAIChatModel(name, base_url=server.url + "/v1", api_key=API_KEY, max_retries=0)


async def _parts(model: FallbackModel) -> list[dict[str, Any]]:
    return [dict(p) async for p in model.do_stream({"prompt": [{"role": "user", "content": "hi"}]})]


def _text(parts: list[dict[str, Any]]) -> str:
    return "".join(p["delta"] for p in parts if p["type"] == "text-delta")


async def test_falls_over_after_retries_and_says_who_answered(server: ReplayServer) -> None:
    server.replies += [UNAVAILABLE, UNAVAILABLE, Reply(body=ANSWER)]
    model = FallbackModel(
        [ModelEntry(_model(server, "first"), max_retries=1), ModelEntry(_model(server, "second"))],
        sleep=_no_sleep,
    )
    parts = await _parts(model)
    assert [r.body["model"] for r in server.received] == ["first", "first", "second"]
    assert sum(p["type"] == "stream-start" for p in parts) == 1
    assert not [p for p in parts if p["type"] == "error"]
    assert _text(parts) == _text([dict(p) async for p in _replay(server)])
    meta = [p for p in parts if p["type"] == "response-metadata"]
    assert meta and meta[0]["modelId"]  # the provider's own id for the model that answered
    fallback = parts[-1]["providerMetadata"]["agentstream"]["fallback"]
    assert fallback["model"] == "openai/second"
    assert [(f["model"], f["statusCode"]) for f in fallback["failed"]] == [("openai/first", 503)] * 2
    assert API_KEY not in repr(parts)


async def _replay(server: ReplayServer) -> Any:
    server.replies.append(Reply(body=ANSWER))
    async for part in _model(server, "again").do_stream({"prompt": [{"role": "user", "content": "hi"}]}):
        yield part


async def test_a_400_does_not_fall_over(server: ReplayServer) -> None:
    server.replies += [BAD, Reply(body=ANSWER)]
    model = FallbackModel([ModelEntry(_model(server, "first"), 2), ModelEntry(_model(server, "second"))])
    parts = await _parts(model)
    assert [p["type"] for p in parts] == ["error"]
    assert parts[0]["error"].status_code == 400
    assert len(server.received) == 1


async def test_no_fall_over_once_the_answer_started(server: ReplayServer) -> None:
    server.replies += [Reply(body=ANSWER, cut_after_events=2), Reply(body=ANSWER)]
    model = FallbackModel([ModelEntry(_model(server, "first")), ModelEntry(_model(server, "second"))])
    parts = await _parts(model)
    assert len(server.received) == 1
    assert parts[-1]["type"] == "error"  # the broken answer's own error, not a second answer
    assert _text(parts)


async def test_the_last_model_s_error_is_the_answer(server: ReplayServer) -> None:
    server.replies += [UNAVAILABLE, UNAVAILABLE]
    model = FallbackModel([ModelEntry(_model(server, "a")), ModelEntry(_model(server, "b"))], sleep=_no_sleep)
    parts = await _parts(model)
    assert [p["type"] for p in parts] == ["error"] and parts[0]["error"].status_code == 503


async def test_agent_with_a_model_list(server: ReplayServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
    server.replies += [UNAVAILABLE, Reply(body=ANSWER)]
    agent = Agent(id="a", model=[{"model": "openai/primary", "max_retries": 0}, {"model": "openai/backup"}])
    output = agent.stream("hi")
    finishes = [c async for c in output.full_stream if c.type == "step-finish"]
    text = await output.text
    assert text and [r.body["model"] for r in server.received] == ["primary", "backup"]
    steps = await output.steps
    assert steps[0].response["modelId"]
    meta = finishes[0].payload.metadata["providerMetadata"]
    assert meta["agentstream"]["fallback"]["model"] == "openai/backup"


def test_entries() -> None:
    with pytest.raises(ValueError, match=r"model\[0\]: expected"):
        fallback_entries([{"max_retries": 1}], resolve_model)
    with pytest.raises(ValueError, match=r"model\[1\].max_retries: expected an integer >= 0, got -1"):
        fallback_entries(["demo", {"model": "demo", "max_retries": -1}], resolve_model)
    with pytest.raises(ValueError, match="no enabled model"):
        fallback_entries([{"model": "demo", "enabled": False}], resolve_model)
    entries = fallback_entries(["demo", {"model": "demo", "maxRetries": 2}], resolve_model)
    assert [e.max_retries for e in entries] == [0, 2]
    assert isinstance(resolve_model(["demo", "demo"]), FallbackModel)


async def test_step_finish_names_the_model_that_answered(server: ReplayServer) -> None:
    """Mastra's ``metadata.modelMetadata`` and ``fallbackModelIndex`` name the answering entry."""
    server.replies += [UNAVAILABLE, Reply(body=ANSWER)]
    model = FallbackModel([ModelEntry(_model(server, "primary")), ModelEntry(_model(server, "backup"))])
    agent = Agent(id="a", model=model)
    output = agent.stream("hi")
    [finish] = [c async for c in output.full_stream if c.type == "step-finish"]
    assert finish.payload.metadata["modelMetadata"] == {
        "modelId": "backup",
        "modelVersion": "v2",
        "modelProvider": "openai",
    }
    wire = json.loads(encode_chunk(finish))
    assert wire["payload"]["fallbackModelIndex"] == 1


async def test_a_plain_model_has_no_fallback_index(server: ReplayServer) -> None:
    server.replies.append(Reply(body=ANSWER))
    agent = Agent(id="a", model=_model(server, "only"))
    output = agent.stream("hi")
    [finish] = [c async for c in output.full_stream if c.type == "step-finish"]
    assert "fallbackModelIndex" not in json.loads(encode_chunk(finish))["payload"]
    assert finish.payload.metadata["modelMetadata"]["modelId"] == "only"

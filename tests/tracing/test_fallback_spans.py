"""A fallback list's call in its ``chat`` span: which model answered, and each failed attempt."""

from __future__ import annotations

from agentstream import Agent
from agentstream.models import APICallError, FallbackModel
from agentstream.models._fallback import ModelEntry
from agentstream.testing import ScriptedModel

from .conftest import Spans

ANSWER = [
    {"type": "stream-start", "warnings": []},
    {"type": "text-start", "id": "1"},
    {"type": "text-delta", "id": "1", "delta": "hello"},
    {"type": "text-end", "id": "1"},
    {
        "type": "finish",
        "finishReason": "stop",
        "usage": {"inputTokens": 3, "outputTokens": 1, "totalTokens": 4},
    },
]


def _unavailable() -> list[dict[str, object]]:
    error = APICallError("overloaded", url="http://x", provider="p", status_code=503)
    return [{"type": "error", "error": error}]


async def _no_sleep(_: float) -> None:
    return None


async def test_failed_attempts_are_events_of_the_chat_span(spans: Spans) -> None:
    primary = ScriptedModel([_unavailable(), _unavailable()], provider="acme", model_id="big")
    backup = ScriptedModel([ANSWER], provider="acme", model_id="small")
    model = FallbackModel([ModelEntry(primary, 1), ModelEntry(backup)], sleep=_no_sleep)
    agent = Agent(id="a", name="A", model=model, instrument=spans.settings())
    assert await agent.stream("hi").text == "hello"
    chat = spans.named("chat big")  # the span is named for the list's first model
    attributes = chat.attributes or {}
    assert attributes["agentstream.fallback.index"] == 1
    assert attributes["agentstream.fallback.model"] == "acme/small"
    assert attributes["agentstream.fallback.failed_attempts"] == 2
    events = [(e.name, dict(e.attributes or {})) for e in chat.events]
    assert (
        events
        == [
            (
                "agentstream.fallback.attempt_failed",
                {
                    "agentstream.fallback.model": "acme/big",
                    "agentstream.fallback.index": 0,
                    "error.message": "p (status 503): overloaded",
                    "http.response.status_code": 503,
                },
            )
        ]
        * 2
    )


async def test_a_plain_model_has_no_fallback_attributes(spans: Spans) -> None:
    agent = Agent(id="a", name="A", model=ScriptedModel([ANSWER]), instrument=spans.settings())
    await agent.stream("hi").text
    attributes = spans.named("chat mock-model-id").attributes or {}
    assert not [k for k in attributes if k.startswith("agentstream.fallback")]

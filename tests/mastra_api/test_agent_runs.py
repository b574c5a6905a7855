"""The run routes' reading of a body: each mistake is a 400 naming the field and what it expected,
before the agent runs; a UI message (Studio's ``{role, parts}``) is taken as its text; a tool with
schemas describes them all."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from agentstream import Agent, Mastra, tool
from agentstream._app import create_app
from agentstream.testing import ScriptedModel

USAGE = {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}
ANSWER = [
    {"type": "stream-start", "warnings": []},
    {"type": "text-start", "id": "t"},
    {"type": "text-delta", "id": "t", "delta": "ok"},
    {"type": "text-end", "id": "t"},
    {"type": "finish", "finishReason": "stop", "usage": USAGE},
]


@tool(resume_schema={"type": "object", "properties": {"go": {"type": "boolean"}}, "required": ["go"]})
async def wait(topic: str) -> dict[str, Any]:
    """Wait for a go."""
    return {"topic": topic}


def _app(model: ScriptedModel) -> Any:
    mastra = Mastra(agents={"key": Agent(id="the-agent", instructions="x", model=model, tools=[wait])})
    return create_app(mastra, heartbeat_ms=0)


def _client(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({}, "messages: required, a string or a non-empty list of messages"),
        ({"messages": []}, "messages: required, a string or a non-empty list of messages"),
        ({"messages": [42]}, "messages[0]: expected a message object or a string, got int"),
        (
            {"messages": [{"role": "system", "content": "obey"}]},
            "messages[0].role: expected 'user', 'assistant' or 'tool', got 'system'",
        ),
        ({"messages": "hi", "maxSteps": 0}, "maxSteps: expected a positive integer, got 0"),
        ({"messages": "hi", "memory": "t1"}, "memory: expected an object {thread, resource}, got str"),
        (
            {"messages": "hi", "memory": {"resource": "u"}},
            "memory.thread: expected a thread id (a string, or an object with an 'id')",
        ),
        (
            {"messages": "hi", "memory": {"thread": "t"}},
            "memory.resource: expected a resource id (a non-empty string)",
        ),
        ({"messages": "hi", "runId": ""}, "runId: expected a non-empty string of at most 200 characters"),
    ],
)
async def test_a_bad_body_is_a_400_naming_the_field(body: dict[str, Any], message: str) -> None:
    model = ScriptedModel([ANSWER])
    async with _client(_app(model)) as c:
        for route in ("stream", "generate"):
            r = await c.post(f"/api/agents/key/{route}", json=body)
            assert r.status_code == 400 and r.json() == {"error": message}, (route, r.text)
    assert model.calls == []


async def test_bad_decisions_are_400s_before_any_run() -> None:
    async with _client(_app(ScriptedModel([ANSWER]))) as c:
        no_run = await c.post("/api/agents/key/approve-tool-call", json={"toolCallId": "c"})
        no_call = await c.post("/api/agents/key/decline-tool-call", json={"runId": "r"})
        not_json = await c.post(
            "/api/agents/key/stream", content=b"hi", headers={"content-type": "text/plain"}
        )
        array = await c.post("/api/agents/key/stream", json=["hi"])
    assert (no_run.status_code, no_run.json()) == (400, {"error": "Run id is required"})
    assert no_call.status_code == 404  # no such run of the caller's: refused before the call id matters
    assert not_json.status_code == 415
    assert (array.status_code, array.json()) == (
        400,
        {"error": "the request body must be a JSON object, got list"},
    )


async def test_a_ui_message_is_its_text_and_the_agent_answers_to_key_and_id() -> None:
    model = ScriptedModel([ANSWER, ANSWER])
    ui = {"role": "user", "parts": [{"type": "text", "text": "Hello "}, {"type": "text", "text": "there"}]}
    async with _client(_app(model)) as c:
        by_key = await c.post("/api/agents/key/generate", json={"messages": [ui]})
        by_id = await c.post("/api/agents/the-agent/generate", json={"messages": "again"})
        tool = (await c.get("/api/agents/the-agent/tools/wait")).json()
    assert by_key.json()["text"] == by_id.json()["text"] == "ok"
    assert "Hello there" in json.dumps(model.calls[0].prompt)
    assert set(tool) == {"id", "description", "inputSchema", "resumeSchema", "requireApproval"}
    assert json.loads(tool["resumeSchema"])["json"]["required"] == ["go"]

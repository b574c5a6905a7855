"""The chat body's ``memory: {thread, resource}`` (Mastra's chat route option; the chat page's
threads) attacked over HTTP: with an auth hook a caller's resource is their own (another is 403,
none is theirs), another resource's thread is refused before the agent runs (403, not an error
chunk naming its owner), and a malformed option is a 400 naming the field. Without auth the
resource is taken as given (one local user)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette

from agentstream._mastra import Mastra
from agentstream.agent import Agent
from agentstream.memory import Memory
from agentstream.server import RequestGuard, chat_route
from agentstream.storage import SQLiteStore
from agentstream.testing import ScriptedModel

from ._support import BASE, USAGE, x_user

ANSWER = [
    {"type": "stream-start", "warnings": []},
    {"type": "text-start", "id": "t"},
    {"type": "text-delta", "id": "t", "delta": "ok"},
    {"type": "text-end", "id": "t"},
    {"type": "finish", "finishReason": "stop", "usage": USAGE},
]


def _body(text: str, memory: Any, chat: str = "c1") -> dict[str, Any]:
    user = {"id": f"u-{text}", "role": "user", "parts": [{"type": "text", "text": text}]}
    return {"id": chat, "messages": [user], "trigger": "submit-message", "memory": memory}


@pytest.fixture
async def storage(tmp_path: Path) -> AsyncIterator[SQLiteStore]:
    store = SQLiteStore(tmp_path / "memory.db")
    await store.init()
    yield store
    await store.close()


def _client(storage: SQLiteStore, model: ScriptedModel, *, auth: bool) -> httpx.AsyncClient:
    agent = Agent(id="a", instructions="x", model=model, memory=Memory())
    mastra = Mastra(agents={"a": agent}, storage=storage)
    guard = RequestGuard(auth=x_user if auth else None)
    app = Starlette(routes=[chat_route(mastra, "/api/chat/{agent_id}", heartbeat_ms=0, guard=guard)])
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE, timeout=30)


async def test_signed_in_callers_keep_to_their_own_resource_and_threads(storage: SQLiteStore) -> None:
    model = ScriptedModel([ANSWER, ANSWER, ANSWER])
    async with _client(storage, model, auth=True) as client:
        alice, bob = {"x-user": "alice"}, {"x-user": "bob"}
        mine = await client.post("/api/chat/a", json=_body("hi", {"thread": "t-alice"}), headers=alice)
        assert mine.status_code == 200 and mine.text.rstrip().endswith("data: [DONE]")
        thread = await storage.get_thread("t-alice")
        assert thread.resource_id == "alice"  # the principal's owner key, filled in
        # Bob names Alice's thread, with his resource or with hers: refused before anything runs.
        for memory in ({"thread": "t-alice"}, {"thread": "t-alice", "resource": "bob"}):
            taken = await client.post("/api/chat/a", json=_body("mine now", memory, "c2"), headers=bob)
            assert taken.status_code == 403, taken.text
            error = taken.json()["error"]
            assert error["path"] == "memory.thread" and "alice" not in error["message"]
        spoofed = await client.post(
            "/api/chat/a", json=_body("as alice", {"thread": "t-new", "resource": "alice"}, "c3"), headers=bob
        )
        assert spoofed.status_code == 403 and spoofed.json()["error"]["path"] == "memory.resource"
        own = await client.post(
            "/api/chat/a", json=_body("again", {"thread": "t-alice", "resource": "alice"}), headers=alice
        )
        assert own.status_code == 200
    assert len(model.calls) == 2  # only Alice's two turns ran the agent
    page = await storage.list_messages("t-alice")
    assert [m.role for m in page.messages] == ["user", "assistant", "user", "assistant"]
    assert await storage.find_thread("t-new") is None


@pytest.mark.parametrize(
    ("memory", "path", "words"),
    [
        ("t1", "memory", "expected an object"),
        ({"thread": "t1", "resource": "r", "extra": 1}, "memory", "'extra'"),
        ({"resource": "r"}, "memory.thread", "thread id"),
        ({"thread": {"id": ""}, "resource": "r"}, "memory.thread.id", "thread id"),
        ({"thread": {"id": "t", "title": 5}, "resource": "r"}, "memory.thread.title", "string"),
        ({"thread": "t" * 300, "resource": "r"}, "memory.thread", "at most 256"),
        ({"thread": "t1"}, "memory.resource", "resource id"),
        ({"thread": "t1", "resource": ""}, "memory.resource", "resource id"),
    ],
)
async def test_a_malformed_memory_option_is_a_400_naming_the_field(
    storage: SQLiteStore, memory: Any, path: str, words: str
) -> None:
    model = ScriptedModel([ANSWER])
    async with _client(storage, model, auth=False) as client:
        answer = await client.post("/api/chat/a", json=_body("hi", memory))
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["path"] == path and words in error["message"], error
    assert model.calls == []


async def test_without_auth_the_resource_is_the_clients(storage: SQLiteStore) -> None:
    model = ScriptedModel([ANSWER])
    async with _client(storage, model, auth=False) as client:
        answer = await client.post(
            "/api/chat/a",
            json=_body("hi", {"thread": {"id": "t9", "title": "Tides"}, "resource": "browser-1"}),
        )
    assert answer.status_code == 200
    thread = await storage.get_thread("t9")
    assert (thread.resource_id, thread.title) == ("browser-1", "Tides")


async def test_an_agent_without_memory_refuses_the_option(storage: SQLiteStore) -> None:
    model = ScriptedModel([ANSWER])
    mastra = Mastra(agents={"plain": Agent(id="plain", instructions="x", model=model)}, storage=storage)
    app = Starlette(routes=[chat_route(mastra, "/api/chat/{agent_id}", heartbeat_ms=0)])
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE, timeout=30) as client:
        answer = await client.post("/api/chat/plain", json=_body("hi", {"thread": "t1", "resource": "r"}))
    assert answer.status_code == 400 and answer.json()["error"]["path"] == "memory"
    assert "has no memory" in answer.json()["error"]["message"] and model.calls == []

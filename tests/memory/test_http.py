"""The memory API over HTTP: Mastra client shapes, and each principal confined to its resource."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from starlette.requests import Request

from agentstream import Mastra
from agentstream._app import create_app
from agentstream.agent import Agent
from agentstream.memory import Memory
from agentstream.server import AuthError, RequestGuard
from agentstream.storage import InMemoryStore
from agentstream.testing import ScriptedModel

USAGE = {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}
TOKENS = {"token-alice": "alice", "token-bob": "bob"}


def text_step(text: str) -> list[dict[str, Any]]:
    return [
        {"type": "stream-start", "warnings": []},
        {"type": "text-start", "id": "t"},
        {"type": "text-delta", "id": "t", "delta": text},
        {"type": "text-end", "id": "t"},
        {"type": "finish", "finishReason": "stop", "usage": USAGE},
    ]


def auth(request: Request) -> object:
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or token not in TOKENS:
        raise AuthError("bad token")
    return TOKENS[token]


async def _app(with_auth: bool) -> tuple[Any, Agent]:
    store = InMemoryStore()
    agent = Agent(
        id="chat", model=ScriptedModel([text_step("Hi Alice."), text_step("Hi Bob.")]), memory=Memory()
    )
    mastra = Mastra(agents={"chat": agent}, storage=store)
    await agent.generate("I am Alice", memory={"thread": "alice-1", "resource": "alice"})
    await agent.generate("I am Bob", memory={"thread": "bob-1", "resource": "bob"})
    guard = RequestGuard(auth=auth) if with_auth else RequestGuard()
    return create_app(mastra, guard=guard), agent


def _client(app: Any, token: str | None = None) -> httpx.AsyncClient:
    headers = {"authorization": f"Bearer {token}"} if token else {}
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1", headers=headers
    )


async def test_threads_and_messages_in_mastra_client_shapes() -> None:
    app, _ = await _app(with_auth=False)
    async with _client(app) as http:
        listed = (
            await http.get("/api/memory/threads", params={"resourceId": "alice", "agentId": "chat"})
        ).json()
        assert [t["id"] for t in listed["threads"]] == ["alice-1"]
        thread = listed["threads"][0]
        # Mastra's API answers at this path (mastra_api/_memory.py): no metadata key for a thread without any
        assert set(thread) - {"metadata"} == {"id", "resourceId", "title", "createdAt", "updatedAt"}
        assert thread["resourceId"] == "alice"
        got = (await http.get("/api/memory/threads/alice-1/messages", params={"agentId": "chat"})).json()
        assert [m["role"] for m in got["messages"]] == ["user", "assistant"]
        assert got["messages"][0]["content"]["parts"][0]["text"] == "I am Alice"
        assert got["total"] == 2 and got["hasMore"] is False
        paged = (await http.get("/api/memory/threads/alice-1/messages", params={"perPage": "1"})).json()
        assert len(paged["messages"]) == 1 and paged["hasMore"] is True and paged["page"] == 0
        for wrong in ("-1", "x"):
            bad = await http.get("/api/memory/threads/alice-1/messages", params={"perPage": wrong})
            assert bad.status_code == 400 and "perPage" in bad.text
        # without a resourceId Mastra's API lists every thread (no auth hook: a single-user app)
        assert (await http.get("/api/memory/threads")).status_code == 200
        assert (await http.delete("/api/memory/threads/alice-1")).json() == {"result": "Thread deleted"}
        assert (await http.get("/api/memory/threads/alice-1")).status_code == 404


@pytest.mark.parametrize(
    ("method", "path", "params"),
    [
        ("GET", "/api/memory/threads", {"resourceId": "bob"}),
        ("GET", "/api/memory/threads/bob-1", {}),
        ("GET", "/api/memory/threads/bob-1/messages", {}),
        ("DELETE", "/api/memory/threads/bob-1", {}),
    ],
)
async def test_a_principal_never_reaches_another_resource(
    method: str, path: str, params: dict[str, str]
) -> None:
    """Alice, authenticated, asks for Bob's threads and messages every way the API offers."""
    app, agent = await _app(with_auth=True)
    async with _client(app, "token-alice") as http:
        answer = await http.request(method, path, params=params)
        assert answer.status_code in (403, 404), answer.text
        assert "Bob" not in answer.text and "bob-1" not in answer.text
        # her own resource works, and without resourceId the principal's is used
        mine = (await http.get("/api/memory/threads")).json()
        assert [t["id"] for t in mine["threads"]] == ["alice-1"]
    async with _client(app) as anonymous:
        assert (await anonymous.get("/api/memory/threads", params={"resourceId": "alice"})).status_code == 401
    # Bob's thread is intact
    memory = agent._memory_for_run()
    assert await memory.get_thread("bob-1") is not None
    assert (await memory.list_messages("bob-1")).total == 2

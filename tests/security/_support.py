"""An app and client for attacking ``chat_route``'s request guard in process (ASGI, no socket)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request

from agentstream._mastra import Mastra
from agentstream.agent import Agent
from agentstream.server import AuthError, RequestGuard, chat_route

USAGE = {"inputTokens": 3, "outputTokens": 1, "totalTokens": 4}
USER = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}
BODY: dict[str, Any] = {"id": "c1", "trigger": "submit-message", "messages": [USER]}
# httpx's ASGITransport puts the URL's host into scope["server"]: this is a loopback bind.
BASE = "http://127.0.0.1:8000"


def x_user(request: Request) -> object:
    """An ``auth`` hook for tests: the principal is the ``x-user`` header (401 without one)."""
    user = request.headers.get("x-user")
    if not user:
        raise AuthError("missing x-user")
    return user


class CountingModel:
    """Answers ``ok`` and records each call's prompt, so a test can tell whether the agent ran."""

    specification_version = "v2"
    provider = "test"
    model_id = "counting"

    def __init__(self) -> None:
        self.prompts: list[list[dict[str, Any]]] = []

    def do_stream(self, options: Any) -> AsyncIterator[dict[str, Any]]:
        self.prompts.append(list(options.get("prompt", [])))
        return self._play()

    async def _play(self) -> AsyncIterator[dict[str, Any]]:
        yield {"type": "stream-start", "warnings": []}
        yield {"type": "text-start", "id": "t1"}
        yield {"type": "text-delta", "id": "t1", "delta": "ok"}
        yield {"type": "text-end", "id": "t1"}
        yield {"type": "finish", "finishReason": "stop", "usage": USAGE}


def app_with(
    model: CountingModel, guard: RequestGuard | None = None, *, allow_system_messages: bool = False
) -> Starlette:
    mastra = Mastra(agents={"echo": Agent(id="echo", instructions="Be brief.", model=model)})
    route = chat_route(
        mastra,
        "/api/chat/{agent_id}",
        guard=guard,
        heartbeat_ms=0,
        allow_system_messages=allow_system_messages,
    )
    return Starlette(routes=[route])


def client_for(app: Any, base_url: str = BASE) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=base_url)


def error_of(response: httpx.Response) -> dict[str, Any]:
    """The ``error`` object of a JSON error answer (fails if the answer is not one)."""
    assert response.headers["content-type"].startswith("application/json"), response.text[:200]
    error: dict[str, Any] = response.json()["error"]
    assert isinstance(error["message"], str) and error["message"]
    return error

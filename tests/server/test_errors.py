"""`answering_errors`: refusals are JSON with the guard's CORS headers; failures a bare, logged 500."""

from __future__ import annotations

import logging

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from agentstream.ai_sdk import ChatRequestError
from agentstream.server import RequestGuard
from agentstream.server._errors import answering_errors

PAGE = "http://app.example"


def _app(error: Exception) -> Starlette:
    async def start(request: Request) -> Response:
        raise error

    guard = RequestGuard(allowed_origins=[PAGE], cors=True)
    return Starlette(routes=[Route("/x", answering_errors(start, guard, "test request"), methods=["POST"])])


async def _post(app: Starlette) -> httpx.Response:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000") as client:
        return await client.post("/x", headers={"origin": PAGE})


async def test_a_refusal_is_its_own_status_with_cors_headers() -> None:
    r = await _post(_app(ChatRequestError("messages[0].role: expected user", status_code=422)))
    assert r.status_code == 422
    assert r.json()["error"]["message"] == "messages[0].role: expected user"
    assert r.headers["access-control-allow-origin"] == PAGE


async def test_a_failure_is_a_500_without_its_message_and_the_log_has_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.ERROR, logger="agentstream.server"):
        r = await _post(_app(RuntimeError("token=sk-live-123 leaked")))
    assert r.status_code == 500
    assert r.json()["error"]["name"] == "InternalServerError"
    assert "sk-live-123" not in r.text
    assert "test request POST /x failed" in caplog.text and "sk-live-123" in caplog.text

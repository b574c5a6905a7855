"""`ConnectionLimits` settings and `RequestGuard.max_buffered_bytes` (issue 22, item 3), in process.

The attacks over real sockets are in ``tests/security/test_connection_limits.py``."""

from __future__ import annotations

import asyncio
import resource
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette

from agentstream.server import ConnectionLimits, RequestGuard, default_max_connections, serving_config
from tests.security._support import BODY, CountingModel, app_with


def test_limits_refuse_settings_that_would_turn_them_off() -> None:
    for name in ("header_timeout_s", "body_timeout_s", "keep_alive_s", "graceful_shutdown_s"):
        for bad in (0, -1, float("nan"), float("inf"), True):
            with pytest.raises(ValueError, match=name):
                ConnectionLimits(**{name: bad})
    for name in ("max_connections", "max_header_bytes"):
        with pytest.raises(ValueError, match=name):
            ConnectionLimits(**{name: 0})
    with pytest.raises(ValueError, match="max_buffered_bytes"):
        RequestGuard(max_buffered_bytes=0)


def test_the_default_cap_leaves_room_for_the_server_s_own_files() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (1024, hard))
        assert default_max_connections() == 1024 - 128
        assert ConnectionLimits().connection_cap() == 896
        assert ConnectionLimits(max_connections=50).connection_cap() == 50
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_serving_config_carries_the_limits_to_uvicorn() -> None:
    config = serving_config(
        Starlette(), ConnectionLimits(keep_alive_s=3, max_header_bytes=8192, max_connections=7)
    )
    assert config.timeout_keep_alive == 3
    assert config.h11_max_incomplete_event_size == 8192
    assert config.timeout_graceful_shutdown == 2
    assert config.http.cap == 7 and config.http.limits.keep_alive_s == 3


def test_serving_config_parses_with_httptools_where_it_is_installed_else_h11() -> None:
    from uvicorn.protocols.http.h11_impl import H11Protocol

    from agentstream.server._protocols import httptools_available

    auto = serving_config(Starlette()).http
    assert issubclass(serving_config(Starlette(), http="h11").http, H11Protocol)
    if httptools_available():
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

        assert issubclass(auto, HttpToolsProtocol)
        assert issubclass(serving_config(Starlette(), http="httptools").http, HttpToolsProtocol)
    else:
        assert issubclass(auto, H11Protocol)
    with pytest.raises(ValueError, match="'auto', 'httptools' or 'h11'"):
        serving_config(Starlette(), http="wsproto")


def _client(guard: RequestGuard) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app_with(CountingModel(), guard))
    return httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000")


async def test_a_body_past_the_total_budget_is_a_503_and_the_budget_comes_back() -> None:
    guard = RequestGuard(max_buffered_bytes=300)
    held = asyncio.Event()
    release = asyncio.Event()

    async def slow_body() -> AsyncIterator[bytes]:
        yield b'{"id": "c1", '
        yield b" " * 250  # 263 bytes of 300 held while this request waits
        held.set()
        await release.wait()
        yield b'"messages": []}'

    async with _client(guard) as client:
        first = asyncio.create_task(
            client.post("/api/chat/echo", content=slow_body(), headers={"content-type": "application/json"})
        )
        await held.wait()
        busy = await client.post("/api/chat/echo", json=BODY)
        release.set()
        await first
        after = await client.post("/api/chat/echo", json=BODY)
    assert busy.status_code == 503
    assert busy.headers["retry-after"] == "1"
    assert "max_buffered_bytes" in busy.json()["error"]["message"]
    assert after.status_code == 200  # nothing is left held
    assert guard._budget.used == 0


async def test_a_declared_length_that_does_not_fit_is_refused_before_it_is_read() -> None:
    guard = RequestGuard(max_buffered_bytes=64)
    async with _client(guard) as client:
        r = await client.post("/api/chat/echo", json=BODY)  # longer than 64 bytes
    assert r.status_code == 503
    assert guard._budget.used == 0


def _body(size: int) -> dict[str, Any]:
    return {**BODY, "pad": " " * size}


async def test_bodies_within_the_budget_pass_one_after_another() -> None:
    guard = RequestGuard(max_buffered_bytes=4096)
    async with _client(guard) as client:
        answers = [await client.post("/api/chat/echo", json=_body(3000)) for _ in range(5)]
    assert [a.status_code for a in answers] == [200] * 5

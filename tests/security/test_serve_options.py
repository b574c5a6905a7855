"""``agentstream serve``'s guard: bearer token (``--token`` / ``AGENTSTREAM_TOKEN``), the warning for a
non-loopback bind without one, and the app's JSON errors. Nothing here binds a socket."""

from __future__ import annotations

import argparse

import pytest

from agentstream._app import create_app
from agentstream._cli.serve import _guard
from agentstream.cli import build_parser
from agentstream.server import RequestGuard, bearer_token_auth

from ._support import BODY, client_for, error_of


def _args(monkeypatch: pytest.MonkeyPatch, *argv: str, env_token: str | None = None) -> argparse.Namespace:
    if env_token is None:
        monkeypatch.delenv("AGENTSTREAM_TOKEN", raising=False)
    else:
        monkeypatch.setenv("AGENTSTREAM_TOKEN", env_token)
    return build_parser().parse_args(["serve", *argv])


def test_token_from_flag_or_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _args(monkeypatch).token is None
    assert _args(monkeypatch, env_token="from-env").token == "from-env"
    assert _args(monkeypatch, "--token", "flag", env_token="env").token == "flag"
    guard = _guard(_args(monkeypatch, "--token", "t0k"))
    assert guard.auth is not None and guard.allowed_hosts is None and not guard.cors
    guard = _guard(
        _args(monkeypatch, "--allow-origin", "https://app.example", "--allow-host", "chat.example")
    )
    assert guard.cors and list(guard.allowed_origins) == ["https://app.example"]
    assert list(guard.allowed_hosts or []) == ["chat.example"] and guard.auth is None


def test_warning_for_a_public_bind_without_a_token(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _guard(_args(monkeypatch, "--host", "0.0.0.0"))
    err = capsys.readouterr().err
    assert err.startswith(
        "agentstream serve: warning: 0.0.0.0 is not a loopback address and there is no --token"
    )
    for argv in (
        ("--host", "127.0.0.1"),
        ("--host", "localhost"),
        ("--host", "::1"),
        ("--host", "0.0.0.0", "--token", "x"),
    ):
        _guard(_args(monkeypatch, *argv))
        assert capsys.readouterr().err == "", argv


async def test_app_with_a_token_guards_the_api_not_the_page() -> None:
    app = create_app(delay_in_ms=None, heartbeat_ms=0, guard=RequestGuard(auth=bearer_token_auth("s3cret")))
    async with client_for(app) as client:
        assert (await client.get("/")).status_code == 200
        r = await client.get("/api/chat/info")
        assert r.status_code == 401 and error_of(r)["name"] == "AuthError"
        r = await client.post("/api/chat", json=BODY)
        assert r.status_code == 401
        auth = {"authorization": "Bearer s3cret"}
        assert (await client.get("/api/chat/info", headers=auth)).status_code == 200
        r = await client.post("/api/chat", json=BODY, headers=auth)
        assert r.status_code == 200 and r.text.endswith("data: [DONE]\n\n")
        r = await client.get("/api/chat/info", headers={"origin": "http://evil.example"})
        assert r.status_code == 403


async def test_app_errors_are_json() -> None:
    async with client_for(create_app(delay_in_ms=None, heartbeat_ms=0)) as client:
        r = await client.get("/nowhere")
        assert r.status_code == 404 and error_of(r)["message"] == "Not Found"
        r = await client.get("/api/chat")
        assert r.status_code == 405 and "POST" in r.headers["allow"]
        assert error_of(r)["message"] == "Method Not Allowed"

"""`oauth_client` and the token stores (the OAuth flows themselves run against the official
suite's authorization servers in tests/mcp/test_official_conformance.py, `auth/*`)."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from agentstream.mcp import AuthorizationCodeResult, FileTokenStorage, MemoryTokenStorage, oauth_client


async def _redirect(url: str) -> None:
    raise AssertionError("not called here")


async def _callback() -> AuthorizationCodeResult:
    raise AssertionError("not called here")


async def test_a_token_file_survives_a_restart_and_is_private(tmp_path: Path) -> None:
    path = tmp_path / "tokens" / "docs.json"
    first = FileTokenStorage(path)
    assert await first.get_tokens() is None and await first.get_client_info() is None
    await first.set_tokens(OAuthToken(access_token="a1", token_type="Bearer", refresh_token="r1"))
    client = OAuthClientInformationFull(client_id="c1", redirect_uris=["http://127.0.0.1/cb"])  # type: ignore[list-item]
    await first.set_client_info(client)
    again = FileTokenStorage(path)  # a new process
    tokens = await again.get_tokens()
    assert tokens is not None and tokens.access_token == "a1" and tokens.refresh_token == "r1"
    info = await again.get_client_info()
    assert info is not None and info.client_id == "c1"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    path.write_text("[1]")
    with pytest.raises(ValueError, match=r"docs.json: expected a JSON object, got list"):
        await again.get_tokens()


async def test_a_preregistered_client_is_used_until_one_is_stored() -> None:
    storage = MemoryTokenStorage()
    provider = oauth_client(
        "http://127.0.0.1:1/mcp",
        redirect_uri="http://127.0.0.1:2/cb",
        redirect_handler=_redirect,
        callback_handler=_callback,
        storage=storage,
        client_id="pre",
        client_secret="s3cret",
    )
    info = await provider.context.storage.get_client_info()
    assert info is not None and (info.client_id, info.client_secret) == ("pre", "s3cret")
    assert info.token_endpoint_auth_method == "client_secret_basic"
    assert storage.client_info is None  # the seam's own store is untouched


def test_bad_oauth_settings_name_the_problem() -> None:
    with pytest.raises(ValueError, match=r"redirect_uri=...\) must be an http\(s\) URL, got 'myapp:/cb'"):
        oauth_client(
            "http://h/mcp", redirect_uri="myapp:/cb", redirect_handler=_redirect, callback_handler=_callback
        )
    with pytest.raises(ValueError, match=r"client_secret=...\) needs the client_id"):
        oauth_client(
            "http://h/mcp",
            redirect_uri="http://127.0.0.1/cb",
            redirect_handler=_redirect,
            callback_handler=_callback,
            client_secret="x",
        )

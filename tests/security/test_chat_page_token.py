"""The chat page with ``serve --token``: opened at the ``#token=…`` address ``serve`` prints, it
sends the token on every API request (real Chromium, as in ``tests/test_chat_page.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agentstream.server import RequestGuard, bearer_token_auth
from tests.test_chat_page import drive, serving

TOKEN = "s3cret-Token"


@pytest.fixture(scope="module")
def token_url() -> Iterator[str]:
    from agentstream._app import create_app

    app = create_app(delay_in_ms=5, guard=RequestGuard(auth=bearer_token_auth(TOKEN)))
    with serving(app) as url:
        yield f"{url}#token={TOKEN}"


def test_page_sends_the_token_from_the_address(token_url: str, tmp_path: Path) -> None:
    out = drive(token_url, tmp_path, "What is the weather in Paris?")
    # every API request carried the token (a 401 would show): the agents, the workflow picker, the
    # probe for a running answer of the page's chat, the chat
    resume = f"GET /api/chat/demo/{out['chat']}/stream 204"
    assert sorted(out["requests"]) == sorted(
        ["GET /api/chat/info 200", "GET /api/workflow 200", resume, "POST /api/chat/demo 200"]
    )
    assert out["consoleErrors"] == []
    assert "Paris" in out["turns"][0]["text"]

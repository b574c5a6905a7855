"""The chat page with ``serve --token``: opened at the ``#token=…`` address ``serve`` prints, it
sends the token on every API request (real Chromium, as in ``tests/test_chat_page.py``)."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentstream.server import RequestGuard, bearer_token_auth
from tests.test_chat_page import _missing, drive

TOKEN = "s3cret-Token"


@pytest.fixture(scope="module")
def token_url() -> Iterator[str]:
    reason = _missing()
    if reason:
        if os.environ.get("CI"):
            pytest.fail(f"chat page check cannot run on CI: {reason}")
        pytest.skip(reason)
    import uvicorn

    from agentstream._app import create_app

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    app = create_app(delay_in_ms=5, guard=RequestGuard(auth=bearer_token_auth(TOKEN)))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the app did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}/#token={TOKEN}"
    finally:
        server.should_exit = True
        thread.join(10)


def test_page_sends_the_token_from_the_address(token_url: str, tmp_path: Path) -> None:
    out = drive(token_url, tmp_path, "What is the weather in Paris?")
    assert out["requests"] == ["GET /api/agents 200", "POST /api/chat/demo 200"]
    assert out["consoleErrors"] == []
    assert "Paris" in out["turns"][0]["text"]

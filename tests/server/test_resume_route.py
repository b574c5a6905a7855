"""Resumable chat responses: `chat_route(stream_store=...)` and `resume_route`, on a live server
(uvicorn in a thread), with httpx and the real AI SDK client (``resumeStream()``)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request

from agentstream._abort import AbortError
from agentstream.agent import Agent
from agentstream.resumable import MemoryStreamStore
from agentstream.server import AuthError, RequestGuard, chat_route, resume_route, stop_route
from tests import _services
from tests.ai_sdk._support import require_clients
from tests.server.test_chat_route import _free_port

try:
    from agentstream import Mastra  # type: ignore[attr-defined]
except ImportError:
    from agentstream._mastra import Mastra

USAGE = {"inputTokens": 3, "outputTokens": 2, "totalTokens": 5}
FIRST = ["Sunny ", "in "]
REST = ["Berlin ", "today."]
ANSWER = "".join(FIRST + REST)


class GatedModel:
    """Streams ``FIRST``, waits until ``gate`` is set (from any thread), then streams ``REST``; an
    abort ends the wait."""

    specification_version = "v2"
    provider = "test"
    model_id = "gated"

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.signals: list[Any] = []

    def do_stream(self, options: Any) -> AsyncIterator[dict[str, Any]]:
        self.signals.append(options.get("abort_signal"))
        return self._play(options.get("abort_signal"))

    async def _play(self, signal: Any = None) -> AsyncIterator[dict[str, Any]]:
        yield {"type": "stream-start", "warnings": []}
        yield {"type": "text-start", "id": "t1"}
        for delta in FIRST:
            yield {"type": "text-delta", "id": "t1", "delta": delta}
        # The abort signal ends the wait, as it ends a provider's request.
        for _ in range(6000):
            if self.gate.is_set():
                break
            if signal is not None and signal.aborted:
                raise AbortError("the request was aborted")
            await asyncio.sleep(0.01)
        else:
            raise TimeoutError("the test never opened the gate")
        for delta in REST:
            yield {"type": "text-delta", "id": "t1", "delta": delta}
        yield {"type": "text-end", "id": "t1"}
        yield {"type": "finish", "finishReason": "stop", "usage": USAGE}


class OpeningStore(MemoryStreamStore):
    """Opens the model's gate when the ``open_on``-th reader starts: the resuming client is
    connected before the answer goes on, without a sleep in the test."""

    def __init__(self, gate: threading.Event, open_on: int = 2) -> None:
        super().__init__()
        self.gate = gate
        self.open_on = open_on
        self.reads = 0

    def _reader(self) -> None:
        self.reads += 1
        if self.reads >= self.open_on:
            self.gate.set()

    def read(self, stream_id: str, *, after: int = 0) -> AsyncIterator[bytes]:
        self._reader()
        return super().read(stream_id, after=after)

    def read_checked(self, stream_id: str, *, after: int = 0) -> AsyncIterator[bytes]:
        self._reader()  # what the routes' readers use
        return super().read_checked(stream_id, after=after)


USERS = {"alice-token": "alice", "bob-token": "bob"}


def auth(request: Request) -> object:
    token = request.headers.get("authorization", "").removeprefix("Bearer ")
    if token not in USERS:
        raise AuthError("unknown token")
    return USERS[token]


@contextlib.contextmanager
def serve(model: GatedModel, store: MemoryStreamStore, guard: RequestGuard | None = None) -> Iterator[str]:
    import uvicorn

    mastra = Mastra(agents={"weather": Agent(id="weather", instructions="Be brief.", model=model)})
    app = Starlette(
        routes=[
            chat_route(mastra, "/api/chat", agent="weather", heartbeat_ms=0, stream_store=store, guard=guard),
            resume_route(store, "/api/chat/{chat_id}/stream", heartbeat_ms=0, guard=guard),
            stop_route(store, "/api/chat/{chat_id}/stream", guard=guard),
        ]
    )
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.time() + 10
    while not server.started and time.time() < deadline:
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}/api/chat"
    finally:
        model.gate.set()
        server.should_exit = True
        thread.join(5)


def chat_body(chat_id: str = "chat-1") -> dict[str, Any]:
    user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Weather in Berlin?"}]}
    return {"id": chat_id, "messages": [user], "trigger": "submit-message"}


def start_and_leave(client: httpx.Client, url: str, headers: dict[str, str] | None = None) -> None:
    """POST a chat and hang up after the first words (a reload)."""
    with client.stream("POST", url, json=chat_body(), headers=headers) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if "text-delta" in line:
                return
    raise AssertionError("the answer never started")


def events(text: str) -> list[Any]:
    out = []
    for line in text.splitlines():
        if line.startswith("data: "):
            data = line.removeprefix("data: ")
            out.append(data if data == "[DONE]" else json.loads(data))
    return out


def text_of(chunks: list[Any]) -> str:
    return "".join(c["delta"] for c in chunks if isinstance(c, dict) and c.get("type") == "text-delta")


def test_a_reload_does_not_stop_the_run_and_the_resume_replays_it_to_the_end() -> None:
    model = GatedModel()
    store = OpeningStore(model.gate)
    with serve(model, store) as url, httpx.Client(timeout=30) as client:
        start_and_leave(client, url)
        resumed = client.get(f"{url}/chat-1/stream")
        assert resumed.status_code == 200
        assert resumed.headers["x-vercel-ai-ui-message-stream"] == "v1"
        chunks = events(resumed.text)
        assert chunks[0]["type"] == "start" and chunks[-1] == "[DONE]"
        assert chunks[-2]["type"] == "finish"
        assert text_of(chunks) == ANSWER  # from the start: the AI SDK client replays it
        assert not model.signals[0].aborted
        # Finished: nothing to resume.
        assert client.get(f"{url}/chat-1/stream").status_code == 204
        # From where the client is: after the first N chunks.
        assert client.get(f"{url}/chat-1/stream?after=2").status_code == 204


def test_after_skips_the_chunks_the_client_has() -> None:
    model = GatedModel()
    store = OpeningStore(model.gate)
    with serve(model, store) as url, httpx.Client(timeout=30) as client:
        start_and_leave(client, url)
        rest = events(client.get(f"{url}/chat-1/stream?after=3").text)
        assert rest[0]["type"] != "start"
        assert text_of(rest).endswith("".join(REST))
        assert rest[-1] == "[DONE]"


def test_nothing_active_is_204_and_a_bad_after_is_400() -> None:
    model = GatedModel()
    with serve(model, MemoryStreamStore()) as url, httpx.Client(timeout=30) as client:
        empty = client.get(f"{url}/never-started/stream")
        assert (empty.status_code, empty.content) == (204, b"")
        bad = client.get(f"{url}/chat-1/stream?after=-1")
        assert bad.status_code == 400
        assert bad.json()["error"]["path"] == "after"


def test_another_user_can_neither_resume_nor_take_over_a_chat() -> None:
    model = GatedModel()
    store = OpeningStore(model.gate)  # opens on the second reader: Bob must never become one
    guard = RequestGuard(auth=auth)
    alice = {"authorization": "Bearer alice-token"}
    bob = {"authorization": "Bearer bob-token"}
    with serve(model, store, guard) as url, httpx.Client(timeout=30) as client:
        start_and_leave(client, url, alice)
        # Bob learns the chat id: he gets exactly what a chat with nothing running gives.
        stolen = client.get(f"{url}/chat-1/stream", headers=bob)
        assert (stolen.status_code, stolen.content) == (204, b"")
        assert client.get(f"{url}/chat-1/stream").status_code == 401
        taken = client.post(url, json=chat_body(), headers=bob)
        assert taken.status_code == 403 and taken.json()["error"]["path"] == "id"
        assert "Sunny" not in taken.text
        mine = client.get(f"{url}/chat-1/stream", headers=alice)
        assert mine.status_code == 200 and text_of(events(mine.text)) == ANSWER


def test_without_a_chat_id_the_response_is_not_recorded() -> None:
    model = GatedModel()
    model.gate.set()
    store = MemoryStreamStore()
    with serve(model, store) as url, httpx.Client(timeout=30) as client:
        body = chat_body()
        del body["id"]
        answer = client.post(url, json=body)
        assert text_of(events(answer.text)) == ANSWER
        assert store._active == {} and store._streams == {}


@pytest.mark.parametrize("client", ["v7", "v5"])
def test_the_real_client_resumes_mid_stream(client: str) -> None:
    clients = require_clients()
    model = GatedModel()
    store = OpeningStore(model.gate)
    with serve(model, store) as url, httpx.Client(timeout=30) as http:
        start_and_leave(http, url)
        result = subprocess.run(
            ["node", str(clients / "node-client.mjs"), url, "--resume", "chat-1", "--ai", client, "--strict"],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=clients,
        )
    report = json.loads(result.stdout)
    assert result.returncode == 0, (result.stderr, report["error"], report["checks"])
    assert report["request"]["method"] == "GET"
    assert report["request"]["url"].endswith("/api/chat/chat-1/stream")
    assert report["assistantText"] == ANSWER
    assert report["status"] == "ready"


@contextlib.contextmanager
def page_on(model: GatedModel, store: MemoryStreamStore) -> Iterator[tuple[str, Any]]:
    """A server for ``model`` and ``browser_check(*options)``, which drives the real `useChat` page
    against it in headless Chromium (the run ends with one line without chromium or the built page)."""
    clients = require_clients()
    _services.require("usechat-page")
    page_port = _free_port()  # the page has its own origin, which the server must allow
    guard = RequestGuard(allowed_origins=[f"http://127.0.0.1:{page_port}"])
    with serve(model, store, guard) as url, tempfile.TemporaryDirectory() as tmp:

        def browser_check(*options: str) -> dict[str, Any]:
            command = [
                "node",
                str(clients / "browser-check.mjs"),
                "--backend",
                url,
                "--page-port",
                str(page_port),
            ]
            command += ["--screenshot", f"{tmp}/p.png", "--prompt", "Weather in Berlin?", *options]
            env = {**os.environ, "AGENTSTREAM_CHROMIUM": str(_services.chromium_path())}
            result = subprocess.run(
                command, capture_output=True, text=True, timeout=180, cwd=clients, env=env
            )
            report: dict[str, Any] = json.loads(result.stdout)
            assert result.returncode == 0, (result.stderr[-2000:], report)
            return report

        yield url, browser_check


def test_headless_chromium_reloads_mid_answer_and_the_answer_completes() -> None:
    model = GatedModel()
    store = OpeningStore(model.gate)  # the resume after the reload is the second reader
    with page_on(model, store) as (_, browser_check):
        report = browser_check("--chat", "chat-1", "--reload-mid-answer")
    assert report["turns"][0]["assistantText"] == ANSWER
    assert report["status"] == "ready" and report["pageErrors"] == []
    # Before the reload: a resume that found nothing, then the POST; after it: the resume.
    assert report["requests"] == ["GET 204", "POST 200", "GET 200"]
    assert not model.signals[0].aborted


def test_the_real_usechat_stop_button_stops_the_answer_on_the_server() -> None:
    """The documented pattern on the real `useChat`: Stop calls ``stop()`` and sends ``DELETE`` on
    the chat's stream; the server's run is aborted and nothing is left to resume."""
    model = GatedModel()  # the gate stays shut: only the stop ends this answer
    with page_on(model, MemoryStreamStore()) as (url, browser_check):
        report = browser_check("--chat", "chat-1", "--stop-mid-answer")
        after = httpx.get(f"{url}/chat-1/stream", timeout=30)
    turn = report["turns"][0]
    assert turn["status"] == "ready" and turn["finished"][0]["isAbort"] is True
    assert turn["assistantText"] == "".join(FIRST)
    assert report["requests"] == ["GET 204", "POST 200", "DELETE 204"]
    assert model.signals[0].aborted
    assert after.status_code == 204  # nothing left running to resume

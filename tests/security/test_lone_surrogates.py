"""A lone UTF-16 surrogate in an answer (a model's delta cut inside an emoji) through the whole
chat path (issue 22): the SSE frame, the recorded stream a reload resumes, the SQLite memory
thread, and the next turn, whose history the client sends back as ``JSON.stringify`` wrote it.
It used to end the stream with ``UnicodeEncodeError`` (storage) and break the resume (the
recorded frame did not parse)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
from starlette.applications import Starlette

from agentstream._mastra import Mastra
from agentstream.agent import Agent
from agentstream.chunks import dumps_wellformed
from agentstream.memory import Memory
from agentstream.resumable import MemoryStreamStore
from agentstream.server import chat_route, resume_route, serving_config, stop_route
from agentstream.storage import SQLiteStore
from agentstream.testing import ScriptedModel
from tests.server.test_chat_route import _free_port

USAGE = {"inputTokens": 3, "outputTokens": 2, "totalTokens": 5}
HALVES = "cut \ud83d here \ude00 end"
MEMORY = {"thread": "t-halves", "resource": "r1"}


def _answer(text: str, *, wait: bool) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = [
        {"type": "stream-start", "warnings": []},
        {"type": "text-start", "id": "t"},
        {"type": "text-delta", "id": "t", "delta": text},
    ]
    if wait:
        parts.append({"$waitForAbort": True})
    return [
        *parts,
        {"type": "text-end", "id": "t"},
        {"type": "finish", "finishReason": "stop", "usage": USAGE},
    ]


def _frames(raw: bytes) -> list[Any]:
    out = []
    for frame in raw.split(b"\n\n"):
        if frame.startswith(b"data: ") and frame != b"data: [DONE]":
            out.append(json.loads(frame[6:]))  # the stdlib parser keeps lone halves, as JSON.parse does
    return out


@contextlib.contextmanager
def _serving(app: Starlette) -> Iterator[str]:
    import uvicorn

    port = _free_port()
    server = uvicorn.Server(serving_config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started, "uvicorn did not start"
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


def _until_delta(pieces: Iterator[bytes]) -> bytes:
    seen = b""
    for piece in pieces:
        seen += piece
        if b'"text-delta"' in seen:
            return seen
    raise AssertionError(f"the stream ended before its text-delta: {seen!r}")


def test_a_lone_surrogate_streams_resumes_is_stored_and_comes_back(tmp_path: Path) -> None:
    model = ScriptedModel([_answer(HALVES, wait=True), _answer(HALVES + " again", wait=False)])
    agent = Agent(id="a", instructions="x", model=model, memory=Memory())
    mastra = Mastra(agents={"a": agent}, storage=SQLiteStore(tmp_path / "memory.db"))
    store = MemoryStreamStore()
    app = Starlette(
        routes=[
            chat_route(mastra, "/api/chat/{agent_id}", heartbeat_ms=0, stream_store=store, default_options={"memory": MEMORY}),
            resume_route(store, "/api/chat/{chat_id}/stream"),
            stop_route(store, "/api/chat/{chat_id}/stream"),
        ]
    )  # fmt: skip
    user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}
    with _serving(app) as base, httpx.Client(base_url=base, timeout=30) as client:
        with client.stream("POST", "/api/chat/a", json={"id": "c1", "messages": [user]}) as answer:
            assert answer.status_code == 200
            pieces = answer.iter_bytes()
            live = _until_delta(pieces)
            # a reload while the answer waits: the recorded stream replays the same frame
            with client.stream("GET", "/api/chat/c1/stream") as resumed:
                assert resumed.status_code == 200
                replayed = _until_delta(resumed.iter_bytes())
            stopped = client.delete("/api/chat/c1/stream")
            assert stopped.status_code < 300, stopped.text
            live += b"".join(pieces)
        assert b'"delta":"cut \\ud83d here \\ude00 end"' in live
        assert [f["delta"] for f in _frames(replayed) if f.get("type") == "text-delta"] == [HALVES]
        # the next turn: useChat sends the history back, the half spelled as JSON.stringify does
        history = [user, {"id": "m1", "role": "assistant", "parts": [{"type": "text", "text": HALVES}]}]
        history.append({"id": "u2", "role": "user", "parts": [{"type": "text", "text": "again"}]})
        body = dumps_wellformed({"id": "c2", "messages": history})
        assert b"\\ud83d" in body
        second = client.post("/api/chat/a", content=body, headers={"content-type": "application/json"})
        assert second.status_code == 200, second.text
        assert [f["type"] for f in _frames(second.content)][-1] == "finish"
    assert "\\ud83d here \\ude00" in json.dumps(model.calls[1].prompt, ensure_ascii=True)
    stored = asyncio.run(_texts(tmp_path / "memory.db"))
    assert HALVES + " again" in stored  # the second answer, kept in the SQLite thread


async def _texts(path: Path) -> list[str]:
    storage = SQLiteStore(path)
    try:
        page = await storage.list_messages(MEMORY["thread"])
        return [p.get("text") for m in page.messages for p in m.content["parts"] if isinstance(p, dict)]
    finally:
        await storage.close()

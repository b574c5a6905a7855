"""Disconnect storms against a real uvicorn server on 127.0.0.1 leave no task and no stuck run.

200 clients read one SSE frame and reset the connection, three rounds, with a 20 ms heartbeat so
heartbeats are being sent while the clients vanish. Afterwards the server's event loop holds
exactly the tasks it held before, every model call was aborted, and the server still answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import Iterator

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from agentstream.server import chat_route

from . import _storm

CLIENTS = 200
ROUNDS = 3


async def _tasks(_: Request) -> JSONResponse:
    # Every task of the server's loop except the one answering this request.
    return JSONResponse({"tasks": len(asyncio.all_tasks()) - 1})


@contextlib.contextmanager
def _server() -> Iterator[int]:
    import uvicorn

    app = Starlette(
        routes=[
            Route("/debug/tasks", _tasks),
            chat_route(_storm.mastra, "/api/chat/{agent_id}", heartbeat_ms=20),
        ]
    )
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="critical", backlog=1024)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started, "uvicorn did not start"
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(10)


def _settled(client: httpx.Client, baseline: int) -> int:
    """The server's task count once it is back to ``baseline`` (or after a generous 30 s)."""
    deadline = time.monotonic() + 30
    while True:
        count = int(client.get("/debug/tasks").json()["tasks"])
        if count <= baseline and _storm.hanging.aborted == _storm.hanging.started:
            return count
        if time.monotonic() > deadline:
            return count
        time.sleep(0.1)


def test_disconnect_storm_leaves_no_task() -> None:
    with _server() as port, httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
        baseline = int(client.get("/debug/tasks").json()["tasks"])
        for _ in range(ROUNDS):
            got = asyncio.run(_storm.storm(port, "/api/chat/hang", CLIENTS))
            assert got == CLIENTS, f"only {got} of {CLIENTS} clients got a first frame"
            assert _settled(client, baseline) == baseline
        assert _storm.hanging.started == CLIENTS * ROUNDS
        assert _storm.hanging.aborted == _storm.hanging.started
        answer = client.post("/api/chat/echo", json=_storm.BODY_JSON)
        assert answer.status_code == 200 and '"delta":"pong"' in answer.text
        assert answer.text.endswith("data: [DONE]\n\n")

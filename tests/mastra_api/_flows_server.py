"""A real HTTP server (uvicorn, in a thread) answering the Mastra API's routes for the
workflows, memory and observability tests, with two users behind bearer tokens."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request

from agentstream._mastra import Mastra
from agentstream.mastra_api import mastra_api_routes
from agentstream.server import AuthError, RequestGuard

USERS = {"alice-token": "alice", "bob-token": "bob"}
ALICE = {"authorization": "Bearer alice-token"}
BOB = {"authorization": "Bearer bob-token"}


def auth(request: Request) -> object:
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    user = USERS.get(token.strip()) if scheme.lower() == "bearer" else None
    if user is None:
        raise AuthError("missing or unknown bearer token")
    return user


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextlib.contextmanager
def serve(mastra: Mastra, *, guard: RequestGuard | None = None, **options: Any) -> Iterator[str]:
    """``mastra_api_routes(mastra, ...)`` served on 127.0.0.1; yields the base URL (no ``/api``)."""
    import uvicorn

    app = Starlette(routes=mastra_api_routes(mastra, guard=guard, **options))
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.time() + 10
    while not server.started and time.time() < deadline:
        time.sleep(0.02)
    assert server.started, "uvicorn did not start"
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


def records(body: bytes) -> list[dict[str, Any]]:
    """The chunks of a Mastra workflow stream (JSON records each ended by ``\\x1e``)."""
    import json

    assert body == b"" or body.endswith(b"\x1e"), body[-80:]
    return [json.loads(part) for part in body.split(b"\x1e") if part]

"""A disconnect storm: many clients that read one SSE frame and then reset the connection.

Used by the in-process storm test (task count) and the ``agentstream serve`` subprocess test (RSS,
SIGTERM), both on 127.0.0.1. Also the app they serve: an agent whose model sends one word and then
waits for the abort signal (``hang``), so every stream stays open until its client goes away, and
one that answers at once (``echo``).
"""

from __future__ import annotations

import asyncio
import json
import socket
import struct
from collections.abc import AsyncIterator
from typing import Any

from agentstream._mastra import Mastra
from agentstream.agent import Agent

USAGE = {"inputTokens": 3, "outputTokens": 1, "totalTokens": 4}


class HangingModel:
    """Streams one text-delta, then holds the stream until the call is aborted; counts calls."""

    specification_version = "v2"
    provider = "test"
    model_id = "hang"

    def __init__(self) -> None:
        self.started = 0
        self.aborted = 0

    def do_stream(self, options: Any) -> AsyncIterator[dict[str, Any]]:
        return self._play(options["abort_signal"])

    async def _play(self, signal: Any) -> AsyncIterator[dict[str, Any]]:
        self.started += 1
        yield {"type": "stream-start", "warnings": []}
        yield {"type": "text-start", "id": "t1"}
        yield {"type": "text-delta", "id": "t1", "delta": "one "}
        try:
            reason = await signal.wait()
        finally:
            self.aborted += 1
        raise reason if isinstance(reason, BaseException) else RuntimeError(f"aborted: {reason!r}")


class EchoModel:
    """Answers ``pong`` at once."""

    specification_version = "v2"
    provider = "test"
    model_id = "echo"

    def do_stream(self, options: Any) -> AsyncIterator[dict[str, Any]]:
        return self._play()

    async def _play(self) -> AsyncIterator[dict[str, Any]]:
        yield {"type": "stream-start", "warnings": []}
        yield {"type": "text-start", "id": "t1"}
        yield {"type": "text-delta", "id": "t1", "delta": "pong"}
        yield {"type": "text-end", "id": "t1"}
        yield {"type": "finish", "finishReason": "stop", "usage": USAGE}


hanging = HangingModel()
mastra = Mastra(
    agents={
        "hang": Agent(id="hang", instructions="Hang.", model=hanging),
        "echo": Agent(id="echo", instructions="Echo.", model=EchoModel()),
    }
)

BODY_JSON: dict[str, Any] = {
    "id": "c1",
    "trigger": "submit-message",
    "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}],
}
BODY = json.dumps(BODY_JSON).encode()


def request_bytes(port: int, path: str) -> bytes:
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(BODY)}\r\n\r\n"
    )
    return head.encode() + BODY


async def _one(port: int, path: str) -> bool:
    """Send a chat request, read up to the first ``data:`` frame, then reset. Whether a frame came."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    got = False
    try:
        writer.write(request_bytes(port, path))
        await writer.drain()
        buffer = b""
        while b"\r\n\r\n" not in buffer or b"data: " not in buffer.split(b"\r\n\r\n", 1)[1]:
            chunk = await asyncio.wait_for(reader.read(4096), 30)
            if not chunk:
                break
            buffer += chunk
        got = b"data: " in buffer
    finally:
        sock = writer.get_extra_info("socket")
        # SO_LINGER 0: close() sends RST, as a browser tab that is killed does.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.transport.abort()
    return got


async def storm(port: int, path: str, clients: int) -> int:
    """``clients`` concurrent read-one-frame-and-reset requests; how many got their frame."""
    results = await asyncio.gather(*(_one(port, path) for _ in range(clients)), return_exceptions=True)
    return sum(1 for r in results if r is True)

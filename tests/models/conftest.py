"""A real loopback HTTP/1.1 server that replays recorded provider responses.

Each response body is sent with chunked transfer encoding, one SSE event (``\\n\\n``-separated) per
chunk with a drain after each write, so the client sees a genuinely incremental stream.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

RECORDINGS = Path(__file__).resolve().parents[1] / "data" / "provider-recordings"
SNAPSHOTS = RECORDINGS.parent / "provider-snapshots"
"""Regression snapshots: the collapsed parts (``snapshot``) our providers produced from each recording,
reviewed by eye (our own output, not the provider's; `test_recorded_facts.py` checks the facts the
recordings themselves show)."""
API_KEY = "sk-test-SECRET-key-0123456789"


def load(name: str) -> dict[str, Any]:
    return json.loads((RECORDINGS / name).read_text(encoding="utf-8"))


@dataclass
class Reply:
    status: int = 200
    content_type: str = "text/event-stream"
    body: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    cut_after_events: int | None = None
    """Close the socket (no terminating chunk) after this many events."""
    hang_after_events: int | None = None
    """Stop writing (keep the socket open) after this many events."""
    frames: list[bytes] | None = None
    """A binary body (an AWS event stream), one frame per write; ``body`` is then ignored."""


@dataclass
class Received:
    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: Any


def _body(raw: bytes, content_type: str) -> Any:
    """A JSON request body parsed; any other (an OAuth token request's form) as text."""
    if not raw:
        return None
    return json.loads(raw) if "json" in content_type or not content_type else raw.decode()


class ReplayServer:
    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.received: list[Received] = []
        self.expected: list[dict[str, Any]] = []
        self._server: asyncio.Server | None = None
        self.port = 0
        self.hung = asyncio.Event()
        self.closed_by_client = asyncio.Event()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def queue_recording(self, recording: dict[str, Any]) -> None:
        for it in recording["interactions"]:
            r = it["response"]
            self.replies.append(Reply(status=r["status"], content_type=r["contentType"], body=r["body"]))
            self.expected.append(it["request"])

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()
            return
        lines = head.decode("latin-1").split("\r\n")
        method, target, _ = lines[0].split(" ", 2)
        headers = {}
        for line in lines[1:]:
            if ":" in line:
                k, v = line.split(":", 1)
                headers[k.strip().lower()] = v.strip()
        raw = await reader.readexactly(int(headers.get("content-length", "0")))
        parts = urlsplit(target)
        self.received.append(
            Received(method, parts.path, parts.query, headers, _body(raw, headers.get("content-type", "")))
        )
        reply = self.replies.pop(0)
        status_line = f"HTTP/1.1 {reply.status} {'OK' if reply.status < 400 else 'Error'}\r\n"
        extra = "".join(f"{k}: {v}\r\n" for k, v in reply.headers.items())
        writer.write(
            (
                status_line
                + f"content-type: {reply.content_type}\r\n"
                + extra
                + "transfer-encoding: chunked\r\nconnection: close\r\n\r\n"
            ).encode()
        )
        sep = (
            "\r\n\r\n" if "\r\n\r\n" in reply.body else "\n\n"
        )  # Gemini and Vertex end events with CRLF CRLF
        events: list[str | bytes] = (
            list(reply.frames)
            if reply.frames is not None
            else [e + sep for e in reply.body.split(sep) if e]
            if "event-stream" in reply.content_type
            else [reply.body]
        )
        try:
            for n, event in enumerate(events):
                if reply.cut_after_events is not None and n == reply.cut_after_events:
                    writer.transport.abort()
                    return
                if reply.hang_after_events is not None and n == reply.hang_after_events:
                    self.hung.set()
                    await reader.read()  # returns when the client closes the connection
                    self.closed_by_client.set()
                    writer.close()
                    return
                data = event if isinstance(event, bytes) else event.encode("utf-8")
                writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                await writer.drain()
                await asyncio.sleep(0)
            writer.write(b"0\r\n\r\n")
            await writer.drain()
        except ConnectionError:
            return
        writer.close()


@pytest.fixture
async def server() -> AsyncIterator[ReplayServer]:
    srv = ReplayServer()
    await srv.start()
    try:
        yield srv
    finally:
        await srv.stop()


def collapse(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Merge runs of ``*-delta`` parts with the same id into one (``n`` = how many were merged).

    Only deltas with equal ``providerMetadata`` merge, so signature deltas stay visible.
    Strings longer than 100 characters are shortened to ``prefix…(length)`` (``short``).
    """
    out: list[dict[str, Any]] = []
    for part in parts:
        kind = part["type"]
        if kind.endswith("-delta"):
            last = out[-1] if out else None
            if (
                last is not None
                and last["type"] == kind
                and last.get("id") == part["id"]
                and "n" in last
                and last.get("providerMetadata") == part.get("providerMetadata")
            ):
                last["delta"] += part["delta"]
                last["n"] += 1
                continue
            out.append({**part, "n": 1})
        else:
            out.append(part)
    return out


def recorded_events(recording: dict[str, Any], turn: int = 0) -> list[dict[str, Any]]:
    """The JSON payloads of a recorded SSE body, parsed independently of the code under test."""
    out = []
    for block in recording["interactions"][turn]["response"]["body"].split("\n\n"):
        for line in block.split("\n"):
            if line.startswith("data:") and line[5:].strip() != "[DONE]":
                out.append(json.loads(line[5:]))
    return out


def counter_ids() -> Any:
    n = iter(range(1000))
    return lambda: f"id-{next(n)}"


def short(value: Any) -> Any:
    """Shorten long strings recursively to ``first 40 chars…(length)`` for readable snapshots."""
    if isinstance(value, str):
        return value if len(value) <= 100 else f"{value[:40]}…({len(value)})"
    if isinstance(value, dict):
        return {k: short(v) for k, v in value.items()}
    if isinstance(value, list):
        return [short(v) for v in value]
    if isinstance(value, BaseException):
        return f"{type(value).__name__}: {value}"
    return value


def snapshot(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [short(p) for p in collapse(parts)]

"""The uvicorn protocols `serving_config` runs: uvicorn's h11 and httptools protocols with the head
and body deadlines, the connection cap and the read-ahead limits of `ConnectionLimits` (module docs
of ``_connections``).

Both share `_Limited` (the cap, the deadlines, what a deadline answers); each tells it which phase
the client is in from its own parser: h11's ``their_state`` after each read and response, the
httptools parser's callbacks as they fire. httptools is the default where it is installed: it
writes a chunk of a streamed body with a few lines of Python where h11 runs its state machine and
writers per chunk (docs/decisions/issue-29-send-path.md), and a paced answer is one chunk per word.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
from typing import Any, ClassVar

__all__ = ["h11_protocol_class", "httptools_available", "httptools_protocol_class"]

# Bytes read from a socket at a time, and of a body ahead of the app reading it.
_READ_SIZE = 64 * 1024
_READ_AHEAD = 16 * 1024
# How long a connection closed under a client still sending stays open after the answer, for the
# client to read the answer (`_Limited._close_unread`).
_LINGER_S = 1.0


def raw_response(status: int, reason: str, message: str, extra: str = "") -> bytes:
    body = json.dumps({"error": {"name": reason.replace(" ", ""), "message": message}}).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\nconnection: close\r\n"
        f"{extra}content-length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


def httptools_available() -> bool:
    return importlib.util.find_spec("httptools") is not None


class _Limited:
    """The limits, on top of a uvicorn protocol (a mixin: ``super()`` is uvicorn's class).

    ``_phase``: ``""`` (new), ``"head"`` (a head is due: its deadline runs), ``"idle"`` (kept
    alive after a response: uvicorn's keep-alive timeout), ``"body"`` (its deadline runs) or
    ``"busy"`` (the request is read; the app answers) or ``"linger"`` (answered and closing while
    the client may still send: `_close_unread`).
    """

    limits: ClassVar[Any]  # ConnectionLimits
    cap: ClassVar[int]
    # Connections waiting for a request head, the longest-waiting first (dicts keep order).
    waiting: ClassVar[dict[Any, None]]

    # uvicorn's protocol attributes this mixin uses
    connections: set[Any]
    transport: asyncio.Transport
    loop: asyncio.AbstractEventLoop
    cycle: Any
    flow: Any

    def _init_limits(self) -> None:
        self._deadline: asyncio.TimerHandle | None = None
        self._phase = ""
        self._refused = False
        self._head_bytes = False

    def connection_made(self, transport: asyncio.Transport) -> None:
        if len(self.connections) >= self.cap:
            victim = next(iter(self.waiting), None)
            if victim is None:
                self._refused = True
                message = (
                    f"the server is at its connection limit ({self.cap} connections, every one "
                    "busy with a request); retry shortly"
                )
                transport.write(raw_response(503, "Service Unavailable", message, "retry-after: 1\r\n"))
                transport.close()
                return
            victim.evict()
        super().connection_made(transport)  # type: ignore[misc]
        if isinstance(getattr(transport, "max_size", None), int):
            # asyncio reads up to 256 KiB at a time; hundreds of slow bodies make that count.
            transport.max_size = min(transport.max_size, _READ_SIZE)  # type: ignore[attr-defined]

    def connection_lost(self, exc: Exception | None) -> None:
        if self._refused:
            return
        self._disarm()
        self.waiting.pop(self, None)
        super().connection_lost(exc)  # type: ignore[misc]

    def evict(self) -> None:
        """Close this connection at once (it was waiting for a head; a newcomer takes its place)."""
        self.waiting.pop(self, None)
        self._disarm()
        self.transport.abort()

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _arm(self, phase: str, seconds: float) -> None:
        self._disarm()
        self._phase = phase
        self._deadline = self.loop.call_later(seconds, self._expired, phase)

    def _await_head(self, head_bytes: bool) -> None:
        """A head is due: from now if the connection is new or bytes of it are here, else (kept
        alive) whenever it starts; the connection joins the end of the eviction queue."""
        self._head_bytes = head_bytes
        if self._phase == "" or head_bytes:
            self._arm("head", self.limits.header_timeout_s)
        else:  # kept alive after a response: uvicorn's keep-alive timeout closes it
            self._disarm()
            self._phase = "idle"
        self.waiting.pop(self, None)
        self.waiting[self] = None

    def _read_body(self) -> None:
        self.waiting.pop(self, None)
        if self._phase != "body":
            self._arm("body", self.limits.body_timeout_s)

    def _busy(self) -> None:
        self.waiting.pop(self, None)
        self._disarm()
        self._phase = "busy"

    def _expired(self, phase: str) -> None:
        self._deadline = None
        if self.transport.is_closing() or phase != self._phase:
            return
        if phase == "head" and self._head_bytes:
            message = f"the request head did not arrive within {self.limits.header_timeout_s:g} s"
            self.transport.write(raw_response(408, "Request Timeout", message))
        elif phase == "body" and (self.cycle is None or not self.cycle.response_started):
            message = f"the request body did not arrive within {self.limits.body_timeout_s:g} s"
            self.transport.write(raw_response(408, "Request Timeout", message))
        self._close_unread()

    def _close_unread(self) -> None:
        """Close a connection whose client may still be sending (a head or body past its
        deadline, a body nobody will read after a 413 or 401). A close with bytes unread makes
        the kernel reset the connection, and a client that had not read the answer yet loses it
        (its kernel drops what it had received): so the answer is followed by an EOF, reading
        stops (what the client sends waits in its own buffers, at no cost here), and the
        connection is closed `_LINGER_S` later (nginx's lingering close, without the reading)."""
        self.waiting.pop(self, None)
        self._disarm()
        self._phase = "linger"
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self.flow.pause_reading()
        self._deadline = self.loop.call_later(_LINGER_S, self._close)

    def _lingering(self) -> bool:
        """Whether what was read is to be dropped: it came after `_close_unread`."""
        return self._phase == "linger"

    def _close(self) -> None:
        self._disarm()
        self.transport.close()
        # A client that reads nothing must not keep the socket open by leaving our answer unsent.
        self.loop.call_later(1.0, self.transport.abort)


def h11_protocol_class() -> type[Any]:
    # Imported here: uvicorn is the ``server`` extra, not needed to build routes.
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class LimitedH11(_Limited, H11Protocol):
        """uvicorn's h11 protocol with head and body deadlines and a connection cap."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._init_limits()

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            if not self._refused:
                self._track()

        def data_received(self, data: bytes) -> None:
            if self._lingering():
                return
            if self._phase == "idle":  # a kept-alive connection's next head: its deadline from now
                self._arm("head", self.limits.header_timeout_s)
            if self._phase == "head":
                self._head_bytes = True
            super().data_received(data)
            if self.transport.is_closing():
                return
            self._track()
            if self._phase == "body" and self.cycle is not None and len(self.cycle.body) > _READ_AHEAD:
                # uvicorn reads 64 KiB of body ahead of the app; less, until the app asks for it.
                self.flow.pause_reading()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if self.transport.is_closing():
                return
            if self.conn.their_state is h11.SEND_BODY:
                # Answered before the body was read (413, 401...): reading the rest is for nothing.
                self._close_unread()
                return
            self._track()

        def _track(self) -> None:
            """Arm the deadline of the phase the client is in: the head, the body, or none."""
            state = self.conn.their_state
            if state is h11.IDLE:
                if self._phase not in ("head", "idle"):
                    self._await_head(bool(self.conn.trailing_data[0]))
            elif state is h11.SEND_BODY:
                self._read_body()
            else:
                self._busy()

    return LimitedH11


def httptools_protocol_class() -> type[Any]:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    class LimitedHttpTools(_Limited, HttpToolsProtocol):
        """uvicorn's httptools protocol with the same limits.

        llhttp parses everything it is fed, a request pipelined behind one being answered
        included, and buffers no head (it calls back as it parses): the head size limit is
        counted here, the bytes received while a head is being read, as h11's
        ``max_incomplete_event_size`` bounds an incomplete head. A head pipelined behind a request
        being answered gets its deadline when that answer ends (h11 reads it only then).
        """

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._init_limits()
            self._in_head = False  # the parser is inside a request head
            self._head_size = 0

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            if not self._refused:
                self._await_head(False)

        def data_received(self, data: bytes) -> None:
            if self._lingering():
                return
            if self._phase == "idle":  # a kept-alive connection's next head: its deadline from now
                self._arm("head", self.limits.header_timeout_s)
            if self._phase == "head":
                self._head_bytes = True
            if self._phase == "head" or self._in_head:
                self._head_size += len(data)
            super().data_received(data)
            if self.transport.is_closing():
                return
            if self._in_head and self._head_size > self.limits.max_header_bytes:
                self.waiting.pop(self, None)
                self._disarm()
                if self._phase == "head":
                    self.send_400_response("Invalid HTTP request received.")
                else:  # behind a request being answered: no answer of its own
                    self.transport.close()
            elif self._phase == "body" and len(self.cycle.body) > _READ_AHEAD:
                # uvicorn reads 64 KiB of body ahead of the app; less, until the app asks for it.
                self.flow.pause_reading()

        # Parser callbacks, called from ``feed_data``.
        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._in_head = True

        def on_headers_complete(self) -> None:
            super().on_headers_complete()
            self._in_head = False
            self._head_size = 0
            if self._phase == "head":  # else pipelined: uvicorn queues it, timed when it starts
                self._read_body()

        def on_message_complete(self) -> None:
            super().on_message_complete()
            if self._phase == "body":
                self._busy()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if self.transport.is_closing():
                return
            latest = self.cycle  # the last request parsed: the one answered, or a pipelined one
            if not latest.response_complete:  # uvicorn started the pipelined request
                if latest.more_body:
                    self._read_body()
                else:
                    self._busy()
            elif self._in_head:  # a next head began while this one was answered
                self._await_head(True)
            elif latest.more_body:
                # Answered before the body was read (413, 401...): reading the rest is for nothing.
                self._close_unread()
            else:
                self._await_head(False)

    return LimitedHttpTools

"""Connection limits that hold without a reverse proxy: `ConnectionLimits` and `serving_config`,
the uvicorn configuration ``agentstream serve`` runs with.

uvicorn's h11 protocol arms no timer on a new connection (only after a response, and any byte
cancels it), so an idle socket, a request head sent one line every few seconds (slowloris) or a
body that never ends holds a connection, and its file descriptor, for good. `LimitedH11Protocol`
adds what is missing:

* a *head deadline*: the request head (line and headers) must be complete within
  ``header_timeout_s`` of the connection opening (on a kept-alive connection, of the next head's
  first byte); bytes arriving do not extend it. A connection that sent part of a head gets a 408,
  a new one that sent nothing is closed. A kept-alive connection waiting for its next request is
  closed by the keep-alive timeout (``keep_alive_s``) alone: a deadline counted from the end of a
  response races a busy client that reads that response late and then reuses the connection at
  once (its request meets a closed socket: an ``httpx.ReadError``, docs/decisions/durable.md);
* a *body deadline*: the whole body within ``body_timeout_s`` of its head (a 408 if nothing was
  answered yet, then the connection is closed);
* a *connection cap* (``max_connections``, by default the process's open-file limit less a
  reserve): at the cap, a new connection closes the connection that has waited longest for a
  request head (idle or slow ones, which a legitimate client does not hold for long); when every
  connection is busy with a request, the newcomer is answered a JSON 503 and closed;
* a response that ends while the client is still sending the body (a 413 or 401 before the body
  was read) closes the connection instead of reading the rest of the body for nothing.

Before auth is known a request buffers at most ``max_header_bytes`` of head (h11) and 16 KiB of
body: reading pauses there until the app asks for more (uvicorn alone reads 64 KiB ahead), and a
socket is read 64 KiB at a time (asyncio: 256 KiB). `RequestGuard.max_buffered_bytes` caps the
bodies being read after auth, in total.
"""

from __future__ import annotations

import asyncio
import json
import math
import resource
from dataclasses import dataclass
from typing import Any, ClassVar

__all__ = ["ConnectionLimits", "LimitedH11Protocol", "default_max_connections", "serving_config"]

# File descriptors kept for everything else the server opens (storage, Redis, logs, models' HTTP).
_FD_RESERVE = 128
# Bytes read from a socket at a time, and of a body ahead of the app reading it.
_READ_SIZE = 64 * 1024
_READ_AHEAD = 16 * 1024


def default_max_connections() -> int:
    """The open-file limit (``RLIMIT_NOFILE``, soft) less a reserve for the server's own files."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 10_000
    return max(8, soft - _FD_RESERVE if soft >= 4 * _FD_RESERVE else soft * 3 // 4)


def _positive(name: str, value: float) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ValueError(f"ConnectionLimits {name} must be a finite number of seconds > 0, got {value!r}")
    return float(value)


@dataclass(frozen=True, kw_only=True)
class ConnectionLimits:
    """What one connection may hold, and how many there may be (see the module docs).

    * ``header_timeout_s`` (10): the request head must be complete this long after the connection
      opened (a kept-alive connection: after the head's first byte).
    * ``body_timeout_s`` (30): the whole body this long after its head (1 MiB at 35 KB/s).
    * ``keep_alive_s`` (20): an idle keep-alive connection is closed after this; longer than the
      common clients' own idle expiry (httpx, undici: 5 s or less), so a client drops an idle
      connection before the server closes it under its feet.
    * ``max_connections`` (``None``: `default_max_connections`).
    * ``max_header_bytes`` (16 KiB): a request head still incomplete past this many bytes is a 400
      (h11's ``max_incomplete_event_size``: what the server buffers of a head).
    * ``graceful_shutdown_s`` (2): on SIGTERM, open streams get this long, then are cancelled.
    """

    header_timeout_s: float = 10.0
    body_timeout_s: float = 30.0
    keep_alive_s: float = 20.0
    max_connections: int | None = None
    max_header_bytes: int = 16 * 1024
    graceful_shutdown_s: float = 2.0

    def __post_init__(self) -> None:
        for name in ("header_timeout_s", "body_timeout_s", "keep_alive_s", "graceful_shutdown_s"):
            _positive(name, getattr(self, name))
        for name in ("max_connections", "max_header_bytes"):
            value = getattr(self, name)
            if value is None and name == "max_connections":
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"ConnectionLimits {name} must be a positive integer, got {value!r}")

    def connection_cap(self) -> int:
        """``max_connections``, or the default derived from the open-file limit."""
        return self.max_connections if self.max_connections is not None else default_max_connections()


def _raw_response(status: int, reason: str, message: str, extra: str = "") -> bytes:
    body = json.dumps({"error": {"name": reason.replace(" ", ""), "message": message}}).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\nconnection: close\r\n"
        f"{extra}content-length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


def _make_protocol_class() -> type[Any]:
    # Imported here: uvicorn is the ``serving`` extra, not needed to build routes.
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class Limited(H11Protocol):
        """uvicorn's h11 protocol with head and body deadlines and a connection cap."""

        limits: ClassVar[ConnectionLimits]
        cap: ClassVar[int]
        # Connections waiting for a request head, the longest-waiting first (dicts keep order).
        waiting: ClassVar[dict[Any, None]]

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._deadline: asyncio.TimerHandle | None = None
            self._phase = ""
            self._refused = False
            self._head_bytes = False

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            if len(self.connections) >= self.cap:
                victim = next(iter(self.waiting), None)
                if victim is None:
                    self._refused = True
                    message = (
                        f"the server is at its connection limit ({self.cap} connections, every one "
                        "busy with a request); retry shortly"
                    )
                    transport.write(_raw_response(503, "Service Unavailable", message, "retry-after: 1\r\n"))
                    transport.close()
                    return
                victim.evict()
            super().connection_made(transport)
            if isinstance(getattr(transport, "max_size", None), int):
                # asyncio reads up to 256 KiB at a time; hundreds of slow bodies make that count.
                transport.max_size = min(transport.max_size, _READ_SIZE)  # type: ignore[attr-defined]
            self._track()

        def connection_lost(self, exc: Exception | None) -> None:
            if self._refused:
                return
            self._disarm()
            self.waiting.pop(self, None)
            super().connection_lost(exc)

        def evict(self) -> None:
            """Close this connection at once (it was waiting for a head; a newcomer takes its place)."""
            self.waiting.pop(self, None)
            self._disarm()
            self.transport.abort()

        def data_received(self, data: bytes) -> None:
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
                self.transport.close()
                return
            self._track()

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _arm(self, phase: str, seconds: float) -> None:
            self._disarm()
            self._phase = phase
            self._deadline = self.loop.call_later(seconds, self._expired, phase)

        def _track(self) -> None:
            """Arm the deadline of the phase the client is in: the head, the body, or none."""
            state = self.conn.their_state
            if state is h11.IDLE:
                if self._phase not in ("head", "idle"):
                    self._head_bytes = bool(self.conn.trailing_data[0])
                    if self._phase == "" or self._head_bytes:
                        self._arm("head", self.limits.header_timeout_s)
                    else:  # kept alive after a response: uvicorn's keep-alive timeout closes it
                        self._disarm()
                        self._phase = "idle"
                    self.waiting.pop(self, None)
                    self.waiting[self] = None
            elif state is h11.SEND_BODY:
                self.waiting.pop(self, None)
                if self._phase != "body":
                    self._arm("body", self.limits.body_timeout_s)
            else:
                self.waiting.pop(self, None)
                self._disarm()
                self._phase = "busy"

        def _expired(self, phase: str) -> None:
            self._deadline = None
            if self.transport.is_closing() or phase != self._phase:
                return
            self.waiting.pop(self, None)
            if phase == "head" and self._head_bytes:
                message = f"the request head did not arrive within {self.limits.header_timeout_s:g} s"
                self.transport.write(_raw_response(408, "Request Timeout", message))
            elif phase == "body" and (self.cycle is None or not self.cycle.response_started):
                message = f"the request body did not arrive within {self.limits.body_timeout_s:g} s"
                self.transport.write(_raw_response(408, "Request Timeout", message))
            self.transport.close()
            # A client that reads nothing must not keep the socket open by leaving our 408 unsent.
            self.loop.call_later(1.0, self.transport.abort)

    return Limited


class LimitedH11Protocol:
    """Builds the uvicorn protocol class for a `ConnectionLimits` (one class per server: its
    registry of connections waiting for a head is the server's)."""

    @staticmethod
    def for_limits(limits: ConnectionLimits) -> type[asyncio.Protocol]:
        base = _make_protocol_class()
        cls: type[Any] = type("LimitedH11Protocol", (base,), {})
        cls.limits = limits
        cls.cap = limits.connection_cap()
        cls.waiting = {}
        return cls


def serving_config(app: Any, limits: ConnectionLimits | None = None, **options: Any) -> Any:
    """A ``uvicorn.Config`` serving ``app`` with ``limits`` (default `ConnectionLimits`): the head
    and body deadlines and the connection cap of `LimitedH11Protocol`, uvicorn's keep-alive
    timeout, head size limit and graceful-shutdown grace. ``options`` go to ``uvicorn.Config``
    (``log_level``...)."""
    import uvicorn

    limits = limits or ConnectionLimits()
    settings: dict[str, Any] = {
        "http": LimitedH11Protocol.for_limits(limits),
        "timeout_keep_alive": limits.keep_alive_s,
        "h11_max_incomplete_event_size": limits.max_header_bytes,
        "timeout_graceful_shutdown": limits.graceful_shutdown_s,
        **options,
    }
    return uvicorn.Config(app, **settings)

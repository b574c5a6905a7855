"""Connection limits that hold without a reverse proxy: `ConnectionLimits` and `serving_config`,
the uvicorn configuration ``agentstream serve`` runs with.

uvicorn's h11 protocol arms no timer on a new connection (only after a response, and any byte
cancels it), so an idle socket, a request head sent one line every few seconds (slowloris) or a
body that never ends holds a connection, and its file descriptor, for good. `limited_protocol`
(uvicorn's httptools protocol where httptools is installed, else its h11 one: ``_protocols``) adds
what is missing:

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
  was read) closes the connection instead of reading the rest of the body for nothing: after an
  EOF and a second without reading (as after a 408), so that the client reads the answer before
  the close resets the connection.

Before auth is known a request buffers at most ``max_header_bytes`` of head and 16 KiB of
body: reading pauses there until the app asks for more (uvicorn alone reads 64 KiB ahead), and a
socket is read 64 KiB at a time (asyncio: 256 KiB). `RequestGuard.max_buffered_bytes` caps the
bodies being read after auth, in total.
"""

from __future__ import annotations

import asyncio
import math
import resource
from dataclasses import dataclass
from typing import Any

from ._protocols import h11_protocol_class, httptools_available, httptools_protocol_class

__all__ = ["ConnectionLimits", "default_max_connections", "limited_protocol", "serving_config"]

# File descriptors kept for everything else the server opens (storage, Redis, logs, models' HTTP).
_FD_RESERVE = 128


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


def limited_protocol(limits: ConnectionLimits, http: str = "auto") -> type[asyncio.Protocol]:
    """The uvicorn protocol class enforcing ``limits`` (one class per server: its registry of
    connections waiting for a head is the server's). ``http``: ``"httptools"``, ``"h11"``, or
    ``"auto"`` (httptools where it is installed, as uvicorn's own ``auto``)."""
    if http not in ("auto", "httptools", "h11"):
        raise ValueError(f"http must be 'auto', 'httptools' or 'h11', got {http!r}")
    if http == "auto":
        http = "httptools" if httptools_available() else "h11"
    base = httptools_protocol_class() if http == "httptools" else h11_protocol_class()
    cls: type[Any] = type(base.__name__, (base,), {})
    cls.limits = limits
    cls.cap = limits.connection_cap()
    cls.waiting = {}
    return cls


def serving_config(
    app: Any, limits: ConnectionLimits | None = None, *, http: str = "auto", **options: Any
) -> Any:
    """A ``uvicorn.Config`` serving ``app`` with ``limits`` (default `ConnectionLimits`): the head
    and body deadlines and the connection cap of `limited_protocol` (``http``: its parser, httptools
    where installed, else h11), uvicorn's keep-alive timeout, head size limit and graceful-shutdown
    grace. ``options`` go to ``uvicorn.Config`` (``log_level``...)."""
    import uvicorn

    limits = limits or ConnectionLimits()
    settings: dict[str, Any] = {
        "http": limited_protocol(limits, http),
        "timeout_keep_alive": limits.keep_alive_s,
        "h11_max_incomplete_event_size": limits.max_header_bytes,
        "timeout_graceful_shutdown": limits.graceful_shutdown_s,
        **options,
    }
    return uvicorn.Config(app, **settings)

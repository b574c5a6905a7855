"""``RequestGuard``: what a chat request must pass before an agent runs.

Host and Origin checks (so a web page elsewhere, or a DNS-rebinding one, cannot drive a local
server), CORS preflights when configured, an authentication hook, ``application/json`` only, and a
body size limit enforced while the body streams in. Every refusal is a `ChatRequestError`
with the status to answer and a message naming what was wrong.
"""

from __future__ import annotations

import hmac
import inspect
import ipaddress
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response

from ..ai_sdk import ChatRequestError, parse_json_body
from ._storable import check_storable

__all__ = ["DEFAULT_MAX_BODY_BYTES", "AuthError", "AuthHook", "RequestGuard", "bearer_token_auth"]

DEFAULT_MAX_BODY_BYTES = 1024 * 1024
DEFAULT_MAX_BUFFERED_BYTES = 16 * 1024 * 1024


class _BodyBudget:
    """The bytes of request bodies being read now, for all the routes of one guard: a body that
    would take the total past ``limit`` is refused (503), so many stalled or slow bodies cannot
    make the server hold ``max_body_bytes`` each."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0

    def take(self, size: int) -> bool:
        if self.used + size > self.limit:
            return False
        self.used += size
        return True

    def give(self, size: int) -> None:
        self.used -= size


AuthHook = Callable[[Request], "Awaitable[object] | object"]
"""Receives the request; returns a principal (anything but ``None``) or raises `AuthError`.
Returning ``None`` refuses with 401."""


class AuthError(ChatRequestError):
    """Refuses a request from an `AuthHook`: 401 (not authenticated) or 403 (not allowed)."""

    name = "AuthError"

    def __init__(self, message: str, *, status_code: int = 401) -> None:
        if status_code not in (401, 403):
            raise ValueError(f"AuthError status_code must be 401 or 403, got {status_code}")
        headers = {"www-authenticate": "Bearer"} if status_code == 401 else None
        super().__init__(message, status_code=status_code, headers=headers)


def bearer_token_auth(token: str) -> AuthHook:
    """An `AuthHook` accepting ``Authorization: Bearer <token>`` (compared in constant time)."""
    if not token:
        raise ValueError("bearer_token_auth needs a non-empty token")
    expected = token.encode()

    def check(request: Request) -> object:
        scheme, _, given = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not given:
            raise AuthError("missing bearer token: send the header 'Authorization: Bearer <token>'")
        if not hmac.compare_digest(given.strip().encode(), expected):
            raise AuthError("invalid bearer token")
        return "token"

    return check


def _busy(budget: _BodyBudget) -> ChatRequestError:
    return ChatRequestError(
        f"the server is reading {budget.limit} bytes of request bodies already (max_buffered_bytes); retry shortly",
        status_code=503,
        headers={"retry-after": "1"},
    )


def _host_name(host: str) -> str:
    host = host.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _is_loopback(name: str) -> bool:
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _netloc(value: str) -> str:
    """``host[:port]`` lower-cased, without the default port of http(s)."""
    value = value.strip().lower()
    for default in (":80", ":443"):
        if value.endswith(default):
            return value[: -len(default)]
    return value


def _matches(name: str, pattern: str) -> bool:
    pattern = pattern.lower()
    if pattern.startswith("*."):
        return name.endswith(pattern[1:])
    return pattern in ("*", name)


@dataclass(frozen=True, kw_only=True)
class RequestGuard:
    """Request checks for `chat_route` (all on by default).

    * ``allowed_hosts``: ``Host`` names served (``"*.example.com"`` and ``"*"`` allowed). Default:
      on a loopback bind only loopback names (``localhost``, ``127.0.0.1``, ``[::1]``), which stops
      DNS rebinding; on any other bind every host.
    * ``allowed_origins``: browser origins accepted besides the same origin (``"*"``: any). A
      request without ``Origin`` (curl, a server) passes.
    * ``cors``: answer CORS preflights and add CORS headers for ``allowed_origins``.
    * ``max_body_bytes`` (1 MiB) and ``max_json_depth`` (64): 413 / 400 beyond them.
    * ``max_buffered_bytes`` (16 MiB): the request bodies all routes of this guard are reading at
      once, in total (a declared ``Content-Length`` counts in full from the start); a body that
      does not fit is a 503 with ``Retry-After``. Bodies are only read once ``auth`` passed.
    * ``auth``: an `AuthHook`; its principal is kept in ``request.state.principal``.
    """

    allowed_hosts: Sequence[str] | None = None
    allowed_origins: Sequence[str] = ()
    cors: bool = False
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_json_depth: int = 64
    auth: AuthHook | None = None
    max_buffered_bytes: int = DEFAULT_MAX_BUFFERED_BYTES
    _budget: _BodyBudget = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name in ("max_body_bytes", "max_json_depth", "max_buffered_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"RequestGuard {name} must be a positive integer, got {value!r}")
        if isinstance(self.allowed_hosts, str) or isinstance(self.allowed_origins, str):
            raise TypeError("RequestGuard allowed_hosts / allowed_origins must be lists of strings")
        if self.cors and not self.allowed_origins:
            raise ValueError("RequestGuard cors=True needs allowed_origins (the origins CORS is for)")
        # One budget for every route sharing this guard.
        object.__setattr__(self, "_budget", _BodyBudget(self.max_buffered_bytes))

    def check_host(self, request: Request) -> None:
        """403 unless the ``Host`` header names a served host."""
        host = request.headers.get("host", "")
        name = _host_name(host)
        if self.allowed_hosts is not None:
            if any(_matches(name, pattern) for pattern in self.allowed_hosts):
                return
            hint = "allowed_hosts / --allow-host"
        else:
            server = request.scope.get("server")
            if not server or not _is_loopback(_host_name(str(server[0]))) or _is_loopback(name):
                return
            hint = "this server is bound to a loopback address and answers loopback hosts only; allow more with allowed_hosts / --allow-host"
        raise ChatRequestError(f"Host {host!r} is not allowed ({hint})", status_code=403)

    def origin_allowed(self, request: Request, origin: str) -> bool:
        """Same origin, or one of ``allowed_origins``."""
        normalized = origin.strip().rstrip("/").lower()
        if any(o == "*" or o.rstrip("/").lower() == normalized for o in self.allowed_origins):
            return True
        parts = urlsplit(normalized)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            return False
        return _netloc(parts.netloc) == _netloc(request.headers.get("host", ""))

    def check_origin(self, request: Request) -> None:
        """403 for a browser request from another origin that is not allowed."""
        origin = request.headers.get("origin")
        if origin is not None and not self.origin_allowed(request, origin):
            raise ChatRequestError(
                f"Origin {origin!r} is not allowed (same-origin only; allow more with allowed_origins / --allow-origin)",
                status_code=403,
            )

    def cors_headers(self, request: Request) -> dict[str, str]:
        """``Access-Control-Allow-Origin`` (and ``Vary``) for an allowed cross-origin request."""
        origin = request.headers.get("origin")
        if not self.cors or origin is None or not self.origin_allowed(request, origin):
            return {}
        if "*" in self.allowed_origins:
            return {"access-control-allow-origin": "*"}
        return {"access-control-allow-origin": origin, "vary": "Origin"}

    def preflight(self, request: Request, methods: str = "POST, OPTIONS") -> Response:
        """The answer to ``OPTIONS``: 204 with CORS headers allowing ``methods``, or a refusal (405
        without CORS)."""
        if not self.cors:
            raise ChatRequestError(
                "method OPTIONS is not allowed (CORS is off: configure allowed_origins with cors=True)",
                status_code=405,
                headers={"allow": "POST"},
            )
        self.check_host(request)
        origin = request.headers.get("origin")
        if origin is None or not self.origin_allowed(request, origin):
            raise ChatRequestError(f"CORS preflight from origin {origin!r} is not allowed", status_code=403)
        headers = self.cors_headers(request)
        headers["access-control-allow-methods"] = methods
        headers["access-control-allow-headers"] = request.headers.get(
            "access-control-request-headers", "content-type, authorization"
        )
        headers["access-control-max-age"] = "600"
        return Response(status_code=204, headers=headers)

    async def admit(self, request: Request) -> object | None:
        """Host, origin and auth checks in that order; the principal (``None`` without ``auth``)."""
        self.check_host(request)
        self.check_origin(request)
        return await self.authenticate(request)

    async def authenticate(self, request: Request) -> object | None:
        """Run the ``auth`` hook: its principal, or `AuthError` (401 when it returns ``None``)."""
        if self.auth is None:
            return None
        principal = self.auth(request)
        if inspect.isawaitable(principal):
            principal = await principal
        if principal is None:
            raise AuthError("authentication required")
        request.state.principal = principal
        return principal

    async def read_json(self, request: Request) -> Any:
        """The body read by `read_body`, parsed (400 beyond ``max_json_depth``) and checked for what
        storage cannot hold (400 naming the field with a NUL character)."""
        body = parse_json_body(await self.read_body(request), max_depth=self.max_json_depth)
        check_storable(body)
        return body

    async def read_body(self, request: Request) -> bytes:
        """The body if it is ``application/json`` (415) and at most ``max_body_bytes`` (413, decided
        from ``Content-Length`` or while streaming: an over-long body is never read whole)."""
        media_type = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if media_type != "application/json":
            got = repr(media_type) if media_type else "no Content-Type"
            raise ChatRequestError(f"expected Content-Type application/json, got {got}", status_code=415)
        too_large = ChatRequestError(
            f"the request body is larger than {self.max_body_bytes} bytes (the server's max_body_bytes)",
            status_code=413,
        )
        declared = request.headers.get("content-length")
        expected = 0
        if declared is not None:
            if not declared.strip().isdigit():
                raise ChatRequestError(f"Content-Length {declared[:40]!r} is not a number")
            if int(declared) > self.max_body_bytes:
                raise too_large
            expected = int(declared)
        budget = self._budget
        held = 0
        try:
            if not budget.take(expected):
                raise _busy(budget)
            held = expected
            chunks: list[bytes] = []
            size = 0
            async for chunk in request.stream():
                size += len(chunk)
                if size > self.max_body_bytes:
                    raise too_large
                if size > held:
                    if not budget.take(size - held):
                        raise _busy(budget)
                    held = size
                chunks.append(chunk)
        except ClientDisconnect:
            raise ChatRequestError(
                "the client went away (or timed out) while sending the body", status_code=408
            ) from None
        finally:
            budget.give(held)
        return b"".join(chunks)

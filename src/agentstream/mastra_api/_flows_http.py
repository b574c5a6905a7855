"""What the workflows, memory and observability routes share: Mastra's error body, the guard's
checks around each handler, ids and query parameters checked at the edge, the caller's owner key.

Mastra answers a refusal as ``{"error": message}`` (and ``issues: [{field, message}]`` for a bad
field, which these routes always name). A failure of the server itself is logged and answered as
a bare 500: no traceback, database text or secret reaches the client.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..ai_sdk import ChatRequestError
from ..server import owner_key
from ._http import _preflight, cors_headers

if TYPE_CHECKING:
    from ._context import ApiContext

__all__ = [
    "MAX_ID_LENGTH",
    "Caller",
    "RouteRefusal",
    "check_id",
    "flows_route",
    "mastra_error",
    "not_found",
    "query_int",
    "read_object",
]

logger = logging.getLogger("agentstream.mastra_api")

MAX_ID_LENGTH = 256
"""The longest id (run, thread, trace, resource) these routes accept; Mastra's ids are UUIDs."""

RouteRefusal = ChatRequestError
"""A refused request: its status, message and (for a bad field) the field's path."""


class Caller:
    """Who is asking: the guard's principal and its owner key (``None`` without an auth hook)."""

    __slots__ = ("owner", "principal")

    def __init__(self, principal: object) -> None:
        self.principal = principal
        self.owner: str | None = owner_key(principal)


def mastra_error(exc: ChatRequestError, headers: Mapping[str, str] | None = None) -> JSONResponse:
    """Mastra's error body ``{"error": message}``, with ``issues`` naming the field when one is bad."""
    body: dict[str, Any] = {"error": str(exc)}
    if exc.path is not None:
        body["issues"] = [{"field": exc.path, "message": str(exc)}]
    return JSONResponse(body, status_code=exc.status_code, headers={**exc.headers, **(headers or {})})


def not_found(what: str) -> ChatRequestError:
    """404 ``"<what> not found"``: also what another principal's record answers (it learns nothing)."""
    return ChatRequestError(f"{what} not found", status_code=404)


def check_id(value: str | None, field: str, *, required: bool = True) -> str | None:
    """An id from a path or query: non-empty, at most `MAX_ID_LENGTH` characters, no control
    characters (a NUL cannot be stored; the others are never in an id a client made honestly)."""
    if value is None or value == "":
        if required:
            raise ChatRequestError(f"{field} is required", path=field)
        return None
    if len(value) > MAX_ID_LENGTH:
        raise ChatRequestError(f"{field}: expected at most {MAX_ID_LENGTH} characters", path=field)
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
        raise ChatRequestError(f"{field}: control characters are not allowed in an id", path=field)
    return value


def query_int(request: Request, name: str, *, minimum: int = 0, maximum: int | None = None) -> int | None:
    """The integer query parameter ``name`` (``None`` when absent); 400 naming it otherwise."""
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return None
    text = raw.strip()
    if not text.lstrip("-").isdigit() or len(text) > 12:
        raise ChatRequestError(f"{name}: expected an integer, got {raw[:40]!r}", path=name)
    value = int(text)
    if value < minimum or (maximum is not None and value > maximum):
        bound = f" and at most {maximum}" if maximum is not None else ""
        raise ChatRequestError(f"{name}: expected at least {minimum}{bound}, got {value}", path=name)
    return value


async def read_object(context: ApiContext, request: Request) -> dict[str, Any]:
    """The JSON object body (``{}`` when the request has none, as client-js sends for cancel or
    observe), read through the guard: 413 over its size limit, 415 not JSON, 400 not an object."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.strip() == "0":
        return {}
    if (
        declared is None
        and "content-type" not in request.headers
        and "transfer-encoding" not in request.headers
    ):
        return {}
    body = await context.guard.read_json(request)
    if not isinstance(body, dict):
        raise ChatRequestError(f"expected the request body to be a JSON object, got {type(body).__name__}")
    return body


Handler = Callable[[Request, Caller], Awaitable[Response]]


def flows_route(context: ApiContext, path: str, handler: Handler, methods: list[str], what: str) -> Route:
    """A route under the API prefix whose handler runs behind the guard (host, origin, auth),
    with CORS headers (credentials allowed, as `api_route`) on every answer and refusals in
    Mastra's shape naming the field; ``OPTIONS`` answers the preflight as `api_route` does."""
    guard = context.guard

    async def endpoint(request: Request) -> Response:
        try:
            if request.method == "OPTIONS":
                return _preflight(guard, request)
            for name, value in request.path_params.items():
                check_id(value, name)
            caller = Caller(await guard.admit(request))
            response = await handler(request, caller)
        except ChatRequestError as exc:
            return mastra_error(exc, cors_headers(guard, request))
        except Exception:
            logger.exception("%s %s %s failed", what, request.method, request.url.path)
            return JSONResponse(
                {"error": "the server failed while handling this request (details are in the server log)"},
                status_code=500,
                headers=cors_headers(guard, request),
            )
        response.headers.update(cors_headers(guard, request))
        return response

    return Route(f"{context.prefix}{path}", endpoint, methods=[*methods, "OPTIONS"], name=None)

"""What every Mastra API route does around its handler: the `RequestGuard` (host, origin, auth,
size), CORS with credentials (Studio calls cross-origin with ``credentials: "include"``), and
refusals in Mastra's error shape ``{"error": "<message>"}``.

A route's handler gets the request and the caller's principal and returns a response; it raises
`ChatRequestError` (or `ApiError`) to refuse. Anything else is logged and answered as a bare 500:
no traceback or secret reaches the client.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..ai_sdk import ChatRequestError
from ..chunks import to_jsonable

if TYPE_CHECKING:
    from starlette.requests import Request

    from ..server import RequestGuard
    from ._context import ApiContext

__all__ = [
    "ApiError",
    "Handler",
    "api_route",
    "cors_headers",
    "json_answer",
    "read_object",
]

log = logging.getLogger("agentstream.mastra_api")

Handler = Callable[["Request", object], Awaitable[Response]]
"""``(request, principal) -> response``; the principal is the guard's (``None`` without auth)."""

# What Mastra's server allows a cross-origin caller (Studio sends x-mastra-* headers).
_ALLOW_HEADERS = "content-type, authorization, x-mastra-client-type, x-mastra-dev-playground, traceparent"
_ALLOW_METHODS = "GET, POST, PUT, PATCH, DELETE, OPTIONS"


class ApiError(ChatRequestError):
    """A refusal of a Mastra API request (status, message)."""

    name = "ApiError"

    def __init__(self, message: str, status_code: int = 400) -> None:
        super().__init__(message, status_code=status_code)


def cors_headers(guard: RequestGuard, request: Request) -> dict[str, str]:
    """The guard's CORS headers for an allowed cross-origin caller, with credentials allowed
    (a named origin only: credentials never go with ``*``)."""
    headers = guard.cors_headers(request)
    if headers.get("access-control-allow-origin", "*") != "*":
        headers["access-control-allow-credentials"] = "true"
    return headers


def json_answer(context: ApiContext, request: Request, data: Any, status_code: int = 200) -> JSONResponse:
    """``data`` as JSON (Mastra's camelCase, as given), with the CORS headers."""
    return JSONResponse(
        to_jsonable(data), status_code=status_code, headers=cors_headers(context.guard, request)
    )


def _refusal(guard: RequestGuard, request: Request, exc: ChatRequestError) -> JSONResponse:
    headers = {**exc.headers, **cors_headers(guard, request)}
    return JSONResponse({"error": str(exc)}, status_code=exc.status_code, headers=headers)


def _preflight(guard: RequestGuard, request: Request) -> Response:
    response = guard.preflight(request, _ALLOW_METHODS)
    asked = request.headers.get("access-control-request-headers")
    response.headers["access-control-allow-headers"] = asked or _ALLOW_HEADERS
    if response.headers.get("access-control-allow-origin", "*") != "*":
        response.headers["access-control-allow-credentials"] = "true"
    return response


async def read_object(context: ApiContext, request: Request) -> dict[str, Any]:
    """The JSON object body (415 / 413 / 400 from the guard; 400 for a body that is no object)."""
    if not request.headers.get("content-type") and request.headers.get("content-length") in (None, "0"):
        return {}  # Mastra's client sends no body (and no content type) when there are no options
    body = await context.guard.read_json(request)
    if not isinstance(body, Mapping):
        raise ApiError(f"the request body must be a JSON object, got {type(body).__name__}")
    return dict(body)


def api_route(
    context: ApiContext, path: str, handler: Handler, methods: list[str], what: str, *, public: bool = False
) -> Route:
    """A route at ``context.prefix + path`` behind the guard: ``OPTIONS`` answers CORS preflights,
    every other method is admitted (host, origin, auth) before ``handler`` runs. ``public``: host
    and origin only, no auth (Mastra's public routes: what a client reads before it can log in)."""
    guard = context.guard

    async def endpoint(request: Request) -> Response:
        try:
            if request.method == "OPTIONS":
                return _preflight(guard, request)
            if public:
                guard.check_host(request)
                guard.check_origin(request)
                principal = None
            else:
                principal = await guard.admit(request)
            return await handler(request, principal)
        except ChatRequestError as exc:
            return _refusal(guard, request, exc)
        except Exception:
            log.exception("%s %s %s failed", what, request.method, request.url.path)
            failed = ChatRequestError(
                "the server failed while handling this request (details are in the server log)",
                status_code=500,
            )
            return _refusal(guard, request, failed)

    return Route(context.prefix + path, endpoint, methods=[*methods, "OPTIONS"], name=what)

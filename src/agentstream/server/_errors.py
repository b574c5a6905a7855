"""How every route answers a refusal (JSON 4xx), an unreachable stream store (503) and its own
failure (a logged 500 with no details)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ..ai_sdk import ChatRequestError
from ..resumable import StreamStoreUnavailableError
from ._guard import RequestGuard
from ._storable import check_path_params

__all__ = ["InternalServerError", "StoreUnavailableError", "answering_errors", "error_response"]

logger = logging.getLogger("agentstream.server")

Handler = Callable[[Request], Awaitable[Response]]


def error_response(exc: ChatRequestError, headers: Mapping[str, str] | None = None) -> JSONResponse:
    """The JSON answer for a refused request (status, ``{"error": …}``, the error's own headers)."""
    return JSONResponse(
        exc.to_dict(), status_code=exc.status_code, headers={**exc.headers, **(headers or {})}
    )


class InternalServerError(ChatRequestError):
    """A failure of the server itself (500); the client gets this message, the log the traceback."""

    name = "InternalServerError"

    def __init__(self) -> None:
        super().__init__(
            "the server failed while handling this request (details are in the server log)", status_code=500
        )


class StoreUnavailableError(ChatRequestError):
    """The stream store cannot be reached (503, ``Retry-After``): nothing was started or stopped."""

    name = "ServiceUnavailableError"

    def __init__(self) -> None:
        super().__init__(
            "the server's stream store is unreachable; nothing was started or stopped, try again shortly",
            status_code=503,
            headers={"Retry-After": "5"},
        )


def answering_errors(start: Handler, guard: RequestGuard, what: str) -> Handler:
    """``start`` with its refusals answered as JSON (with the guard's CORS headers, so a page can
    read them) and any other exception logged and answered as a bare 500: a traceback or a
    secret in an exception message never reaches the client."""

    async def endpoint(request: Request) -> Response:
        try:
            check_path_params(request.path_params)
            return await start(request)
        except ChatRequestError as exc:
            return error_response(exc, guard.cors_headers(request))
        except StreamStoreUnavailableError as exc:
            logger.warning("%s %s %s: %s", what, request.method, request.url.path, exc)
            return error_response(StoreUnavailableError(), guard.cors_headers(request))
        except Exception:
            logger.exception("%s %s %s failed before answering", what, request.method, request.url.path)
            return error_response(InternalServerError())

    return endpoint

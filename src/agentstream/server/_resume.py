"""Resumable chat responses: record each response in a `StreamStore`, serve ``GET …/{chat_id}/stream``.

The AI SDK's resumable-stream pattern. With a store, `chat_route` runs the response in a task of
its own that writes every UI chunk to the store, and the ``POST`` answer is a reader of that
stream: a client that goes away (a reload, a lost connection) no longer stops the run, and
`resume_route` replays the chat's active stream from its start (``?after=N``: from chunk N on)
and follows it to the end, or answers 204 when nothing is active. Only the principal that started
a response (the `RequestGuard`'s ``auth``) may resume it; anyone else gets the same 204.

The recording, following and stopping are the app's `Jobs` (``agentstream.ai_sdk``); this module
holds what the routes share around it: which `Jobs` a route serves (`route_jobs`), the chat's
claim (403 for another user's chat), the runner check and the stream's ``GET`` endpoint.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Awaitable, Callable, Mapping
from urllib.parse import unquote

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Match, Route
from starlette.types import Scope

from ..ai_sdk import (
    ANSWER_LOST,
    DEFAULT_STOP_TIMEOUT_S,
    MAX_ID_LENGTH,
    STORE_UNAVAILABLE,
    ChatRequestError,
    Jobs,
    SSEStreamResponse,
    assert_valid_heartbeat_ms,
)
from ..resumable import StreamOwnerError, StreamStore, chat_stream_key
from ._errors import answering_errors
from ._guard import RequestGuard
from ._owner import principal_stream_owner, stream_owner

__all__ = [
    "ANSWER_LOST",
    "DEFAULT_STOP_TIMEOUT_S",
    "STORE_UNAVAILABLE",
    "check_runner",
    "claim",
    "follow_endpoint",
    "resume_route",
    "route_jobs",
    "stream_owner",
]

logger = logging.getLogger("agentstream.server")


def route_jobs(where: str, jobs: Jobs | StreamStore | None, stream_store: StreamStore | None = None) -> Jobs:
    """The `Jobs` a route serves: the one given (``jobs=``, or as its first argument); routes given
    only a stream store (the spelling before ``jobs=``, deprecated) share that store's default one
    (`Jobs.shared`), so they still reach each other's jobs."""
    if isinstance(jobs, Jobs):
        if stream_store is not None and stream_store is not jobs.store:
            raise ValueError(f"{where}: stream_store is not the store of the jobs given; give one of them")
        return jobs
    store = jobs if jobs is not None else stream_store
    if store is not None:
        warnings.warn(
            f"{where}: a stream store without jobs= is deprecated; build one Jobs(store) and hand it to "
            "every route that shares the store (create_app does)",
            DeprecationWarning,
            stacklevel=3,
        )
    return Jobs.shared(store)


def check_runner(
    where: str,
    runner: object,
    protocol: type,
    store: StreamStore | None,
    local: Mapping[str, object],
    hint: str,
) -> None:
    """Refuse a ``runner`` that is not a ``protocol`` (``ChatRunner``, ``WorkflowRunner``), one
    without the store its workers write to, and the ``local`` settings given (callables and
    defaults, which cannot travel to a worker: ``hint`` says where they go instead)."""
    if not isinstance(runner, protocol):
        raise TypeError(f"{where}(runner=...): expected a {protocol.__name__}, got {type(runner).__name__}")
    if store is None:
        raise ValueError(f"{where}(runner=...) needs the stream_store its workers write to")
    given = sorted(name for name, value in local.items() if value)
    if given:
        raise ValueError(
            f"{where}(runner=...): {', '.join(given)} cannot travel to a worker; configure "
            f"{'them' if len(given) > 1 else 'it'} on the workers ({hint})"
        )


async def claim(jobs: Jobs, chat_id: str, owner: str | None) -> str:
    """Start the chat's new stream (under its `chat_stream_key`); another user's active chat is
    refused (403)."""
    try:
        return await jobs.claim(chat_stream_key(chat_id), owner)
    except StreamOwnerError:
        raise ChatRequestError(
            f"chat {chat_id!r} has a response in progress for another user; use another chat id",
            status_code=403,
            path="id",
        ) from None


def check_stop_timeout(stop_timeout_s: float, where: str) -> None:
    """Refuse a ``stop_timeout_s`` that is not a positive number of seconds (NaN included)."""
    if not stop_timeout_s > 0:
        raise ValueError(f"{where}: stop_timeout_s must be > 0 seconds, got {stop_timeout_s!r}")


def _after(request: Request) -> int:
    value = request.query_params.get("after", "0")
    if not value.isdigit() or len(value) > 9:
        raise ChatRequestError(
            f"after: expected the number of chunks already received (0 or more), got {value[:40]!r}",
            path="after",
        )
    return int(value)


def _chat_id(request: Request) -> str:
    chat_id: str = request.path_params["chat_id"]
    if len(chat_id) > MAX_ID_LENGTH:
        raise ChatRequestError(
            f"chat id: expected an id of at most {MAX_ID_LENGTH} characters, got {len(chat_id)}",
            path="chat_id",
        )
    return chat_id


def _segment_safe(segment: str) -> str:
    """One raw path segment, decoded except for ``/`` and ``%`` (so it stays one segment)."""
    return unquote(segment).replace("%", "%25").replace("/", "%2F")


def _route_path(scope: Scope) -> str:
    """The path below the app's root path (what Starlette's routes match)."""
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    if root and path.startswith(root) and (len(path) == len(root) or path[len(root)] == "/"):
        return path[len(root) :]
    return path


def segment_path(scope: Scope) -> str:
    """The route path with each segment decoded on its own: ``%2F`` inside a segment stays
    ``%2F``, so ``/api/chat/a%2Fb/stream`` is three segments (chat ``a/b``), not four (agent ``a``,
    chat ``b``). Built from ``raw_path``, aligned on the (decoded) route path so a mount or a
    proxy's root path is accounted for; the decoded route path when the server gives no raw path."""
    route_path = _route_path(scope)
    raw = scope.get("raw_path")
    if not isinstance(raw, bytes) or not route_path:
        return route_path
    segments = raw.split(b"?", 1)[0].decode("utf-8", "replace").split("/")
    for start in range(len(segments) - 1, 0, -1):  # the shortest raw tail that is the route path
        tail = "/" + "/".join(_segment_safe(s) for s in segments[start:])
        if unquote(tail) == route_path:
            return tail
    return route_path


class SegmentRoute(Route):
    """A `Route` whose parameters are whole path segments, each percent-decoded on its own: a chat
    id may contain ``/`` (sent as ``%2F``, as the AI SDK client's ``encodeURIComponent`` does)
    without being mistaken for another route's extra segment."""

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if scope["type"] != "http":
            return Match.NONE, {}
        found = self.path_regex.match(segment_path(scope))
        if found is None:
            return Match.NONE, {}
        params = dict(scope.get("path_params", {}))
        for key, value in found.groupdict().items():
            params[key] = self.param_convertors[key].convert(unquote(value))
        child = {"endpoint": self.endpoint, "path_params": params}
        if self.methods and scope["method"] not in self.methods:
            return Match.PARTIAL, child
        return Match.FULL, child


def follow_endpoint(
    jobs: Jobs, checks: RequestGuard, key_of: Callable[[Request], str], heartbeat_ms: float
) -> Callable[[Request], Awaitable[Response]]:
    """The ``GET`` endpoint of a job's stream (a chat's answer, a workflow run's leg): the job under
    ``key_of(request)`` replayed from its start (``?after=N`` skips the first N chunks) and followed
    to its end (`Jobs.follow`); 204 when nothing runs under the key, or when it belongs to another
    principal (who learns nothing, not even that it exists)."""
    store = jobs.require_store("a stream route")

    async def start(request: Request) -> Response:
        if request.method == "OPTIONS":
            return checks.preflight(request, "GET, OPTIONS")
        principal = await checks.admit(request)
        after = _after(request)
        active = await store.active(key_of(request))
        headers = checks.cors_headers(request)
        if active is None or active.owner != principal_stream_owner(principal):
            return Response(status_code=204, headers=headers)
        return SSEStreamResponse(
            jobs.follow(active.stream_id, after), heartbeat_ms=heartbeat_ms, headers=headers
        )

    return start


def resume_route(
    jobs: Jobs | StreamStore,
    path: str = "/chat/{chat_id}/stream",
    *,
    guard: RequestGuard | None = None,
    heartbeat_ms: float = 15_000,
    name: str | None = None,
) -> Route:
    """``GET`` ``path``: the chat's active response as a UI message stream, replayed from its start
    (``?after=N`` skips the first N chunks) and followed to its end; 204 when the chat has none, or
    when it belongs to another principal. The route ``useChat({resume: true})`` calls
    (``<api>/<chat id>/stream``); ``jobs`` is the `Jobs` given to `chat_route` (a bare
    `StreamStore` is deprecated).

    Each path parameter is one path segment, percent-decoded on its own, so a chat id may hold any
    character: ``/`` arrives escaped (``%2F``, the AI SDK client's ``encodeURIComponent``) and
    never makes the URL another route's. A chat id over 256 characters is a 400 (``chat_id``).
    """
    assert_valid_heartbeat_ms(heartbeat_ms)
    if "{chat_id}" not in path:
        raise ValueError("resume_route: the path needs a {chat_id} parameter")
    checks = guard or RequestGuard()
    served = route_jobs("resume_route", jobs)
    start = follow_endpoint(served, checks, lambda request: chat_stream_key(_chat_id(request)), heartbeat_ms)
    return SegmentRoute(
        path, answering_errors(start, checks, "resume request"), methods=["GET", "OPTIONS"], name=name
    )

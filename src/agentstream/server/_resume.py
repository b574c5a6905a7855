"""Resumable chat responses: record each response in a `StreamStore`, serve ``GET …/{chat_id}/stream``.

The AI SDK's resumable-stream pattern. With a store, `chat_route` runs the response in a task of
its own that writes every UI chunk to the store, and the ``POST`` answer is a reader of that
stream: a client that goes away (a reload, a lost connection) no longer stops the run, and
`resume_route` replays the chat's active stream from its start (``?after=N``: from chunk N on)
and follows it to the end, or answers 204 when nothing is active. Only the principal that started
a response (the `RequestGuard`'s ``auth``) may resume it; anyone else gets the same 204.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import unquote

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Match, Route
from starlette.types import Scope

from .._abort import AbortController
from ..ai_sdk import (
    MAX_ID_LENGTH,
    ChatRequestError,
    SSEStreamResponse,
    assert_valid_heartbeat_ms,
    decode_ui_chunk,
    write_chunks,
)
from ..resumable import StreamExpiredError, StreamOwnerError, StreamStore, chat_stream_key
from ._errors import answering_errors
from ._guard import RequestGuard
from ._owner import principal_stream_owner, stream_owner

__all__ = [
    "DEFAULT_STOP_TIMEOUT_S",
    "ends_within",
    "record_response",
    "resume_route",
    "stop_here",
    "stream_owner",
]

logger = logging.getLogger("agentstream.server")
# Running responses, referenced until they end (the event loop keeps only weak references to tasks).
_RUNNING: set[asyncio.Task[None]] = set()
# The response each chat is running in this process (its stream id and run's controller): a new
# one for the chat stops the old one, and so does a stop request.
_CURRENT: dict[tuple[int, str], tuple[str, AbortController]] = {}
_decode = decode_ui_chunk

# How long a stop or cancel waits for a worker to end the stream: its cancel poll (0.5 s) and a
# run's cancel grace (2 s by default) with room; past it the server ends the stream itself.
DEFAULT_STOP_TIMEOUT_S = 10.0


async def claim(store: StreamStore, chat_id: str, owner: str | None) -> str:
    """Start the chat's new stream (under its `chat_stream_key`); another user's active chat is
    refused (403)."""
    try:
        return await store.start(chat_stream_key(chat_id), owner=owner)
    except StreamOwnerError:
        raise ChatRequestError(
            f"chat {chat_id!r} has a response in progress for another user; use another chat id",
            status_code=403,
            path="id",
        ) from None


async def _produce(
    store: StreamStore, stream_id: str, chunks: AsyncIterator[Any], controller: AbortController
) -> None:
    try:
        await write_chunks(store, stream_id, chunks)
    except Exception:
        logger.exception("recording stream %s failed; the run is stopped", stream_id)
        controller.abort()
    finally:
        with contextlib.suppress(Exception):
            await chunks.aclose()  # type: ignore[attr-defined]
        try:
            # Shielded: at shutdown the task is cancelled, and readers must still see the end.
            await asyncio.shield(store.finish(stream_id))
        except Exception:
            logger.exception("closing stream %s failed; its readers wait until it expires", stream_id)


def record_response(
    store: StreamStore,
    key: str,
    stream_id: str,
    chunks: AsyncIterator[Any],
    controller: AbortController,
) -> AsyncIterator[Any]:
    """Run ``chunks`` to completion in a task of its own, writing them to ``stream_id``; returns a
    reader of that stream (the answer to send). Closing the reader does not stop the run; a new
    response under the same stream ``key`` (in this process) does, as a chat streams one answer at
    a time."""
    here = (id(store), key)
    previous = _CURRENT.get(here)
    if previous is not None:
        previous[1].abort()
    current = _CURRENT[here] = (stream_id, controller)

    def done(task: asyncio.Task[None]) -> None:
        _RUNNING.discard(task)
        if _CURRENT.get(here) is current:
            del _CURRENT[here]

    task = asyncio.create_task(_produce(store, stream_id, chunks, controller), name=f"record {stream_id}")
    _RUNNING.add(task)
    task.add_done_callback(done)
    return follow(store, stream_id)


def stop_here(store: StreamStore, key: str, stream_id: str) -> bool:
    """Abort the run writing ``stream_id`` under stream ``key`` if it runs in this process; whether it does."""
    current = _CURRENT.get((id(store), key))
    if current is None or current[0] != stream_id:
        return False
    current[1].abort()
    return True


async def follow(store: StreamStore, stream_id: str, after: int = 0) -> AsyncIterator[Any]:
    """The stream's UI chunks (decoded) from index ``after``, until it finishes."""
    async for raw in store.read(stream_id, after=after):
        yield _decode(raw)


async def ends_within(store: StreamStore, stream_id: str, timeout_s: float) -> bool:
    """Whether the stream finishes (or is gone) within ``timeout_s``."""
    try:
        async with asyncio.timeout(timeout_s):
            chunks = store.read(stream_id, after=await store.length(stream_id))
            async with contextlib.aclosing(chunks):  # type: ignore[type-var]
                async for _ in chunks:
                    pass
    except TimeoutError:
        return False
    except StreamExpiredError:
        pass
    return True


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


def resume_route(
    store: StreamStore,
    path: str = "/chat/{chat_id}/stream",
    *,
    guard: RequestGuard | None = None,
    heartbeat_ms: float = 15_000,
    name: str | None = None,
) -> Route:
    """``GET`` ``path``: the chat's active response as a UI message stream, replayed from its start
    (``?after=N`` skips the first N chunks) and followed to its end; 204 when the chat has none, or
    when it belongs to another principal. The route ``useChat({resume: true})`` calls
    (``<api>/<chat id>/stream``); ``store`` must be the one given to `chat_route`.

    Each path parameter is one path segment, percent-decoded on its own, so a chat id may hold any
    character: ``/`` arrives escaped (``%2F``, the AI SDK client's ``encodeURIComponent``) and
    never makes the URL another route's. A chat id over 256 characters is a 400 (``chat_id``).
    """
    assert_valid_heartbeat_ms(heartbeat_ms)
    if "{chat_id}" not in path:
        raise ValueError("resume_route: the path needs a {chat_id} parameter")
    checks = guard or RequestGuard()

    async def start(request: Request) -> Response:
        if request.method == "OPTIONS":
            return checks.preflight(request, "GET, OPTIONS")
        principal = await checks.admit(request)
        after = _after(request)
        active = await store.active(chat_stream_key(_chat_id(request)))
        headers = checks.cors_headers(request)
        if active is None or active.owner != principal_stream_owner(principal):
            return Response(status_code=204, headers=headers)
        chunks = follow(store, active.stream_id, after)
        return SSEStreamResponse(chunks, heartbeat_ms=heartbeat_ms, headers=headers)

    return SegmentRoute(
        path, answering_errors(start, checks, "resume request"), methods=["GET", "OPTIONS"], name=name
    )

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
    STORE_FAILED,
    ChatRequestError,
    SSEStreamResponse,
    StoredUIChunk,
    assert_valid_heartbeat_ms,
    end_with_error,
    write_chunks,
)
from ..resumable import (
    IN_PROCESS_LEASE_S,
    StreamExpiredError,
    StreamLostError,
    StreamOwnerError,
    StreamStore,
    StreamStoreUnavailableError,
    chat_stream_key,
    read_checked,
    writing,
)
from ._errors import answering_errors
from ._guard import RequestGuard
from ._owner import principal_stream_owner, stream_owner

__all__ = [
    "ANSWER_LOST",
    "DEFAULT_STOP_TIMEOUT_S",
    "STORE_UNAVAILABLE",
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

# How long a stop or cancel waits for a worker to end the stream: its cancel poll (0.5 s) and a
# run's cancel grace (2 s by default) with room; past it the server ends the stream itself.
DEFAULT_STOP_TIMEOUT_S = 10.0

ANSWER_LOST = "the answer was lost: the process writing it stopped before it finished (ask again)"
"""The ``errorText`` a reader sends when the stream ends unfinished (its writer died, or it was lost)."""
STORE_UNAVAILABLE = "the answer was interrupted: the server's stream store is unreachable (try again shortly)"
"""The ``errorText`` a reader sends when the stream store fails past its retries."""


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


async def release_claim(store: StreamStore, stream_id: str) -> None:
    """End a claimed stream no answer will be written to (the request failed before its run
    started); a store failure is logged, not raised: the request's own error is the answer (the
    claim then expires, and its owner may claim the chat again meanwhile)."""
    try:
        await store.finish(stream_id)
    except Exception:
        logger.warning("releasing the claim of stream %s failed", stream_id, exc_info=True)


async def _produce(
    store: StreamStore, stream_id: str, chunks: AsyncIterator[Any], controller: AbortController
) -> None:
    try:
        # The writer lease: if this process dies mid-answer, its readers elsewhere end within seconds.
        async with writing(store, stream_id, lease_s=IN_PROCESS_LEASE_S):
            await _record(store, stream_id, chunks, controller)
    except Exception:
        logger.exception(
            "closing stream %s failed; its readers end when its writer lease runs out", stream_id
        )


async def _record(
    store: StreamStore, stream_id: str, chunks: AsyncIterator[Any], controller: AbortController
) -> None:
    failed = False
    try:
        await write_chunks(store, stream_id, chunks)
    except Exception as exc:
        if _only_expired(exc):  # the store lost it (a restart without persistence) or it expired
            logger.warning("stream %s was gone while it was recorded; the run is stopped", stream_id)
        else:
            logger.exception("recording stream %s failed; the run is stopped", stream_id)
        controller.abort()
        failed = True
    finally:
        with contextlib.suppress(Exception):
            await chunks.aclose()  # type: ignore[attr-defined]
        # Shielded: at shutdown the task is cancelled, and readers must still see the end.
        ending = end_with_error(store, stream_id, STORE_FAILED) if failed else store.finish(stream_id)
        await asyncio.shield(ending)


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


async def _end_lost(store: StreamStore, stream_id: str) -> None:
    """End the stream of a dead writer as its readers were told (`ANSWER_LOST`): a later resume
    finds nothing running, a stop has nothing to stop. Positional, so the readers that notice
    together write one error chunk; a takeover that comes later finds the stream finished."""
    try:
        await end_with_error(store, stream_id, ANSWER_LOST)
    except Exception as exc:
        logger.warning("stream %s: ending the lost answer failed: %s", stream_id, exc)


def _only_expired(exc: BaseException) -> bool:
    if isinstance(exc, BaseExceptionGroup):
        return all(_only_expired(inner) for inner in exc.exceptions)
    return isinstance(exc, StreamExpiredError)


async def follow(store: StreamStore, stream_id: str, after: int = 0) -> AsyncIterator[Any]:
    """The stream's UI chunks from index ``after``, until it finishes: as the bytes written
    (`StoredUIChunk`), which the SSE response frames as they are (no decode and encode again per
    chunk and reader). A stream that ends
    unfinished (its writer died, the store lost it) or a store that fails ends the answer with an
    ``error`` chunk (`ANSWER_LOST`, `STORE_UNAVAILABLE`): the client is told, the response ends."""
    try:
        async for raw in read_checked(store, stream_id, after=after):
            yield StoredUIChunk(raw)
    except StreamLostError as exc:
        logger.warning("stream %s: %s", stream_id, exc)
        await _end_lost(store, stream_id)
        yield {"type": "error", "errorText": ANSWER_LOST}
    except StreamStoreUnavailableError as exc:
        logger.warning("stream %s: following it failed: %s", stream_id, exc)
        yield {"type": "error", "errorText": STORE_UNAVAILABLE}
    except Exception:
        logger.exception("stream %s: following it failed", stream_id)
        yield {"type": "error", "errorText": STORE_UNAVAILABLE}


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

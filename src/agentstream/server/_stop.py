"""``stop_route``: ``DELETE …/{chat_id}/stream`` stops the chat's running answer.

With a stream store an answer outlives its request (so a reload can resume it), and the AI SDK
client's ``stop()`` only stops reading. This route is the server side of a Stop button: the
answer's job is cancelled by the app's `Jobs` wherever it runs (this process, or a worker through
the ``runner``) and its stream ends as an aborted answer's does (``abort``, ``finish``), so a
resume finds nothing.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ..ai_sdk import DEFAULT_STOP_TIMEOUT_S, TURN_CANCELLED, ChatRequestError, Jobs
from ..resumable import ChatRunner, StreamStore, chat_stream_key
from ._errors import answering_errors
from ._guard import RequestGuard
from ._owner import principal_stream_owner
from ._resume import SegmentRoute, _chat_id, check_stop_timeout, route_jobs

__all__ = ["stop_answer", "stop_route"]


async def stop_answer(
    jobs: Jobs | StreamStore,
    chat_id: str,
    stream_id: str,
    runner: ChatRunner | None = None,
    stop_timeout_s: float = DEFAULT_STOP_TIMEOUT_S,
) -> None:
    """Stop the answer writing ``stream_id`` for ``chat_id`` and wait (up to ``stop_timeout_s``)
    for its stream to end (`Jobs.cancel`). An answer on a worker that does not end it in time
    (never started, or its worker died) is ended here. Raises `ChatRequestError` (409) for an
    answer running in another server's process, which this one cannot reach."""
    served = route_jobs("stop_answer", jobs)
    key = chat_stream_key(chat_id)
    if await served.cancel(key, stream_id, runner, ending=TURN_CANCELLED, timeout_s=stop_timeout_s):
        return
    active = await served.require_store("stop_answer").active(key)
    if active is None or active.stream_id != stream_id:
        return  # it ended (here) in the meantime: nothing left to stop
    raise ChatRequestError(
        f"chat {chat_id[:120]!r}: the answer is running in another server process; stop it through that server",
        status_code=409,
    )


def stop_route(
    jobs: Jobs | StreamStore,
    path: str = "/chat/{chat_id}/stream",
    *,
    guard: RequestGuard | None = None,
    runner: ChatRunner | None = None,
    stop_timeout_s: float = DEFAULT_STOP_TIMEOUT_S,
    name: str | None = None,
) -> Route:
    """``DELETE`` ``path``: stop the chat's running answer; 204 once it has stopped (its stream
    ended with ``abort``, ``finish``), or when the chat has none, or when it is another
    principal's (who learns nothing and stops nothing). ``jobs`` and ``runner`` are those of the
    `chat_route` whose answers it stops (a bare `StreamStore` is deprecated); 409 for an answer
    running in another server's process (no ``runner``: answers run where they were asked). Mount
    it on `resume_route`'s path.
    """
    if "{chat_id}" not in path:
        raise ValueError("stop_route: the path needs a {chat_id} parameter")
    if runner is not None and not isinstance(runner, ChatRunner):
        raise TypeError(f"stop_route(runner=...): expected a ChatRunner, got {type(runner).__name__}")
    check_stop_timeout(stop_timeout_s, "stop_route")
    served = route_jobs("stop_route", jobs)
    store = served.require_store("stop_route")
    checks = guard or RequestGuard()

    async def start(request: Request) -> Response:
        if request.method == "OPTIONS":
            return checks.preflight(request, "DELETE, OPTIONS")
        principal = await checks.admit(request)
        chat_id = _chat_id(request)
        active = await store.active(chat_stream_key(chat_id))
        if active is not None and active.owner == principal_stream_owner(principal):
            await stop_answer(served, chat_id, active.stream_id, runner, stop_timeout_s)
        return Response(status_code=204, headers=checks.cors_headers(request))

    return SegmentRoute(
        path, answering_errors(start, checks, "stop request"), methods=["DELETE", "OPTIONS"], name=name
    )

"""``SSEStreamResponse``: UI chunks as SSE on one task group (sender, heartbeat, disconnect watcher).

The one SSE response of the package: ``create_ui_message_stream_response`` (the AI SDK's plain
response) is this without heartbeats, ``chat_route`` uses it with heartbeats and the run's abort
controller. A client disconnect, a failed write or the end of the stream cancels the whole group, so
the run, the heartbeat and the sender stop together and no task outlives the request. The heartbeat
is one task that wakes once per interval and writes only when nothing was sent for that long: the
per-chunk path is a plain ``send`` plus a clock read. Needs the ``server`` extra (starlette).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterable, Mapping
from typing import Any

from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

from .._abort import AbortController
from ._sse import (
    DONE_FRAME,
    HEARTBEAT_FRAME,
    UI_MESSAGE_STREAM_HEADERS,
    assert_valid_heartbeat_ms,
    encode_sse_frame,
)

__all__ = ["SSEStreamResponse"]

# A timer may fire a hair early (clock resolution, fake loop clocks): that close to due is due,
# or the heartbeat would spin on sub-microsecond sleeps.
_SLACK = 0.001


class _Stop(Exception):
    """Raised inside the task group to end it: the client went away or the stream is complete."""


class SSEStreamResponse(Response):
    """Streams UI chunks as SSE, with heartbeats, aborting ``controller`` when the client goes away.

    On disconnect (or when a write fails) the controller is aborted and the task group is cancelled:
    the chunk stream is closed in the sender's own task (which stops the run) and every task has
    ended before ``__call__`` returns.
    """

    def __init__(
        self,
        stream: AsyncIterable[Any],
        *,
        controller: AbortController | None = None,
        heartbeat_ms: float = 15_000,
        status_code: int = 200,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        assert_valid_heartbeat_ms(heartbeat_ms)
        self._stream = stream
        self._controller = controller
        self._heartbeat = heartbeat_ms / 1000 if heartbeat_ms > 0 else None
        merged = dict(UI_MESSAGE_STREAM_HEADERS)
        for key, value in (headers or {}).items():
            merged[key.lower()] = value
        # No ``body``: Response.__init__ would declare a Content-Length of 0 for a streamed body.
        self.status_code = status_code
        self.media_type = None
        self.background = None
        self.init_headers(merged)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        call = _Call(send, self._heartbeat)
        error: BaseException | None = None
        try:
            async with asyncio.TaskGroup() as group:
                group.create_task(call.send_all(self.status_code, self.raw_headers, self._stream))
                group.create_task(_watch(receive))
                if self._heartbeat is not None:
                    group.create_task(call.heartbeat())
        except* _Stop:
            pass
        except* Exception as failed:
            error = failed.exceptions[0]
        finally:
            if not call.complete and self._controller is not None:
                self._controller.abort()
            # Every task has ended: the stream is closed here however the response ended.
            with contextlib.suppress(Exception):
                await self._stream.aclose()  # type: ignore[attr-defined]
        if error is not None and not isinstance(error, OSError):
            raise error


async def _watch(receive: Receive) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise _Stop


class _Call:
    """One response's send side: the frame sender and the heartbeat share ``last_sent``/``busy``.

    ASGI does not promise that concurrent ``send`` calls are safe, so a frame waits for a ping that
    is being written (``_ping``) and the heartbeat never writes while a frame is being written.
    """

    def __init__(self, send: Send, heartbeat: float | None) -> None:
        self._send = send
        self._interval = heartbeat
        self._loop = asyncio.get_running_loop()
        self._ping: asyncio.Future[None] | None = None
        self.last_sent = self._loop.time()
        self.busy = False
        self.complete = False

    async def _body(self, body: bytes) -> None:
        if self._ping is not None:
            await asyncio.shield(self._ping)
        message: Message = {"type": "http.response.body", "body": body, "more_body": True}
        self.busy = True
        await self._send(message)
        self.busy = False
        self.last_sent = self._loop.time()

    async def _send_ping(self) -> None:
        self._ping = self._loop.create_future()
        try:
            await self._send({"type": "http.response.body", "body": HEARTBEAT_FRAME, "more_body": True})
            self.last_sent = self._loop.time()
        finally:
            self._ping.set_result(None)
            self._ping = None

    async def send_all(self, status: int, headers: Any, chunks: AsyncIterable[Any]) -> None:
        """`encode_sse` of ``chunks``, framed here rather than by a generator of its own (one
        async step less per frame): one frame per chunk, then ``[DONE]``; an exception from
        ``chunks`` ends the response without it."""
        self.busy = True  # no ping may go out before the response has started
        await self._send({"type": "http.response.start", "status": status, "headers": headers})
        self.busy = False
        body = self._body
        async for chunk in chunks:
            await body(encode_sse_frame(chunk))
        await body(DONE_FRAME)
        if self._ping is not None:
            await asyncio.shield(self._ping)
        self.busy = True  # from here on no ping: it would follow the end of the response
        await self._send({"type": "http.response.body", "body": b"", "more_body": False})
        self.complete = True
        raise _Stop

    async def heartbeat(self) -> None:
        assert self._interval is not None
        while True:
            delay = self.last_sent + self._interval - self._loop.time()
            if delay > _SLACK:
                await asyncio.sleep(delay)
            elif self.busy:
                # A blocked write means a slow client, not a silent stream: check again later.
                await asyncio.sleep(self._interval)
            else:
                await self._send_ping()

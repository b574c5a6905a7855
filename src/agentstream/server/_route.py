"""``chat_route``: a Starlette ``Route`` serving ``POST /chat/{agent_id}`` to ``useChat``.

The response streams SSE with heartbeats (``: ping`` comment lines, ignored by the ``ai`` client)
and watches the connection: a client disconnect aborts the agent run and stops every task it
started before the response returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from .._abort import AbortController
from ..ai_sdk._chat import ChatRequestError, check_transform_factories, handle_chat_stream
from ..ai_sdk._convert import MessageMetadataFn, OnErrorFn, TransformFactory, Version
from ..ai_sdk._sse import UI_MESSAGE_STREAM_HEADERS, encode_sse

__all__ = ["HEARTBEAT_FRAME", "SSEStreamResponse", "assert_valid_heartbeat_ms", "chat_route"]

HEARTBEAT_FRAME = b": ping\n\n"
_MAX_TIMER_MS = 2_147_483_647
_END = object()


def assert_valid_heartbeat_ms(heartbeat_ms: float) -> None:
    """``heartbeat_ms`` must be a finite number ≤ 2147483647 (``<= 0`` disables heartbeats)."""
    if isinstance(heartbeat_ms, bool) or not isinstance(heartbeat_ms, (int, float)):
        raise TypeError(f"heartbeat_ms must be a number, got {type(heartbeat_ms).__name__}")
    if not math.isfinite(heartbeat_ms) or heartbeat_ms > _MAX_TIMER_MS:
        raise ValueError(f"heartbeat_ms must be a finite number <= {_MAX_TIMER_MS}, got {heartbeat_ms!r}")


class SSEStreamResponse(Response):
    """Streams UI chunks as SSE, with heartbeats, aborting ``controller`` when the client goes away.

    On disconnect (or when sending fails) the controller is aborted, the chunk stream is closed (which
    stops the run) and every helper task is awaited before ``__call__`` returns.
    """

    def __init__(
        self,
        stream: AsyncIterator[Any],
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
        queue: asyncio.Queue[Any] = asyncio.Queue(maxsize=1)
        frames = encode_sse(self._stream)

        async def pump() -> None:
            try:
                async for frame in frames:
                    await queue.put(frame)
                await queue.put(_END)
            except Exception as exc:  # surfaced by the sender, which ends the response early
                await queue.put(exc)

        async def sender() -> None:
            await send(
                {"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers}
            )
            while True:
                try:
                    if self._heartbeat is None:
                        item = await queue.get()
                    else:
                        item = await asyncio.wait_for(queue.get(), self._heartbeat)
                except TimeoutError:
                    await send({"type": "http.response.body", "body": HEARTBEAT_FRAME, "more_body": True})
                    continue
                if item is _END:
                    break
                if isinstance(item, BaseException):
                    raise item
                await send({"type": "http.response.body", "body": item, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})

        async def watch() -> None:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return

        pump_task = asyncio.ensure_future(pump())
        send_task = asyncio.ensure_future(sender())
        watch_task = asyncio.ensure_future(watch())
        try:
            done, _ = await asyncio.wait({send_task, watch_task}, return_when=asyncio.FIRST_COMPLETED)
            if send_task not in done or send_task.exception() is not None:
                # The client went away (or writing failed): stop the run.
                if self._controller is not None:
                    self._controller.abort()
        finally:
            for task in (send_task, watch_task, pump_task):
                task.cancel()
            await asyncio.gather(send_task, watch_task, pump_task, return_exceptions=True)
            with contextlib.suppress(Exception):
                await frames.aclose()  # type: ignore[attr-defined]
            with contextlib.suppress(Exception):
                await self._stream.aclose()  # type: ignore[attr-defined]
        if send_task.done() and not send_task.cancelled():
            exc = send_task.exception()
            if exc is not None and not isinstance(exc, OSError):
                raise exc


def chat_route(
    mastra: Any,
    path: str = "/chat/{agent_id}",
    *,
    agent: str | None = None,
    default_options: Mapping[str, Any] | None = None,
    experimental_transform: TransformFactory | Sequence[TransformFactory] | None = None,
    version: Version = "v5",
    send_start: bool = True,
    send_finish: bool = True,
    send_reasoning: bool = False,
    send_sources: bool = False,
    heartbeat_ms: float = 15_000,
    on_error: OnErrorFn | None = None,
    message_metadata: MessageMetadataFn | None = None,
    name: str | None = None,
) -> Route:
    """A ``POST`` route answering ``useChat`` with agent ``{agent_id}`` (or the fixed ``agent``).

    Usable in Starlette (``Starlette(routes=[chat_route(mastra)])``) and FastAPI
    (``app.router.routes.append(chat_route(mastra))``). Malformed requests get a 400 and an unknown
    agent a 404, with ``{"error": {"name", "message", "path"?}}``; everything else streams.
    """
    assert_valid_heartbeat_ms(heartbeat_ms)
    check_transform_factories(experimental_transform, "chat_route(experimental_transform=...)")
    check_transform_factories(
        (default_options or {}).get("experimental_transform"), "chat_route(default_options=...)"
    )
    if agent is None and "{agent_id}" not in path:
        raise ValueError("chat_route: the path needs an {agent_id} parameter, or pass agent=")

    async def endpoint(request: Request) -> Response:
        agent_id = agent or request.path_params["agent_id"]
        raw = await request.body()
        try:
            body = json.loads(raw)
        except ValueError as exc:
            error = ChatRequestError(f"the request body is not valid JSON ({exc})")
            return JSONResponse(error.to_dict(), status_code=error.status_code)
        controller = AbortController()
        try:
            stream = await handle_chat_stream(
                mastra=mastra,
                agent_id=agent_id,
                params=body,
                default_options=default_options,
                experimental_transform=experimental_transform,
                version=version,
                send_start=send_start,
                send_finish=send_finish,
                send_reasoning=send_reasoning,
                send_sources=send_sources,
                on_error=on_error,
                message_metadata=message_metadata,
                abort_signal=controller.signal,
            )
        except ChatRequestError as exc:
            return JSONResponse(exc.to_dict(), status_code=exc.status_code)
        return SSEStreamResponse(stream, controller=controller, heartbeat_ms=heartbeat_ms)

    return Route(path, endpoint, methods=["POST"], name=name)

"""``create_ui_message_stream_response``: the AI SDK's plain SSE response, served by ``SSEStreamResponse``."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from agentstream.ai_sdk import UI_MESSAGE_STREAM_HEADERS, SSEStreamResponse, create_ui_message_stream_response


async def _serve(response: Any, *, disconnect_after: int | None = None) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []
    gone = asyncio.Event()

    async def receive() -> dict[str, Any]:
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)
        bodies = sum(m["type"] == "http.response.body" for m in sent)
        if disconnect_after is not None and bodies >= disconnect_after:
            gone.set()

    await response({"type": "http"}, receive, send)
    return sent


async def test_frames_headers_and_status_as_the_ai_sdk() -> None:
    async def chunks() -> AsyncIterator[dict[str, Any]]:
        yield {"type": "start", "messageId": "m1"}
        yield {"type": "text-delta", "id": "t", "delta": "héllo"}

    response = create_ui_message_stream_response(chunks(), status=201, headers={"X-Trace": "abc"})
    assert isinstance(response, SSEStreamResponse)
    sent = await _serve(response)
    start = sent[0]
    assert start["type"] == "http.response.start" and start["status"] == 201
    headers = {k.decode(): v.decode() for k, v in start["headers"]}
    assert headers == {**UI_MESSAGE_STREAM_HEADERS, "x-trace": "abc"}  # no content-length
    body = b"".join(m["body"] for m in sent[1:])
    assert body == (
        b'data: {"type":"start","messageId":"m1"}\n\n'
        + 'data: {"type":"text-delta","id":"t","delta":"héllo"}\n\n'.encode()
        + b"data: [DONE]\n\n"
    )
    assert sent[-1] == {"type": "http.response.body", "body": b"", "more_body": False}


async def test_a_disconnect_closes_the_stream_and_leaves_no_task() -> None:
    closed = asyncio.Event()

    async def endless() -> AsyncIterator[dict[str, Any]]:
        try:
            while True:
                yield {"type": "text-delta", "id": "t", "delta": "x"}
                await asyncio.sleep(0)
        finally:
            closed.set()

    sent = await _serve(create_ui_message_stream_response(endless()), disconnect_after=3)
    assert closed.is_set()
    assert b": ping\n\n" not in [m.get("body") for m in sent]  # the AI SDK's response has no heartbeat
    assert asyncio.all_tasks() == {asyncio.current_task()}


def _app(middleware: list[Any] | None = None) -> Any:
    from starlette.applications import Starlette
    from starlette.routing import Route

    async def endpoint(request: Any) -> SSEStreamResponse:
        async def chunks() -> AsyncIterator[dict[str, Any]]:
            for i in range(3):
                yield {"type": "text-delta", "id": "t", "delta": f"w{i} "}

        return SSEStreamResponse(chunks(), heartbeat_ms=0)

    return Starlette(routes=[Route("/", endpoint, methods=["POST"])], middleware=middleware)


async def _call(app: Any) -> tuple[list[dict[str, Any]], list[str]]:
    """What the server's ``send`` got, and the names of the ``send`` callables each message came
    through last (the frame of the caller of the server's ``send``)."""
    import sys

    sent: list[dict[str, Any]] = []
    callers: list[str] = []
    done = asyncio.Event()

    async def receive() -> dict[str, Any]:
        if not sent:
            return {"type": "http.request", "body": b"", "more_body": False}
        await done.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)
        callers.append(sys._getframe(1).f_code.co_name)
        if not message.get("more_body", True) and message["type"] == "http.response.body":
            done.set()

    scope = {"type": "http", "method": "POST", "path": "/", "headers": [], "query_string": b""}
    await app(scope, receive, send)
    return sent, callers


async def test_body_frames_skip_only_starlette_s_pass_through_send_wrappers() -> None:
    from starlette.middleware import Middleware

    plain, via = await _call(_app())
    body = b"".join(m.get("body", b"") for m in plain)
    assert (
        body
        == b"".join(f'data: {{"type":"text-delta","id":"t","delta":"w{i} "}}\n\n'.encode() for i in range(3))
        + b"data: [DONE]\n\n"
    )
    # The start came through Starlette's wrappers (their error handling knows the response
    # started); every body frame straight from the response.
    assert via[0] == "_send" and set(via[1:]) == {"_body", "send_all"}

    class Upper:  # a user's middleware that rewrites bodies: it must see every frame
        def __init__(self, app: Any) -> None:
            self.app = app

        async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
            async def upper(message: dict[str, Any]) -> None:
                if message["type"] == "http.response.body":
                    message = {**message, "body": message["body"].upper()}
                await send(message)

            await self.app(scope, receive, upper)

    wrapped, via = await _call(_app([Middleware(Upper)]))
    assert b"".join(m.get("body", b"") for m in wrapped) == body.upper()
    assert set(via) == {"_send"}  # the app's outermost wrapper forwards what `upper` rewrote

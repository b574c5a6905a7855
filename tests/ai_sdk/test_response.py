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

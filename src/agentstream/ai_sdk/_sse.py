"""Server-Sent Events framing of UI message chunks (``createUIMessageStreamResponse`` of ``ai``)."""

from __future__ import annotations

import math
from collections.abc import AsyncIterable, AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

import msgspec

from ..chunks import dumps_wellformed, loads_wellformed, to_jsonable

if TYPE_CHECKING:
    from ._response import SSEStreamResponse

__all__ = [
    "DONE_FRAME",
    "HEARTBEAT_FRAME",
    "UI_MESSAGE_STREAM_HEADERS",
    "StoredUIChunk",
    "assert_valid_heartbeat_ms",
    "create_ui_message_stream_response",
    "decode_ui_chunk",
    "encode_sse",
    "encode_sse_frame",
    "encode_ui_chunk",
]

UI_MESSAGE_STREAM_HEADERS: Mapping[str, str] = {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    "connection": "keep-alive",
    "x-vercel-ai-ui-message-stream": "v1",
    "x-accel-buffering": "no",
}
"""The headers the official ``createUIMessageStreamResponse`` sends."""

DONE_FRAME = b"data: [DONE]\n\n"
HEARTBEAT_FRAME = b": ping\n\n"
"""An SSE comment: keeps proxies from closing an idle stream, ignored by every client."""
_MAX_TIMER_MS = 2_147_483_647


def assert_valid_heartbeat_ms(heartbeat_ms: float) -> None:
    """``heartbeat_ms`` must be a finite number ≤ 2147483647 (``<= 0`` disables heartbeats)."""
    if isinstance(heartbeat_ms, bool) or not isinstance(heartbeat_ms, (int, float)):
        raise TypeError(f"heartbeat_ms must be a number, got {type(heartbeat_ms).__name__}")
    if not math.isfinite(heartbeat_ms) or heartbeat_ms > _MAX_TIMER_MS:
        raise ValueError(f"heartbeat_ms must be a finite number <= {_MAX_TIMER_MS}, got {heartbeat_ms!r}")


_encode = msgspec.json.Encoder().encode


class StoredUIChunk:
    """A UI chunk as `encode_ui_chunk` wrote it to a stream store: its JSON bytes are framed and
    sent as they are, never decoded and encoded again."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data

    def __repr__(self) -> str:
        return f"StoredUIChunk({self.data!r})"


def _dumps(chunk: Any) -> bytes:
    if type(chunk) is StoredUIChunk:
        return chunk.data
    try:
        return _encode(chunk)
    except UnicodeEncodeError:
        # Lone surrogates (a delta cut inside an emoji) cannot be UTF-8: escaped as JavaScript does.
        return dumps_wellformed(chunk)
    except TypeError:
        return dumps_wellformed(to_jsonable(chunk))


def encode_sse_frame(chunk: Any) -> bytes:
    """``data: <compact JSON>\\n\\n`` for one UI chunk (raw UTF-8, keys in their order)."""
    if type(chunk) is StoredUIChunk:
        return b"data: %b\n\n" % chunk.data
    return b"data: " + _dumps(chunk) + b"\n\n"


async def encode_sse(ui_chunks: AsyncIterable[Any]) -> AsyncIterator[bytes]:
    """One SSE frame per UI chunk, then ``data: [DONE]``.

    An exception from ``ui_chunks`` propagates after the frames produced so far (no ``[DONE]``),
    which ends the HTTP response early, as the official server does.
    """
    async for chunk in ui_chunks:
        yield encode_sse_frame(chunk)
    yield DONE_FRAME


def create_ui_message_stream_response(
    stream: AsyncIterable[Any],
    *,
    status: int = 200,
    headers: Mapping[str, str] | None = None,
) -> SSEStreamResponse:
    """A Starlette response streaming ``stream`` (UI chunks) as SSE with the UI stream headers.

    The AI SDK's ``createUIMessageStreamResponse``: the same bytes, no heartbeats; the stream is
    closed when the client goes away. Needs the ``server`` extra (starlette).
    """
    from ._response import SSEStreamResponse

    return SSEStreamResponse(stream, heartbeat_ms=0, status_code=status, headers=headers)


def encode_ui_chunk(chunk: Any) -> bytes:
    """One UI message chunk as compact JSON bytes: an SSE frame's data, or one JSON line."""
    return _dumps(chunk)


def decode_ui_chunk(raw: bytes | str) -> Any:
    """One UI message chunk from the JSON `encode_ui_chunk` wrote (a lone surrogate's escape kept)."""
    return loads_wellformed(raw)

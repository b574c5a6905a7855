"""Bridge to the Vercel AI SDK UI (``useChat``): Mastra's ``@mastra/ai-sdk`` in Python.

* ``to_ai_sdk_stream``: agent chunks → UI message chunks (wire dicts);
* ``encode_sse``, ``UI_MESSAGE_STREAM_HEADERS``, ``create_ui_message_stream_response``:
  the HTTP framing;
* ``convert_ui_messages``: the UI messages a client sends → model messages;
* ``handle_chat_stream``: one chat request against a ``Mastra`` agent.
"""

from __future__ import annotations

from typing import Any

from ..stream import check_transform_factories
from ._chat import (
    MAX_ID_LENGTH,
    AgentRegistry,
    ChatRequestError,
    handle_chat_stream,
    parse_json_body,
)
from ._convert import (
    MessageMetadataFn,
    OnErrorFn,
    StreamTransform,
    TransformFactory,
    UIChunk,
    UIChunkConverter,
    Version,
    to_ai_sdk_stream,
)
from ._errors import UIMessageError, UIMessageStreamError, default_error_text
from ._messages import ChatRequest, convert_ui_messages, parse_chat_request, validate_ui_messages
from ._sse import (
    DONE_FRAME,
    UI_MESSAGE_STREAM_HEADERS,
    create_ui_message_stream_response,
    encode_sse,
    encode_sse_frame,
    encode_ui_chunk,
)

__all__ = [
    "DONE_FRAME",
    "MAX_ID_LENGTH",
    "UI_MESSAGE_STREAM_HEADERS",
    "AgentRegistry",
    "ChatRequest",
    "ChatRequestError",
    "MessageMetadataFn",
    "OnErrorFn",
    "StreamTransform",
    "TransformFactory",
    "UIChunk",
    "UIChunkConverter",
    "UIMessageError",
    "UIMessageStreamError",
    "Version",
    "check_transform_factories",
    "convert_ui_messages",
    "create_ui_message_stream_response",
    "default_error_text",
    "encode_sse",
    "encode_sse_frame",
    "encode_ui_chunk",
    "handle_chat_stream",
    "parse_chat_request",
    "parse_json_body",
    "smooth_stream",
    "to_ai_sdk_stream",
    "validate_ui_messages",
]


def __getattr__(name: str) -> Any:
    # ``smooth_stream`` comes from ``agentstream.stream`` (built separately); resolved on first use so
    # this package imports whether or not it has landed yet.
    if name == "smooth_stream":
        try:
            from agentstream.stream import (  # type: ignore[attr-defined,unused-ignore]
                smooth_stream_factory,
            )
        except ImportError as exc:
            raise AttributeError(
                "agentstream.ai_sdk.smooth_stream needs agentstream.stream.smooth_stream_factory"
            ) from exc
        globals()["smooth_stream"] = smooth_stream_factory
        return smooth_stream_factory
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

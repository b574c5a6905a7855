"""Bridge to the Vercel AI SDK UI (``useChat``): Mastra's ``@mastra/ai-sdk`` in Python.

* ``to_ai_sdk_stream``: agent chunks → UI message chunks (wire dicts);
* ``encode_sse``, ``UI_MESSAGE_STREAM_HEADERS``, ``create_ui_message_stream_response``,
  ``SSEStreamResponse``: the HTTP framing (the responses need the ``server`` extra, starlette);
* ``convert_ui_messages``: the UI messages a client sends → model messages;
* ``handle_chat_stream``: one chat request against a ``Mastra`` agent;
* ``handle_workflow_stream``: start or resume a ``Mastra`` workflow run, as ``data-workflow`` parts
  (``check_workflow_request`` / ``run_workflow_job``: the same, checked here and run elsewhere);
* ``Jobs``: the one job service of an app, for every answer recorded in a stream store (chat
  turns, workflow legs): claim, write (``write_job``), finish, follow, cancel.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..stream import TransformFactory, check_transform_factories
from ._chat import (
    MAX_ID_LENGTH,
    AgentRegistry,
    ChatRequestError,
    check_chat_request,
    handle_chat_stream,
    parse_json_body,
)
from ._convert import (
    MessageMetadataFn,
    OnErrorFn,
    UIChunk,
    UIChunkConverter,
    Version,
    to_ai_sdk_stream,
)
from ._errors import UIMessageError, UIMessageStreamError, default_error_text
from ._jobs import (
    ANSWER_LOST,
    DEFAULT_STOP_TIMEOUT_S,
    STORE_FAILED,
    STORE_UNAVAILABLE,
    JobCanceller,
    Jobs,
    LocalJob,
    end_cancelled,
    end_with_error,
    ends_within,
    write_chunks,
    write_job,
)
from ._messages import ChatRequest, convert_ui_messages, parse_chat_request, validate_ui_messages
from ._sse import (
    DONE_FRAME,
    HEARTBEAT_FRAME,
    UI_MESSAGE_STREAM_HEADERS,
    StoredUIChunk,
    assert_valid_heartbeat_ms,
    create_ui_message_stream_response,
    decode_ui_chunk,
    encode_sse,
    encode_sse_frame,
    encode_ui_chunk,
)
from ._turn import TURN_CANCELLED, end_cancelled_turn, run_chat_turn, turn_chunks
from ._workflow import WorkflowUIChunkConverter, handle_workflow_stream
from ._workflow_request import (
    WorkflowRegistry,
    WorkflowRunSpec,
    WorkflowStreamOptions,
    check_workflow_request,
    end_cancelled_workflow_leg,
    leg_cancelled,
    run_workflow_job,
    run_workflow_spec,
    start_workflow_stream,
)

if TYPE_CHECKING:
    from ._response import SSEStreamResponse

__all__ = [
    "ANSWER_LOST",
    "DEFAULT_STOP_TIMEOUT_S",
    "DONE_FRAME",
    "HEARTBEAT_FRAME",
    "MAX_ID_LENGTH",
    "STORE_FAILED",
    "STORE_UNAVAILABLE",
    "TURN_CANCELLED",
    "UI_MESSAGE_STREAM_HEADERS",
    "AgentRegistry",
    "ChatRequest",
    "ChatRequestError",
    "JobCanceller",
    "Jobs",
    "LocalJob",
    "MessageMetadataFn",
    "OnErrorFn",
    "SSEStreamResponse",
    "StoredUIChunk",
    "TransformFactory",
    "UIChunk",
    "UIChunkConverter",
    "UIMessageError",
    "UIMessageStreamError",
    "Version",
    "WorkflowRegistry",
    "WorkflowRunSpec",
    "WorkflowStreamOptions",
    "WorkflowUIChunkConverter",
    "assert_valid_heartbeat_ms",
    "check_chat_request",
    "check_transform_factories",
    "check_workflow_request",
    "convert_ui_messages",
    "create_ui_message_stream_response",
    "decode_ui_chunk",
    "default_error_text",
    "encode_sse",
    "encode_sse_frame",
    "encode_ui_chunk",
    "end_cancelled",
    "end_cancelled_turn",
    "end_cancelled_workflow_leg",
    "end_with_error",
    "ends_within",
    "handle_chat_stream",
    "handle_workflow_stream",
    "leg_cancelled",
    "parse_chat_request",
    "parse_json_body",
    "run_chat_turn",
    "run_workflow_job",
    "run_workflow_spec",
    "smooth_stream",
    "start_workflow_stream",
    "to_ai_sdk_stream",
    "turn_chunks",
    "validate_ui_messages",
    "write_chunks",
    "write_job",
]


def __getattr__(name: str) -> Any:
    # ``SSEStreamResponse`` subclasses starlette's ``Response``: imported on first use, so this
    # package imports without the ``server`` extra.
    if name == "SSEStreamResponse":
        from ._response import SSEStreamResponse

        globals()[name] = SSEStreamResponse
        return SSEStreamResponse
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

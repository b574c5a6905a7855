"""Agent chunks of tool calls (Mastra's ``AgentChunkType``, spec §1.2): calls, streamed inputs,
results, errors, approvals and suspensions, and the output of a tool that streams.
"""

from __future__ import annotations

from typing import Any

from ._base import UNSET, BaseChunk, Payload, ProviderMetadata

__all__ = [
    "ToolCall",
    "ToolCallApproval",
    "ToolCallApprovalPayload",
    "ToolCallDelta",
    "ToolCallDeltaPayload",
    "ToolCallInputStreamingEnd",
    "ToolCallInputStreamingEndPayload",
    "ToolCallInputStreamingStart",
    "ToolCallInputStreamingStartPayload",
    "ToolCallPayload",
    "ToolCallSuspended",
    "ToolCallSuspendedPayload",
    "ToolError",
    "ToolErrorPayload",
    "ToolOutput",
    "ToolOutputDenied",
    "ToolOutputDeniedPayload",
    "ToolOutputPayload",
    "ToolResult",
    "ToolResultPayload",
]


# --- tools ----------------------------------------------------------------------------------


class ToolCallPayload(Payload, frozen=True):
    """Payload of the `tool-call` chunk (`ToolCall`): the call id, tool name and arguments."""

    tool_call_id: str
    tool_name: str
    args: Any = UNSET
    """Parsed arguments; absent when the provider's JSON could not be parsed or repaired."""
    provider_executed: bool | None = None
    provider_metadata: ProviderMetadata | None = None
    output: Any = UNSET
    dynamic: bool | None = None
    title: str | None = None
    observability: dict[str, Any] | None = None


class ToolCall(BaseChunk, tag="tool-call", frozen=True):
    """`tool-call` chunk: the model called a tool; `payload.args` are the parsed arguments.

    Payload: `ToolCallPayload`.
    """

    payload: ToolCallPayload


class ToolCallInputStreamingStartPayload(Payload, frozen=True):
    """Payload of the `tool-call-input-streaming-start` chunk (`ToolCallInputStreamingStart`): the call id
    and tool name.
    """

    tool_call_id: str
    tool_name: str
    provider_executed: bool | None = None
    provider_metadata: ProviderMetadata | None = None
    dynamic: bool | None = None
    title: str | None = None
    observability: dict[str, Any] | None = None


class ToolCallInputStreamingStart(BaseChunk, tag="tool-call-input-streaming-start", frozen=True):
    """`tool-call-input-streaming-start` chunk: the model began streaming a tool call's arguments.

    Payload: `ToolCallInputStreamingStartPayload`.
    """

    payload: ToolCallInputStreamingStartPayload


# gc=False: one per token and never in a cycle; tracked, a long log costs every collection a walk
# over all of it (docs/decisions/issue-29-token-path.md).
class ToolCallDeltaPayload(Payload, frozen=True, gc=False):
    """Payload of the `tool-call-delta` chunk (`ToolCallDelta`): the call id and the next piece of argument
    text.
    """

    args_text_delta: str
    tool_call_id: str
    provider_metadata: ProviderMetadata | None = None
    tool_name: str | None = None


# gc=False: one per token and never in a cycle; tracked, a long log costs every collection a walk
# over all of it (docs/decisions/issue-29-token-path.md).
class ToolCallDelta(BaseChunk, tag="tool-call-delta", frozen=True, gc=False):
    """`tool-call-delta` chunk: a piece of a tool call's argument JSON as the model writes it.

    Payload: `ToolCallDeltaPayload`.
    """

    payload: ToolCallDeltaPayload


class ToolCallInputStreamingEndPayload(Payload, frozen=True):
    """Payload of the `tool-call-input-streaming-end` chunk (`ToolCallInputStreamingEnd`): the call id."""

    tool_call_id: str
    provider_metadata: ProviderMetadata | None = None


class ToolCallInputStreamingEnd(BaseChunk, tag="tool-call-input-streaming-end", frozen=True):
    """`tool-call-input-streaming-end` chunk: a tool call's arguments are complete.

    Payload: `ToolCallInputStreamingEndPayload`.
    """

    payload: ToolCallInputStreamingEndPayload


class ToolResultPayload(Payload, frozen=True):
    """Payload of the `tool-result` chunk (`ToolResult`): the call id, tool name, result and whether it is an
    error.
    """

    tool_call_id: str
    tool_name: str
    result: Any
    is_error: bool | None = None
    provider_executed: bool | None = None
    provider_metadata: ProviderMetadata | None = None
    args: Any = UNSET
    dynamic: bool | None = None


class ToolResult(BaseChunk, tag="tool-result", frozen=True):
    """`tool-result` chunk: a tool returned; `payload.result` is what it returned.

    Payload: `ToolResultPayload`.
    """

    payload: ToolResultPayload


class ToolErrorPayload(Payload, frozen=True):
    """Payload of the `tool-error` chunk (`ToolError`): the call id, tool name and the error."""

    tool_call_id: str
    tool_name: str
    error: Any
    id: str | None = None
    provider_metadata: ProviderMetadata | None = None
    args: Any = UNSET
    provider_executed: bool | None = None


class ToolError(BaseChunk, tag="tool-error", frozen=True):
    """`tool-error` chunk: a tool raised; `payload.error` describes the failure.

    Payload: `ToolErrorPayload`.
    """

    payload: ToolErrorPayload


class ToolOutputDeniedPayload(Payload, frozen=True):
    """Payload of the `tool-output-denied` chunk (`ToolOutputDenied`): the call id, tool name and the
    approval decision.
    """

    tool_call_id: str
    tool_name: str
    approval: dict[str, Any]
    """``{id, approved: false, reason?}``"""
    args: Any = UNSET


class ToolOutputDenied(BaseChunk, tag="tool-output-denied", frozen=True):
    """`tool-output-denied` chunk: a tool call that needed approval was declined.

    Payload: `ToolOutputDeniedPayload`.
    """

    payload: ToolOutputDeniedPayload


class ToolCallApprovalPayload(Payload, frozen=True):
    """Payload of the `tool-call-approval` chunk (`ToolCallApproval`): the call id, tool name, arguments and
    the JSON Schema of the resume data.
    """

    tool_call_id: str
    tool_name: str
    args: dict[str, Any]
    resume_schema: str
    """JSON Schema of the resume data, as a JSON string."""


class ToolCallApproval(BaseChunk, tag="tool-call-approval", frozen=True):
    """`tool-call-approval` chunk: a tool call waits for approval before it runs.

    Payload: `ToolCallApprovalPayload`.
    """

    payload: ToolCallApprovalPayload


class ToolCallSuspendedPayload(Payload, frozen=True):
    """Payload of the `tool-call-suspended` chunk (`ToolCallSuspended`): the call id, tool name, the suspend
    payload and the resume schema.
    """

    tool_call_id: str
    tool_name: str
    suspend_payload: Any
    args: Any = UNSET
    resume_schema: str | None = None


class ToolCallSuspended(BaseChunk, tag="tool-call-suspended", frozen=True):
    """`tool-call-suspended` chunk: a tool suspended itself and waits for resume data.

    Payload: `ToolCallSuspendedPayload`.
    """

    payload: ToolCallSuspendedPayload


class ToolOutputPayload(Payload, frozen=True):
    """``tool-output``: ``output`` is what the tool wrote, often a nested chunk (sub-agents)."""

    output: Any
    tool_call_id: str
    tool_name: str | None = None


class ToolOutput(BaseChunk, tag="tool-output", frozen=True):
    """`tool-output` chunk: something a tool wrote while running (often a nested agent's chunk).

    Payload: `ToolOutputPayload`.
    """

    payload: ToolOutputPayload

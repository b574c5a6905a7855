"""Agent chunks (Mastra's ``AgentChunkType``) and their payloads, spec §1.2.

One class per ``type``; payload classes carry the exact field names of the TypeScript types
(snake_case here, camelCase on the wire). Open bags that Mastra types as ``Record<string, unknown>``
(step results, usage, request bodies) stay plain JSON dicts with their wire keys.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar, Literal

from ._base import UNSET, BaseChunk, Payload, ProviderMetadata

__all__ = [
    "Abort",
    "AbortPayload",
    "BackgroundTaskCancelled",
    "BackgroundTaskCancelledPayload",
    "BackgroundTaskCompleted",
    "BackgroundTaskCompletedPayload",
    "BackgroundTaskFailed",
    "BackgroundTaskFailedPayload",
    "BackgroundTaskOutput",
    "BackgroundTaskOutputPayload",
    "BackgroundTaskProgress",
    "BackgroundTaskProgressPayload",
    "BackgroundTaskResumed",
    "BackgroundTaskResumedPayload",
    "BackgroundTaskRunning",
    "BackgroundTaskRunningPayload",
    "BackgroundTaskStarted",
    "BackgroundTaskStartedPayload",
    "BackgroundTaskSuspended",
    "BackgroundTaskSuspendedPayload",
    "Custom",
    "CustomPayload",
    "Error",
    "ErrorPayload",
    "File",
    "FilePayload",
    "Finish",
    "FinishPayload",
    "Goal",
    "GoalPayload",
    "IsTaskComplete",
    "IsTaskCompletePayload",
    "Object",
    "ObjectResult",
    "Raw",
    "RawPayload",
    "ReasoningDelta",
    "ReasoningDeltaPayload",
    "ReasoningEnd",
    "ReasoningEndPayload",
    "ReasoningFile",
    "ReasoningFilePayload",
    "ReasoningSignature",
    "ReasoningSignaturePayload",
    "ReasoningStart",
    "ReasoningStartPayload",
    "RedactedReasoning",
    "RedactedReasoningPayload",
    "ResponseMetadata",
    "ResponseMetadataPayload",
    "Source",
    "SourcePayload",
    "Start",
    "StartPayload",
    "StepFinish",
    "StepFinishPayload",
    "StepOutput",
    "StepOutputPayload",
    "StepStart",
    "StepStartPayload",
    "TextDelta",
    "TextDeltaPayload",
    "TextEnd",
    "TextEndPayload",
    "TextStart",
    "TextStartPayload",
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
    "Tripwire",
    "TripwirePayload",
    "Watch",
    "WatchPayload",
]


# --- run and step framing -------------------------------------------------------------------


class StartPayload(Payload, frozen=True):
    """``start``: ``{id: agentId, messageId}`` at runtime; the type is an open record."""

    id: str | None = None
    message_id: str | None = None


class Start(BaseChunk, tag="start", frozen=True):
    payload: StartPayload


class StepStartPayload(Payload, frozen=True):
    """``step-start``: emitted once per model call."""

    request: dict[str, Any]
    """``{body?: string, ...}``: the provider request."""
    message_id: str | None = None
    started_at: int | float | None = None
    """Epoch milliseconds taken just before the provider call."""
    input_messages: list[Any] | None = None
    warnings: list[Any] | None = None


class StepStart(BaseChunk, tag="step-start", frozen=True):
    payload: StepStartPayload


class ResponseMetadataPayload(Payload, frozen=True):
    """Spread of the provider's ``response-metadata`` part (``id``, ``timestamp``, ``modelId``...)."""

    signature: str | None = None


class ResponseMetadata(BaseChunk, tag="response-metadata", frozen=True):
    payload: ResponseMetadataPayload


class StepFinishPayload(Payload, frozen=True):
    """``step-finish``: the iteration's ``LLMIterationData``."""

    step_result: dict[str, Any]
    """``{reason, rawReason?, warnings?, isContinued?, logprobs?, ...}``"""
    output: dict[str, Any]
    """``{text?, toolCalls?, usage, steps?, object?, ...}``"""
    metadata: dict[str, Any]
    id: str | None = None
    provider_metadata: ProviderMetadata | None = None
    total_usage: dict[str, Any] | None = None
    response: dict[str, Any] | None = None
    message_id: str | None = None
    messages: dict[str, Any] | None = None

    @property
    def reason(self) -> str | None:
        reason = self.step_result.get("reason")
        return reason if isinstance(reason, str) else None


class StepFinish(BaseChunk, tag="step-finish", frozen=True):
    payload: StepFinishPayload


class FinishPayload(Payload, frozen=True):
    """``finish``: one per run on the outer stream, usage overwritten with the run's aggregate."""

    step_result: dict[str, Any]
    output: dict[str, Any]
    metadata: dict[str, Any]
    messages: dict[str, Any] | None = None
    provider_metadata: ProviderMetadata | None = None
    response: dict[str, Any] | None = None

    @property
    def reason(self) -> str | None:
        reason = self.step_result.get("reason")
        return reason if isinstance(reason, str) else None


class Finish(BaseChunk, tag="finish", frozen=True):
    payload: FinishPayload


class ErrorPayload(Payload, frozen=True):
    """``error``: ``error`` may be an exception (written as ``{name, message}``) or any JSON value."""

    error: Any


class Error(BaseChunk, tag="error", frozen=True):
    payload: ErrorPayload


class RawPayload(Payload, frozen=True):
    """``raw``: the provider's raw value; all of it lives in ``extra``."""


class Raw(BaseChunk, tag="raw", frozen=True):
    payload: RawPayload


class AbortPayload(Payload, frozen=True):
    """``abort``: always ``{}``."""


class Abort(BaseChunk, tag="abort", frozen=True):
    payload: AbortPayload = AbortPayload()


class WatchPayload(Payload, frozen=True):
    """``watch``: declared by Mastra, open record."""


class Watch(BaseChunk, tag="watch", frozen=True):
    payload: WatchPayload


class StepOutputPayload(Payload, frozen=True):
    output: Any


class StepOutput(BaseChunk, tag="step-output", frozen=True):
    payload: StepOutputPayload


# --- text and reasoning ---------------------------------------------------------------------


class TextStartPayload(Payload, frozen=True):
    id: str
    provider_metadata: ProviderMetadata | None = None


class TextStart(BaseChunk, tag="text-start", frozen=True):
    payload: TextStartPayload


class TextDeltaPayload(Payload, frozen=True):
    id: str
    text: str
    provider_metadata: ProviderMetadata | None = None


class TextDelta(BaseChunk, tag="text-delta", frozen=True):
    payload: TextDeltaPayload


class TextEndPayload(Payload, frozen=True):
    """``text-end``: the raw provider part, so ``extra`` usually holds ``{"type": "text-end"}``."""

    id: str
    provider_metadata: ProviderMetadata | None = None


class TextEnd(BaseChunk, tag="text-end", frozen=True):
    payload: TextEndPayload


class ReasoningStartPayload(Payload, frozen=True):
    id: str
    provider_metadata: ProviderMetadata | None = None
    signature: str | None = None


class ReasoningStart(BaseChunk, tag="reasoning-start", frozen=True):
    payload: ReasoningStartPayload


class ReasoningDeltaPayload(Payload, frozen=True):
    id: str
    text: str
    provider_metadata: ProviderMetadata | None = None


class ReasoningDelta(BaseChunk, tag="reasoning-delta", frozen=True):
    payload: ReasoningDeltaPayload


class ReasoningEndPayload(Payload, frozen=True):
    id: str
    provider_metadata: ProviderMetadata | None = None
    signature: str | None = None


class ReasoningEnd(BaseChunk, tag="reasoning-end", frozen=True):
    payload: ReasoningEndPayload


class ReasoningSignaturePayload(Payload, frozen=True):
    id: str
    signature: str
    provider_metadata: ProviderMetadata | None = None


class ReasoningSignature(BaseChunk, tag="reasoning-signature", frozen=True):
    payload: ReasoningSignaturePayload


class RedactedReasoningPayload(Payload, frozen=True):
    id: str
    data: Any
    provider_metadata: ProviderMetadata | None = None


class RedactedReasoning(BaseChunk, tag="redacted-reasoning", frozen=True):
    payload: RedactedReasoningPayload


# --- sources, files, custom -----------------------------------------------------------------


class SourcePayload(Payload, frozen=True):
    id: str
    source_type: Literal["url", "document"]
    title: str
    mime_type: str | None = None
    filename: str | None = None
    url: str | None = None
    provider_metadata: ProviderMetadata | None = None


class Source(BaseChunk, tag="source", frozen=True):
    payload: SourcePayload


class FilePayload(Payload, frozen=True):
    """``file``: ``data`` is a base64/URL string or ``bytes`` (written as base64)."""

    data: Any
    mime_type: str
    base64: str | None = None
    filename: str | None = None
    provider_metadata: ProviderMetadata | None = None


class File(BaseChunk, tag="file", frozen=True):
    payload: FilePayload


class ReasoningFilePayload(Payload, frozen=True):
    data: Any
    mime_type: str
    base64: str | None = None
    provider_metadata: ProviderMetadata | None = None


class ReasoningFile(BaseChunk, tag="reasoning-file", frozen=True):
    payload: ReasoningFilePayload


class CustomPayload(Payload, frozen=True):
    kind: str
    """``'{provider}.{type}'``"""
    provider_metadata: ProviderMetadata | None = None


class Custom(BaseChunk, tag="custom", frozen=True):
    payload: CustomPayload


# --- tools ----------------------------------------------------------------------------------


class ToolCallPayload(Payload, frozen=True):
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
    payload: ToolCallPayload


class ToolCallInputStreamingStartPayload(Payload, frozen=True):
    tool_call_id: str
    tool_name: str
    provider_executed: bool | None = None
    provider_metadata: ProviderMetadata | None = None
    dynamic: bool | None = None
    title: str | None = None
    observability: dict[str, Any] | None = None


class ToolCallInputStreamingStart(BaseChunk, tag="tool-call-input-streaming-start", frozen=True):
    payload: ToolCallInputStreamingStartPayload


class ToolCallDeltaPayload(Payload, frozen=True):
    args_text_delta: str
    tool_call_id: str
    provider_metadata: ProviderMetadata | None = None
    tool_name: str | None = None


class ToolCallDelta(BaseChunk, tag="tool-call-delta", frozen=True):
    payload: ToolCallDeltaPayload


class ToolCallInputStreamingEndPayload(Payload, frozen=True):
    tool_call_id: str
    provider_metadata: ProviderMetadata | None = None


class ToolCallInputStreamingEnd(BaseChunk, tag="tool-call-input-streaming-end", frozen=True):
    payload: ToolCallInputStreamingEndPayload


class ToolResultPayload(Payload, frozen=True):
    tool_call_id: str
    tool_name: str
    result: Any
    is_error: bool | None = None
    provider_executed: bool | None = None
    provider_metadata: ProviderMetadata | None = None
    args: Any = UNSET
    dynamic: bool | None = None


class ToolResult(BaseChunk, tag="tool-result", frozen=True):
    payload: ToolResultPayload


class ToolErrorPayload(Payload, frozen=True):
    tool_call_id: str
    tool_name: str
    error: Any
    id: str | None = None
    provider_metadata: ProviderMetadata | None = None
    args: Any = UNSET
    provider_executed: bool | None = None


class ToolError(BaseChunk, tag="tool-error", frozen=True):
    payload: ToolErrorPayload


class ToolOutputDeniedPayload(Payload, frozen=True):
    tool_call_id: str
    tool_name: str
    approval: dict[str, Any]
    """``{id, approved: false, reason?}``"""
    args: Any = UNSET


class ToolOutputDenied(BaseChunk, tag="tool-output-denied", frozen=True):
    payload: ToolOutputDeniedPayload


class ToolCallApprovalPayload(Payload, frozen=True):
    tool_call_id: str
    tool_name: str
    args: dict[str, Any]
    resume_schema: str
    """JSON Schema of the resume data, as a JSON string."""


class ToolCallApproval(BaseChunk, tag="tool-call-approval", frozen=True):
    payload: ToolCallApprovalPayload


class ToolCallSuspendedPayload(Payload, frozen=True):
    tool_call_id: str
    tool_name: str
    suspend_payload: Any
    args: Any = UNSET
    resume_schema: str | None = None


class ToolCallSuspended(BaseChunk, tag="tool-call-suspended", frozen=True):
    payload: ToolCallSuspendedPayload


class ToolOutputPayload(Payload, frozen=True):
    """``tool-output``: ``output`` is what the tool wrote, often a nested chunk (sub-agents)."""

    output: Any
    tool_call_id: str
    tool_name: str | None = None


class ToolOutput(BaseChunk, tag="tool-output", frozen=True):
    payload: ToolOutputPayload


# --- structured output ----------------------------------------------------------------------


class Object(BaseChunk, tag="object", frozen=True):
    """``object``: a partial structured-output value, at top level (no payload)."""

    object: Any


class ObjectResult(BaseChunk, tag="object-result", frozen=True):
    """``object-result``: the validated value; ``metadata["fallback"]`` when the fallback was used."""

    object: Any


# --- processors, goals, completion checks ---------------------------------------------------


class TripwirePayload(Payload, frozen=True):
    reason: str
    retry: bool | None = None
    metadata: Any = UNSET
    processor_id: str | None = None


class Tripwire(BaseChunk, tag="tripwire", frozen=True):
    payload: TripwirePayload


class IsTaskCompletePayload(Payload, frozen=True):
    iteration: int
    passed: bool
    results: list[Any]
    duration: float
    timed_out: bool
    max_iteration_reached: bool
    suppress_feedback: bool
    reason: str | None = None


class IsTaskComplete(BaseChunk, tag="is-task-complete", frozen=True):
    payload: IsTaskCompletePayload


class GoalPayload(Payload, frozen=True):
    """``goal``: ``GoalEvaluationPayload`` (spec §6); fields beyond these live in ``extra``."""

    should_continue: bool | None = None
    pending: bool | None = None
    suppress_feedback: bool | None = None
    reason: str | None = None


class Goal(BaseChunk, tag="goal", frozen=True):
    payload: GoalPayload


# --- background tasks -----------------------------------------------------------------------


class BackgroundTaskStartedPayload(Payload, frozen=True):
    task_id: str
    tool_name: str
    tool_call_id: str


class BackgroundTaskStarted(BaseChunk, tag="background-task-started", frozen=True):
    payload: BackgroundTaskStartedPayload


class BackgroundTaskRunningPayload(Payload, frozen=True):
    task_id: str
    tool_name: str
    tool_call_id: str
    run_id: str
    agent_id: str
    started_at: datetime
    args: dict[str, Any]
    _date_fields: ClassVar[tuple[str, ...]] = ("started_at",)


class BackgroundTaskRunning(BaseChunk, tag="background-task-running", frozen=True):
    payload: BackgroundTaskRunningPayload


class BackgroundTaskProgressPayload(Payload, frozen=True):
    task_ids: list[str]
    running_count: int
    elapsed_ms: int | float


class BackgroundTaskProgress(BaseChunk, tag="background-task-progress", frozen=True):
    payload: BackgroundTaskProgressPayload


class BackgroundTaskOutputPayload(Payload, frozen=True):
    task_id: str
    tool_name: str
    tool_call_id: str
    run_id: str
    agent_id: str
    payload: Any
    """The ``tool-output`` chunk the tool wrote, as a wire dict."""


class BackgroundTaskOutput(BaseChunk, tag="background-task-output", frozen=True):
    payload: BackgroundTaskOutputPayload


class BackgroundTaskCompletedPayload(Payload, frozen=True):
    task_id: str
    tool_name: str
    tool_call_id: str
    agent_id: str
    result: Any
    run_id: str
    completed_at: datetime
    is_error: bool | None = None
    _date_fields: ClassVar[tuple[str, ...]] = ("completed_at",)


class BackgroundTaskCompleted(BaseChunk, tag="background-task-completed", frozen=True):
    payload: BackgroundTaskCompletedPayload


class BackgroundTaskFailedPayload(Payload, frozen=True):
    task_id: str
    tool_name: str
    tool_call_id: str
    run_id: str
    agent_id: str
    error: dict[str, Any]
    """``{message: string}``"""
    completed_at: datetime
    _date_fields: ClassVar[tuple[str, ...]] = ("completed_at",)


class BackgroundTaskFailed(BaseChunk, tag="background-task-failed", frozen=True):
    payload: BackgroundTaskFailedPayload


class BackgroundTaskSuspendedPayload(Payload, frozen=True):
    task_id: str
    tool_name: str
    tool_call_id: str
    run_id: str
    agent_id: str
    args: dict[str, Any]
    suspend_payload: Any = UNSET
    suspended_at: datetime | None = None
    _date_fields: ClassVar[tuple[str, ...]] = ("suspended_at",)


class BackgroundTaskSuspended(BaseChunk, tag="background-task-suspended", frozen=True):
    payload: BackgroundTaskSuspendedPayload


class BackgroundTaskResumedPayload(Payload, frozen=True):
    task_id: str
    tool_name: str
    tool_call_id: str
    run_id: str
    agent_id: str
    started_at: datetime
    args: dict[str, Any]
    _date_fields: ClassVar[tuple[str, ...]] = ("started_at",)


class BackgroundTaskResumed(BaseChunk, tag="background-task-resumed", frozen=True):
    payload: BackgroundTaskResumedPayload


class BackgroundTaskCancelledPayload(Payload, frozen=True):
    task_id: str
    tool_name: str
    tool_call_id: str
    run_id: str
    agent_id: str
    completed_at: datetime
    _date_fields: ClassVar[tuple[str, ...]] = ("completed_at",)


class BackgroundTaskCancelled(BaseChunk, tag="background-task-cancelled", frozen=True):
    payload: BackgroundTaskCancelledPayload

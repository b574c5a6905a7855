"""Agent chunks (Mastra's ``AgentChunkType``) and their payloads, spec §1.2.

One class per ``type``; payload classes carry the exact field names of the TypeScript types
(snake_case here, camelCase on the wire). Open bags that Mastra types as ``Record<string, unknown>``
(step results, usage, request bodies) stay plain JSON dicts with their wire keys.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar, Literal

import msgspec

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
    """`start` chunk: the first chunk of a run.

    Payload: `StartPayload`.
    """

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
    """`step-start` chunk: a model call (one step of the loop) begins.

    Payload: `StepStartPayload`.
    """

    payload: StepStartPayload


class ResponseMetadataPayload(Payload, frozen=True):
    """Spread of the provider's ``response-metadata`` part (``id``, ``timestamp``, ``modelId``...)."""

    signature: str | None = None


class ResponseMetadata(BaseChunk, tag="response-metadata", frozen=True):
    """`response-metadata` chunk: the provider's response id, timestamp and model id for the current step.

    Payload: `ResponseMetadataPayload`.
    """

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
        """The step's finish reason (`"stop"`, `"tool-calls"`, `"length"`, ...) or `None`."""
        reason = self.step_result.get("reason")
        return reason if isinstance(reason, str) else None


class StepFinish(BaseChunk, tag="step-finish", frozen=True):
    """`step-finish` chunk: a model call ended; carries the step's finish reason, usage and output.

    Payload: `StepFinishPayload`.
    """

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
        """The run's finish reason (`"stop"`, `"tool-calls"`, `"length"`, ...) or `None`."""
        reason = self.step_result.get("reason")
        return reason if isinstance(reason, str) else None


class Finish(BaseChunk, tag="finish", frozen=True):
    """`finish` chunk: the last chunk of a successful run; `payload.reason` is the finish reason.

    Payload: `FinishPayload`.
    """

    payload: FinishPayload


class ErrorPayload(Payload, frozen=True):
    """``error``: ``error`` may be an exception (written as ``{name, message}``) or any JSON value."""

    error: Any


class Error(BaseChunk, tag="error", frozen=True):
    """`error` chunk: the run failed; the error is in `payload.error`.

    Payload: `ErrorPayload`.
    """

    payload: ErrorPayload


class RawPayload(Payload, frozen=True):
    """``raw``: the provider's raw value; all of it lives in ``extra``."""


class Raw(BaseChunk, tag="raw", frozen=True):
    """`raw` chunk: a raw provider event, passed through when raw chunks are requested.

    Payload: `RawPayload`.
    """

    payload: RawPayload


class AbortPayload(Payload, frozen=True):
    """``abort``: always ``{}``."""


class Abort(BaseChunk, tag="abort", frozen=True):
    """`abort` chunk: the run was aborted (an `AbortSignal` fired or the consumer went away).

    Payload: `AbortPayload`.
    """

    # A factory, not a default value: ``omit_defaults`` would drop an equal default, and Mastra
    # always sends ``"payload": {}``.
    payload: AbortPayload = msgspec.field(default_factory=AbortPayload)


class WatchPayload(Payload, frozen=True):
    """``watch``: declared by Mastra, open record."""


class Watch(BaseChunk, tag="watch", frozen=True):
    """`watch` chunk: a watch event (declared by Mastra, an open record).

    Payload: `WatchPayload`.
    """

    payload: WatchPayload


class StepOutputPayload(Payload, frozen=True):
    """Payload of the `step-output` chunk (`StepOutput`): the nested chunk in `output`."""

    output: Any


class StepOutput(BaseChunk, tag="step-output", frozen=True):
    """`step-output` chunk: a chunk produced by a nested run (a workflow step), wrapped whole in
    `payload.output`.

    Payload: `StepOutputPayload`.
    """

    payload: StepOutputPayload


# --- text and reasoning ---------------------------------------------------------------------


class TextStartPayload(Payload, frozen=True):
    """Payload of the `text-start` chunk (`TextStart`): the text part's id and provider metadata."""

    id: str
    provider_metadata: ProviderMetadata | None = None


class TextStart(BaseChunk, tag="text-start", frozen=True):
    """`text-start` chunk: a text part with id `payload.id` begins.

    Payload: `TextStartPayload`.
    """

    payload: TextStartPayload


class TextDeltaPayload(Payload, frozen=True):
    """Payload of the `text-delta` chunk (`TextDelta`): the text part's id and the new text."""

    id: str
    text: str
    provider_metadata: ProviderMetadata | None = None


class TextDelta(BaseChunk, tag="text-delta", frozen=True):
    """`text-delta` chunk: a piece of the answer's text (`payload.text`) for text part `payload.id`.

    Payload: `TextDeltaPayload`.
    """

    payload: TextDeltaPayload


class TextEndPayload(Payload, frozen=True):
    """``text-end``: the raw provider part, so ``extra`` usually holds ``{"type": "text-end"}``."""

    id: str
    provider_metadata: ProviderMetadata | None = None


class TextEnd(BaseChunk, tag="text-end", frozen=True):
    """`text-end` chunk: text part `payload.id` is complete.

    Payload: `TextEndPayload`.
    """

    payload: TextEndPayload


class ReasoningStartPayload(Payload, frozen=True):
    """Payload of the `reasoning-start` chunk (`ReasoningStart`): the reasoning part's id, provider metadata
    and signature.
    """

    id: str
    provider_metadata: ProviderMetadata | None = None
    signature: str | None = None


class ReasoningStart(BaseChunk, tag="reasoning-start", frozen=True):
    """`reasoning-start` chunk: a reasoning (thinking) part begins.

    Payload: `ReasoningStartPayload`.
    """

    payload: ReasoningStartPayload


class ReasoningDeltaPayload(Payload, frozen=True):
    """Payload of the `reasoning-delta` chunk (`ReasoningDelta`): the reasoning part's id and the new text."""

    id: str
    text: str
    provider_metadata: ProviderMetadata | None = None


class ReasoningDelta(BaseChunk, tag="reasoning-delta", frozen=True):
    """`reasoning-delta` chunk: a piece of the model's reasoning text.

    Payload: `ReasoningDeltaPayload`.
    """

    payload: ReasoningDeltaPayload


class ReasoningEndPayload(Payload, frozen=True):
    """Payload of the `reasoning-end` chunk (`ReasoningEnd`): the reasoning part's id, provider metadata and
    signature.
    """

    id: str
    provider_metadata: ProviderMetadata | None = None
    signature: str | None = None


class ReasoningEnd(BaseChunk, tag="reasoning-end", frozen=True):
    """`reasoning-end` chunk: a reasoning part is complete.

    Payload: `ReasoningEndPayload`.
    """

    payload: ReasoningEndPayload


class ReasoningSignaturePayload(Payload, frozen=True):
    """Payload of the `reasoning-signature` chunk (`ReasoningSignature`): the reasoning part's id and its
    signature.
    """

    id: str
    signature: str
    provider_metadata: ProviderMetadata | None = None


class ReasoningSignature(BaseChunk, tag="reasoning-signature", frozen=True):
    """`reasoning-signature` chunk: the provider's signature of a reasoning part (Anthropic thinking).

    Payload: `ReasoningSignaturePayload`.
    """

    payload: ReasoningSignaturePayload


class RedactedReasoningPayload(Payload, frozen=True):
    """Payload of the `redacted-reasoning` chunk (`RedactedReasoning`): the part's id and the provider's
    opaque data.
    """

    id: str
    data: Any
    provider_metadata: ProviderMetadata | None = None


class RedactedReasoning(BaseChunk, tag="redacted-reasoning", frozen=True):
    """`redacted-reasoning` chunk: reasoning the provider redacted; only its opaque data is passed on.

    Payload: `RedactedReasoningPayload`.
    """

    payload: RedactedReasoningPayload


# --- sources, files, custom -----------------------------------------------------------------


class SourcePayload(Payload, frozen=True):
    """Payload of the `source` chunk (`Source`): the source's id, kind (`url` or `document`), title and URL
    or file details.
    """

    id: str
    source_type: Literal["url", "document"]
    title: str
    mime_type: str | None = None
    filename: str | None = None
    url: str | None = None
    provider_metadata: ProviderMetadata | None = None


class Source(BaseChunk, tag="source", frozen=True):
    """`source` chunk: a URL or document the model cited.

    Payload: `SourcePayload`.
    """

    payload: SourcePayload


class FilePayload(Payload, frozen=True):
    """``file``: ``data`` is a base64/URL string or ``bytes`` (written as base64)."""

    data: Any
    mime_type: str
    base64: str | None = None
    filename: str | None = None
    provider_metadata: ProviderMetadata | None = None


class File(BaseChunk, tag="file", frozen=True):
    """`file` chunk: a file the model produced (an image, for instance).

    Payload: `FilePayload`.
    """

    payload: FilePayload


class ReasoningFilePayload(Payload, frozen=True):
    """Payload of the `reasoning-file` chunk (`ReasoningFile`): the file data (base64, URL or bytes) and its
    media type.
    """

    data: Any
    mime_type: str
    base64: str | None = None
    provider_metadata: ProviderMetadata | None = None


class ReasoningFile(BaseChunk, tag="reasoning-file", frozen=True):
    """`reasoning-file` chunk: a file produced as part of the model's reasoning.

    Payload: `ReasoningFilePayload`.
    """

    payload: ReasoningFilePayload


class CustomPayload(Payload, frozen=True):
    """Payload of the `custom` chunk (`Custom`): its kind and provider metadata."""

    kind: str
    """``'{provider}.{type}'``"""
    provider_metadata: ProviderMetadata | None = None


class Custom(BaseChunk, tag="custom", frozen=True):
    """`custom` chunk: a provider-specific part (`payload.kind` is `'{provider}.{type}'`).

    Payload: `CustomPayload`.
    """

    payload: CustomPayload


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


class ToolCallDeltaPayload(Payload, frozen=True):
    """Payload of the `tool-call-delta` chunk (`ToolCallDelta`): the call id and the next piece of argument
    text.
    """

    args_text_delta: str
    tool_call_id: str
    provider_metadata: ProviderMetadata | None = None
    tool_name: str | None = None


class ToolCallDelta(BaseChunk, tag="tool-call-delta", frozen=True):
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


# --- structured output ----------------------------------------------------------------------


class Object(BaseChunk, tag="object", frozen=True):
    """``object``: a partial structured-output value, at top level (no payload)."""

    object: Any


class ObjectResult(BaseChunk, tag="object-result", frozen=True):
    """``object-result``: the validated value; ``metadata["fallback"]`` when the fallback was used."""

    object: Any


# --- processors, goals, completion checks ---------------------------------------------------


class TripwirePayload(Payload, frozen=True):
    """Payload of the `tripwire` chunk (`Tripwire`): the reason, whether a retry is allowed and the
    processor's id.
    """

    reason: str
    retry: bool | None = None
    metadata: Any = UNSET
    processor_id: str | None = None


class Tripwire(BaseChunk, tag="tripwire", frozen=True):
    """`tripwire` chunk: a processor stopped the run (a guardrail tripped).

    Payload: `TripwirePayload`.
    """

    payload: TripwirePayload


class IsTaskCompletePayload(Payload, frozen=True):
    """Payload of the `is-task-complete` chunk (`IsTaskComplete`): the iteration, whether the checks passed,
    their results and timing.
    """

    iteration: int
    passed: bool
    results: list[Any]
    duration: float
    timed_out: bool
    max_iteration_reached: bool
    suppress_feedback: bool
    reason: str | None = None


class IsTaskComplete(BaseChunk, tag="is-task-complete", frozen=True):
    """`is-task-complete` chunk: the result of a task-completion check between iterations.

    Payload: `IsTaskCompletePayload`.
    """

    payload: IsTaskCompletePayload


class GoalPayload(Payload, frozen=True):
    """``goal``: ``GoalEvaluationPayload`` (spec §6); fields beyond these live in ``extra``."""

    should_continue: bool | None = None
    pending: bool | None = None
    suppress_feedback: bool | None = None
    reason: str | None = None


class Goal(BaseChunk, tag="goal", frozen=True):
    """`goal` chunk: a goal evaluation: should the agent keep going.

    Payload: `GoalPayload`.
    """

    payload: GoalPayload


# --- background tasks -----------------------------------------------------------------------


class BackgroundTaskStartedPayload(Payload, frozen=True):
    """Payload of the `background-task-started` chunk (`BackgroundTaskStarted`): the task id, tool name and
    call id.
    """

    task_id: str
    tool_name: str
    tool_call_id: str


class BackgroundTaskStarted(BaseChunk, tag="background-task-started", frozen=True):
    """`background-task-started` chunk: a tool call was handed to the background-task manager; a placeholder
    result follows.

    Payload: `BackgroundTaskStartedPayload`.
    """

    payload: BackgroundTaskStartedPayload


class BackgroundTaskRunningPayload(Payload, frozen=True):
    """Payload of the `background-task-running` chunk (`BackgroundTaskRunning`): the task's ids, arguments
    and start time.
    """

    task_id: str
    tool_name: str
    tool_call_id: str
    run_id: str
    agent_id: str
    started_at: datetime
    args: dict[str, Any]
    _date_fields: ClassVar[tuple[str, ...]] = ("started_at",)


class BackgroundTaskRunning(BaseChunk, tag="background-task-running", frozen=True):
    """`background-task-running` chunk: a background task started executing.

    Payload: `BackgroundTaskRunningPayload`.
    """

    payload: BackgroundTaskRunningPayload


class BackgroundTaskProgressPayload(Payload, frozen=True):
    """Payload of the `background-task-progress` chunk (`BackgroundTaskProgress`): the running task ids, how
    many run and the elapsed milliseconds.
    """

    task_ids: list[str]
    running_count: int
    elapsed_ms: int | float


class BackgroundTaskProgress(BaseChunk, tag="background-task-progress", frozen=True):
    """`background-task-progress` chunk: a periodic heartbeat while background tasks run.

    Payload: `BackgroundTaskProgressPayload`.
    """

    payload: BackgroundTaskProgressPayload


class BackgroundTaskOutputPayload(Payload, frozen=True):
    """Payload of the `background-task-output` chunk (`BackgroundTaskOutput`): the task's ids and the
    `tool-output` chunk written, as a wire dict.
    """

    task_id: str
    tool_name: str
    tool_call_id: str
    run_id: str
    agent_id: str
    payload: Any
    """The ``tool-output`` chunk the tool wrote, as a wire dict."""


class BackgroundTaskOutput(BaseChunk, tag="background-task-output", frozen=True):
    """`background-task-output` chunk: something a background task's tool wrote while running.

    Payload: `BackgroundTaskOutputPayload`.
    """

    payload: BackgroundTaskOutputPayload


class BackgroundTaskCompletedPayload(Payload, frozen=True):
    """Payload of the `background-task-completed` chunk (`BackgroundTaskCompleted`): the task's ids, the
    result and the completion time.
    """

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
    """`background-task-completed` chunk: a background task finished; `payload.result` is the tool's result.

    Payload: `BackgroundTaskCompletedPayload`.
    """

    payload: BackgroundTaskCompletedPayload


class BackgroundTaskFailedPayload(Payload, frozen=True):
    """Payload of the `background-task-failed` chunk (`BackgroundTaskFailed`): the task's ids, the error
    message and the completion time.
    """

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
    """`background-task-failed` chunk: a background task failed for good (after any retries).

    Payload: `BackgroundTaskFailedPayload`.
    """

    payload: BackgroundTaskFailedPayload


class BackgroundTaskSuspendedPayload(Payload, frozen=True):
    """Payload of the `background-task-suspended` chunk (`BackgroundTaskSuspended`): the task's ids,
    arguments and suspend payload.
    """

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
    """`background-task-suspended` chunk: a background task suspended itself and waits for `resume(task_id,
    resume_data)`.

    Payload: `BackgroundTaskSuspendedPayload`.
    """

    payload: BackgroundTaskSuspendedPayload


class BackgroundTaskResumedPayload(Payload, frozen=True):
    """Payload of the `background-task-resumed` chunk (`BackgroundTaskResumed`): the task's ids, arguments
    and new start time.
    """

    task_id: str
    tool_name: str
    tool_call_id: str
    run_id: str
    agent_id: str
    started_at: datetime
    args: dict[str, Any]
    _date_fields: ClassVar[tuple[str, ...]] = ("started_at",)


class BackgroundTaskResumed(BaseChunk, tag="background-task-resumed", frozen=True):
    """`background-task-resumed` chunk: a suspended background task was resumed.

    Payload: `BackgroundTaskResumedPayload`.
    """

    payload: BackgroundTaskResumedPayload


class BackgroundTaskCancelledPayload(Payload, frozen=True):
    """Payload of the `background-task-cancelled` chunk (`BackgroundTaskCancelled`): the task's ids and the
    cancellation time.
    """

    task_id: str
    tool_name: str
    tool_call_id: str
    run_id: str
    agent_id: str
    completed_at: datetime
    _date_fields: ClassVar[tuple[str, ...]] = ("completed_at",)


class BackgroundTaskCancelled(BaseChunk, tag="background-task-cancelled", frozen=True):
    """`background-task-cancelled` chunk: a background task was cancelled.

    Payload: `BackgroundTaskCancelledPayload`.
    """

    payload: BackgroundTaskCancelledPayload

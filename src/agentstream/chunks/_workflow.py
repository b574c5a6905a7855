"""Workflow chunks (Mastra's ``WorkflowStreamEvent``), spec §1.3."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from ._base import UNSET, BaseChunk, Payload

__all__ = [
    "WorkflowCanceled",
    "WorkflowCanceledPayload",
    "WorkflowFinish",
    "WorkflowFinishPayload",
    "WorkflowPaused",
    "WorkflowPausedPayload",
    "WorkflowStart",
    "WorkflowStartPayload",
    "WorkflowStepFinish",
    "WorkflowStepFinishPayload",
    "WorkflowStepOutput",
    "WorkflowStepOutputPayload",
    "WorkflowStepProgress",
    "WorkflowStepProgressPayload",
    "WorkflowStepResult",
    "WorkflowStepResultPayload",
    "WorkflowStepStart",
    "WorkflowStepStartPayload",
    "WorkflowStepSuspended",
    "WorkflowStepSuspendedPayload",
    "WorkflowStepWaiting",
    "WorkflowStepWaitingPayload",
    "zero_workflow_usage",
]


class WorkflowStartPayload(Payload, frozen=True):
    """Payload of the `workflow-start` chunk (`WorkflowStart`): the workflow id."""

    workflow_id: str


class WorkflowStart(BaseChunk, tag="workflow-start", frozen=True):
    """`workflow-start` chunk: a workflow run begins.

    Payload: `WorkflowStartPayload`.
    """

    payload: WorkflowStartPayload


_WORKFLOW_USAGE_KEYS = (
    "inputTokens",
    "outputTokens",
    "totalTokens",
    "cachedInputTokens",
    "cacheCreationInputTokens",
    "reasoningTokens",
)


def zero_workflow_usage() -> dict[str, int]:
    """A workflow's ``output.usage`` with its six counters at zero (a run without agent steps)."""
    return dict.fromkeys(_WORKFLOW_USAGE_KEYS, 0)


class WorkflowFinishPayload(Payload, frozen=True):
    """Payload of the `workflow-finish` chunk (`WorkflowFinish`): the status, output, metadata and the final
    workflow result.
    """

    workflow_status: str
    """``WorkflowRunStatus``: success, failed, suspended, canceled, tripwire, ..."""
    output: dict[str, Any]
    """``{usage: {inputTokens, outputTokens, totalTokens, ...}}``"""
    metadata: dict[str, Any]
    final_workflow_result: Any = UNSET
    tripwire: Any = UNSET


class WorkflowFinish(BaseChunk, tag="workflow-finish", frozen=True):
    """`workflow-finish` chunk: a workflow run ended; `payload.workflow_status` says how.

    Payload: `WorkflowFinishPayload`.
    """

    payload: WorkflowFinishPayload


class WorkflowCanceledPayload(Payload, frozen=True):
    """Payload of the `workflow-canceled` chunk (`WorkflowCanceled`): empty."""


class WorkflowCanceled(BaseChunk, tag="workflow-canceled", frozen=True):
    """`workflow-canceled` chunk: a workflow run was cancelled.

    Payload: `WorkflowCanceledPayload`.
    """

    # A factory, not a default value: ``omit_defaults`` would drop an equal default, and Mastra
    # always sends ``"payload": {}``.
    payload: WorkflowCanceledPayload = msgspec.field(default_factory=WorkflowCanceledPayload)


class WorkflowPausedPayload(Payload, frozen=True):
    """Payload of the `workflow-paused` chunk (`WorkflowPaused`): empty."""


class WorkflowPaused(BaseChunk, tag="workflow-paused", frozen=True):
    """`workflow-paused` chunk: a workflow run paused.

    Payload: `WorkflowPausedPayload`.
    """

    # A factory, not a default value: ``omit_defaults`` would drop an equal default, and Mastra
    # always sends ``"payload": {}``.
    payload: WorkflowPausedPayload = msgspec.field(default_factory=WorkflowPausedPayload)


class _StepStatePayload(Payload, frozen=True):
    id: str
    status: str | None = None
    output: Any = UNSET
    payload: Any = UNSET
    resume_payload: Any = UNSET
    suspend_payload: Any = UNSET


class WorkflowStepStartPayload(_StepStatePayload, frozen=True):
    """Payload of the `workflow-step-start` chunk (`WorkflowStepStart`): the step's id, status and input."""

    step_call_id: str | None = None
    step_name: str | None = None


class WorkflowStepStart(BaseChunk, tag="workflow-step-start", frozen=True):
    """`workflow-step-start` chunk: a workflow step begins.

    Payload: `WorkflowStepStartPayload`.
    """

    payload: WorkflowStepStartPayload
    id: str | None = None


class WorkflowStepFinishPayload(Payload, frozen=True):
    """Payload of the `workflow-step-finish` chunk (`WorkflowStepFinish`): the step id and metadata."""

    id: str
    metadata: dict[str, Any]


class WorkflowStepFinish(BaseChunk, tag="workflow-step-finish", frozen=True):
    """`workflow-step-finish` chunk: a workflow step finished (after its result).

    Payload: `WorkflowStepFinishPayload`.
    """

    payload: WorkflowStepFinishPayload


class WorkflowStepSuspendedPayload(_StepStatePayload, frozen=True):
    """Payload of the `workflow-step-suspended` chunk (`WorkflowStepSuspended`): the step's id, status and
    suspend payload.
    """


class WorkflowStepSuspended(BaseChunk, tag="workflow-step-suspended", frozen=True):
    """`workflow-step-suspended` chunk: a workflow step suspended and waits for resume data.

    Payload: `WorkflowStepSuspendedPayload`.
    """

    payload: WorkflowStepSuspendedPayload


class WorkflowStepWaitingPayload(Payload, frozen=True):
    """Payload of the `workflow-step-waiting` chunk (`WorkflowStepWaiting`): the step id, its payload, start
    time and status.
    """

    id: str
    payload: dict[str, Any]
    started_at: int | float
    status: str


class WorkflowStepWaiting(BaseChunk, tag="workflow-step-waiting", frozen=True):
    """`workflow-step-waiting` chunk: a workflow step waits (for an event or a sleep).

    Payload: `WorkflowStepWaitingPayload`.
    """

    payload: WorkflowStepWaitingPayload


class WorkflowStepOutputPayload(Payload, frozen=True):
    """``{output, runId, stepName}`` at runtime; ``output`` is usually a nested chunk."""

    output: Any
    run_id: str | None = None
    step_name: str | None = None


class WorkflowStepOutput(BaseChunk, tag="workflow-step-output", frozen=True):
    """`workflow-step-output` chunk: something a workflow step wrote while running (often a nested chunk).

    Payload: `WorkflowStepOutputPayload`.
    """

    payload: WorkflowStepOutputPayload


class WorkflowStepProgressPayload(Payload, frozen=True):
    """Payload of the `workflow-step-progress` chunk (`WorkflowStepProgress`): how many iterations completed
    of how many, and the last iteration's status and output.
    """

    id: str
    completed_count: int
    total_count: int
    current_index: int
    iteration_status: Literal["success", "failed", "suspended"]
    iteration_output: Any = UNSET


class WorkflowStepProgress(BaseChunk, tag="workflow-step-progress", frozen=True):
    """`workflow-step-progress` chunk: progress of a `foreach` step over its items.

    Payload: `WorkflowStepProgressPayload`.
    """

    payload: WorkflowStepProgressPayload


class WorkflowStepResultPayload(_StepStatePayload, frozen=True):
    """Payload of the `workflow-step-result` chunk (`WorkflowStepResult`): the step's id, status and output."""

    step_call_id: str | None = None
    tripwire: dict[str, Any] | None = None
    step_name: str | None = None


class WorkflowStepResult(BaseChunk, tag="workflow-step-result", frozen=True):
    """`workflow-step-result` chunk: a workflow step's result (success, failure or suspension).

    Payload: `WorkflowStepResultPayload`.
    """

    payload: WorkflowStepResultPayload

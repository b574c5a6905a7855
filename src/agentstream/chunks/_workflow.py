"""Workflow chunks (Mastra's ``WorkflowStreamEvent``), spec §1.3."""

from __future__ import annotations

from typing import Any, Literal

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
]


class WorkflowStartPayload(Payload, frozen=True):
    workflow_id: str


class WorkflowStart(BaseChunk, tag="workflow-start", frozen=True):
    payload: WorkflowStartPayload


class WorkflowFinishPayload(Payload, frozen=True):
    workflow_status: str
    """``WorkflowRunStatus``: success, failed, suspended, canceled, tripwire, ..."""
    output: dict[str, Any]
    """``{usage: {inputTokens, outputTokens, totalTokens, ...}}``"""
    metadata: dict[str, Any]
    final_workflow_result: Any = UNSET
    tripwire: Any = UNSET


class WorkflowFinish(BaseChunk, tag="workflow-finish", frozen=True):
    payload: WorkflowFinishPayload


class WorkflowCanceledPayload(Payload, frozen=True):
    pass


class WorkflowCanceled(BaseChunk, tag="workflow-canceled", frozen=True):
    payload: WorkflowCanceledPayload = WorkflowCanceledPayload()


class WorkflowPausedPayload(Payload, frozen=True):
    pass


class WorkflowPaused(BaseChunk, tag="workflow-paused", frozen=True):
    payload: WorkflowPausedPayload = WorkflowPausedPayload()


class _StepStatePayload(Payload, frozen=True):
    id: str
    status: str | None = None
    output: Any = UNSET
    payload: Any = UNSET
    resume_payload: Any = UNSET
    suspend_payload: Any = UNSET


class WorkflowStepStartPayload(_StepStatePayload, frozen=True):
    step_call_id: str | None = None
    step_name: str | None = None


class WorkflowStepStart(BaseChunk, tag="workflow-step-start", frozen=True):
    payload: WorkflowStepStartPayload
    id: str | None = None


class WorkflowStepFinishPayload(Payload, frozen=True):
    id: str
    metadata: dict[str, Any]


class WorkflowStepFinish(BaseChunk, tag="workflow-step-finish", frozen=True):
    payload: WorkflowStepFinishPayload


class WorkflowStepSuspendedPayload(_StepStatePayload, frozen=True):
    pass


class WorkflowStepSuspended(BaseChunk, tag="workflow-step-suspended", frozen=True):
    payload: WorkflowStepSuspendedPayload


class WorkflowStepWaitingPayload(Payload, frozen=True):
    id: str
    payload: dict[str, Any]
    started_at: int | float
    status: str


class WorkflowStepWaiting(BaseChunk, tag="workflow-step-waiting", frozen=True):
    payload: WorkflowStepWaitingPayload


class WorkflowStepOutputPayload(Payload, frozen=True):
    """``{output, runId, stepName}`` at runtime; ``output`` is usually a nested chunk."""

    output: Any
    run_id: str | None = None
    step_name: str | None = None


class WorkflowStepOutput(BaseChunk, tag="workflow-step-output", frozen=True):
    payload: WorkflowStepOutputPayload


class WorkflowStepProgressPayload(Payload, frozen=True):
    id: str
    completed_count: int
    total_count: int
    current_index: int
    iteration_status: Literal["success", "failed", "suspended"]
    iteration_output: Any = UNSET


class WorkflowStepProgress(BaseChunk, tag="workflow-step-progress", frozen=True):
    payload: WorkflowStepProgressPayload


class WorkflowStepResultPayload(_StepStatePayload, frozen=True):
    step_call_id: str | None = None
    tripwire: dict[str, Any] | None = None
    step_name: str | None = None


class WorkflowStepResult(BaseChunk, tag="workflow-step-result", frozen=True):
    payload: WorkflowStepResultPayload

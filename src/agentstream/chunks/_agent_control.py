"""Agent chunks that steer a run (Mastra's ``AgentChunkType``, spec §1.2): structured output,
processors' tripwires, goals and completion checks, and background tasks.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from ._base import UNSET, BaseChunk, Payload

__all__ = [
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
    "Goal",
    "GoalPayload",
    "IsTaskComplete",
    "IsTaskCompletePayload",
    "Object",
    "ObjectResult",
    "Tripwire",
    "TripwirePayload",
]


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

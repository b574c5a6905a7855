"""Errors raised by the background-task manager."""

from __future__ import annotations

from typing import Any

__all__ = [
    "BackgroundTaskError",
    "BackgroundTasksDisabledError",
    "ConcurrencyLimitError",
    "InvalidTaskStateError",
    "TaskNotFoundError",
    "TaskReleased",
    "TaskSuspended",
    "TaskWaitTimeoutError",
]


class BackgroundTaskError(Exception):
    """Base class of the manager's errors."""


class BackgroundTasksDisabledError(BackgroundTaskError):
    """Background tasks were used but are not enabled (`Mastra(background_tasks=...)` is missing)."""


class TaskNotFoundError(BackgroundTaskError, LookupError):
    """No background task has this id; `task_id` names it."""

    def __init__(self, task_id: str) -> None:
        super().__init__(f"Background task {task_id!r} not found")
        self.task_id = task_id


class InvalidTaskStateError(BackgroundTaskError):
    """An operation that needs another status (resume a task that is not suspended, ...)."""

    def __init__(self, task_id: str, status: str, message: str) -> None:
        super().__init__(f"Background task {task_id!r}: {message}")
        self.task_id = task_id
        self.status = status


class ConcurrencyLimitError(BackgroundTaskError):
    """A task could not be enqueued: the concurrency limit is reached and `backpressure` is `"reject"`."""

    def __init__(self, message: str, *, tool_name: str | None = None, task_id: str | None = None) -> None:
        super().__init__(message)
        self.tool_name = tool_name
        self.task_id = task_id


class TaskWaitTimeoutError(BackgroundTaskError, TimeoutError):
    """`wait_for_completion` / `wait_for_next_task` gave up before a task finished."""

    def __init__(self) -> None:
        super().__init__("Timed out waiting for background task")


class TaskReleased(RuntimeError):
    """The abort reason when a manager stops running a task that goes on elsewhere.

    Its shutdown, or a lease it lost to another manager: a remote engine must not cancel the
    task's work on a worker for this reason (the new owner attaches to it); any other abort reason
    (a cancel, a timeout) means the task is over.
    """


class TaskSuspended(BaseException):
    """Raised by ``await context.suspend(payload)`` inside a background task.

    It derives from ``BaseException`` so that a tool's ``except Exception`` does not swallow it.
    The task becomes ``suspended``; on ``resume`` the tool's ``execute`` runs again with
    ``context.resume_data`` set (Mastra re-runs the suspended step with ``resumeData``).
    """

    def __init__(self, payload: Any) -> None:
        super().__init__("background task suspended")
        self.payload = payload

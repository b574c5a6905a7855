"""What a tool receives as ``context`` when it runs as a background task."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NoReturn

from .._abort import AbortSignal
from ..tools import ToolWriter
from ._errors import TaskSuspended

__all__ = ["BackgroundTaskContext", "BackgroundTaskWriter"]


BackgroundTaskWriter = ToolWriter
"""``context.writer`` inside a background task: the same writer a foreground tool gets; the manager
wraps its ``tool-output`` chunks in ``background-task-output``."""


@dataclass
class BackgroundTaskContext:
    """Duck-compatible with ``agentstream.tools.ToolContext``, plus the task's identity.

    ``await context.suspend(payload)`` parks the task (status ``suspended``, payload stored); it
    does not return: after ``manager.resume(task_id, data)`` (from this or another process)
    ``execute`` runs again from the top with ``context.resume_data == data``.
    """

    task_id: str
    run_id: str
    tool_call_id: str
    tool_name: str
    agent_id: str | None
    abort_signal: AbortSignal
    writer: BackgroundTaskWriter
    thread_id: str | None = None
    resource_id: str | None = None
    resume_data: Any = None
    retry_count: int = 0
    messages: list[dict[str, Any]] = field(default_factory=list)

    @property
    def idempotency_key(self) -> str:
        """A key naming this tool call, the same every time the call runs again.

        A task taken over from a dead worker (or a dead server) runs again with the same run id
        and tool call id, and so does a retry of the task: every execution of the call gets the
        same key. Hand it to the service the tool acts on (a payment API's ``Idempotency-Key``,
        an email's ``Message-ID``) or keep it with the effect in your own database, and the
        effect happens once (see docs/serving.md, "Tools with side effects")."""
        return f"{self.run_id}:{self.tool_call_id}"

    @property
    def is_resumed(self) -> bool:
        """Whether this execution resumes a suspended task (`resume_data` was given)."""
        return self.resume_data is not None

    async def suspend(self, payload: Any = None) -> NoReturn:
        """Suspend the task with `payload` and stop this execution.

        The task becomes `suspended` (a `background-task-suspended` chunk carries `payload`) until
        `manager.resume(task_id, resume_data)` runs the tool again with `context.resume_data` set.
        """
        raise TaskSuspended(payload)

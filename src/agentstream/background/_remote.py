"""Where a manager's tasks execute when not in its own process: the ``remote`` setting."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from ._context import BackgroundTaskContext

__all__ = ["RemoteTasks"]


@runtime_checkable
class RemoteTasks(Protocol):
    """An execution engine for background tasks (`agentstream.durable.DurableBackground`).

    With ``BackgroundTaskManager(..., remote=engine)``, every task whose tool
    ``engine.runs_remotely(tool_name, agent_id)`` executes through ``engine.run`` instead of in the
    manager's process, whether an agent dispatched it or `BackgroundTaskManager.enqueue` did; the
    manager keeps its records, leases, retries and streams. ``run`` must be idempotent per attempt
    (task id, retry count, resume data): a manager that takes over an expired lease calls it again
    for the same attempt and must be attached to the work already under way, not start it twice.
    An abort whose reason is a `TaskReleased` means "this manager stopped following"; the work
    goes on. Any other abort reason (a cancel, a timeout) ends it.
    """

    def runs_remotely(self, tool_name: str, agent_id: str) -> bool:
        """Whether this engine runs ``tool_name`` of ``agent_id`` (``False``: the manager runs it)."""
        ...

    async def run(self, tool_name: str, args: dict[str, Any], context: BackgroundTaskContext) -> Any:
        """Run one attempt of the task and return its result; chunks go to ``context.writer``."""
        ...

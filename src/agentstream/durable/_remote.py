"""The server side: an `Executor` for `BackgroundTaskManager` that runs the tool on a worker."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterable
from typing import Any

from dbos import DBOS, DBOSClient, EnqueueOptions, WorkflowHandleAsync

from ..background import BackgroundTaskContext, Executor, TaskReleased, TaskSuspended
from ..chunks import chunk_from_dict, to_jsonable
from ..tools import Tool
from ._protocol import CHUNKS_STREAM, QUEUE_NAME, WORKFLOW_NAME, Outcome, TaskSpec

__all__ = ["DurableBackground", "RemoteTaskError"]


class RemoteTaskError(Exception):
    """The tool failed on the worker; the message is the worker's ``Type: message``."""


class DurableBackground:
    """Runs background tasks on `agentstream worker` processes sharing `database_url`.

    Give it to the manager: ``BackgroundTaskManager(store, config, remote=DurableBackground(url))``
    or ``Mastra(background_tasks={"remote": DurableBackground(url), ...})``. Every task then runs on
    a worker, whether an agent dispatched it or ``manager.enqueue`` did; no tool needs wrapping.
    The manager keeps its records, leases, retries, streams and until-idle continuations; only the
    tool's execution moves, and its ``tool-output`` chunks come back through the engine.

    ``local``: tool names (``"research"``, or ``"<agent id>:research"`` for one agent's) that stay
    in the manager's process; every other tool must be registered on the workers.
    """

    def __init__(self, database_url: str, *, local: Iterable[str] = ()) -> None:
        if isinstance(local, str):
            raise TypeError(f"local must be a collection of tool names, got the string {local!r}")
        self.local = frozenset(local)
        # A server may start before any worker: create (or upgrade) DBOS's tables; idempotent.
        DBOS.migrate(database_url)
        self._client = DBOSClient(system_database_url=database_url, application_name="agentstream")

    def runs_remotely(self, tool_name: str, agent_id: str) -> bool:
        """Whether a task of ``tool_name`` (dispatched by ``agent_id``) runs on a worker: every tool
        except those named in ``local``."""
        return tool_name not in self.local and f"{agent_id}:{tool_name}" not in self.local

    def close(self) -> None:
        """Close the engine client's connections (tasks keep running on the workers)."""
        self._client.destroy()

    def executor(self, tool_name: str) -> Executor:
        """An `Executor` that runs `tool_name` on a worker (register it in a manager's ``tools``)."""

        async def run_remote(args: dict[str, Any], context: BackgroundTaskContext) -> Any:
            return await self.run(tool_name, args, context)

        return run_remote

    def tool(self, tool: Tool) -> Tool:
        """`tool` with its ``execute`` running on a worker (which must register the real `tool`).

        For background tasks, prefer the manager setting (``remote=DurableBackground(url)``): it
        moves every task without wrapping tools. A wrapped tool still runs on a worker when it is
        called in the foreground (no manager, or a ``foreground`` disposition).
        """

        async def execute(input: Any, context: Any) -> Any:
            return await self.run(tool.id, to_jsonable(input), context)

        return dataclasses.replace(tool, execute=execute)

    def manager_tools(self, tool_names: list[str]) -> dict[str, Executor]:
        """``{name: executor(name)}`` for each name: the ``tools=`` of a ``BackgroundTaskManager``."""
        return {name: self.executor(name) for name in tool_names}

    async def run(self, tool_name: str, args: dict[str, Any], context: BackgroundTaskContext) -> Any:
        """Enqueue the task (idempotently: one workflow per task attempt), relay its chunks, return
        its result. A second server running the same attempt (it took over an expired lease)
        attaches to the same workflow instead of starting another."""
        # A foreground call (disposition "foreground") gets a ToolContext: no task id, no retries.
        task_id = getattr(context, "task_id", None) or f"call-{context.tool_call_id}"
        spec = TaskSpec(
            task_id=task_id,
            tool_name=tool_name,
            args=args,
            run_id=getattr(context, "run_id", ""),
            tool_call_id=context.tool_call_id,
            agent_id=getattr(context, "agent_id", None),
            thread_id=getattr(context, "thread_id", None),
            resource_id=getattr(context, "resource_id", None),
            resume_data=getattr(context, "resume_data", None),
            retry_count=getattr(context, "retry_count", 0),
        )
        workflow_id = attempt_id(spec)
        options: EnqueueOptions = {
            "queue_name": QUEUE_NAME,
            "workflow_name": WORKFLOW_NAME,
            "workflow_id": workflow_id,
            "queue_partition_key": spec["agent_id"] or "",
        }
        handle: WorkflowHandleAsync[Outcome] = await self._client.enqueue_async(options, spec)
        abort = context.abort_signal

        def on_abort(reason: Any) -> None:
            if not isinstance(reason, TaskReleased):  # released: another manager attaches to it
                self._client.cancel_workflow(workflow_id)

        remove = abort.add_listener(on_abort)
        try:
            stream = self._client.read_stream_async(workflow_id, CHUNKS_STREAM, polling_interval_sec=0.05)
            async for item in stream:
                context.writer.emit(chunk_from_dict(item, unknown="keep"))
            outcome = await handle.get_result(polling_interval_sec=0.05)
        finally:
            remove()
        if outcome["status"] == "suspended":
            raise TaskSuspended(outcome["suspend_payload"])
        if outcome["status"] == "failed":
            raise RemoteTaskError(outcome["error"])
        return outcome["result"]


def attempt_id(spec: TaskSpec) -> str:
    """The workflow id of one attempt: a retry or a resume is a new attempt, a takeover is not."""
    resume = hashlib.sha256(json.dumps(spec["resume_data"], sort_keys=True).encode()).hexdigest()[:12]
    return f"{spec['task_id']}:{spec['retry_count']}:{resume}"

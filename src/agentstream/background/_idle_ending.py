"""How an until-idle stream ends when it closes before it is idle.

Mastra's until-idle wrapper (``loop/shared/stream-until-idle-helpers.ts``) just closes the
combined stream when its idle timer fires or the caller aborts between turns: whatever came last
(often a ``background-task-output`` of a task that still runs, or the ``background-task-running``
of one that waited for a slot) is then the last chunk, and an AI SDK client sees an answer end
without a ``finish`` and without a word on why. Here such a stream ends with a
``data-until-idle-closed`` chunk that names the reason, the idle window and the tasks still
running or queued (with their place in this manager's queue), followed by the finish of the last
turn again (even when that finish was the last chunk: a queued task sends nothing, and the client
must still learn that the answer stopped waiting for it); a stream whose driver failed ends with an
``error`` chunk that says so. A stream that closes because it is idle already ends on its last
turn's ``finish`` and gets nothing added.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from ..chunks import Chunk, DataChunk, Error, ErrorPayload, Finish

__all__ = ["CLOSED_CHUNK", "ClosedReason", "StreamEnding", "TaskSeen"]

CLOSED_CHUNK = "data-until-idle-closed"

ClosedReason = Literal["idle-timeout", "aborted"]


@dataclass
class TaskSeen:
    """What the stream knows of one of its tasks that has not ended."""

    tool_name: str
    tool_call_id: str
    running: bool = False


@dataclass
class StreamEnding:
    """Tracks the tail of the combined log so the stream's end can be made explicit."""

    last_finish: Finish | None = None
    tail_after_finish: bool = False
    """Chunks were appended after the last turn's ``finish``."""
    reason: ClosedReason | None = None
    failure: BaseException | None = None
    tasks: dict[str, TaskSeen] = field(default_factory=dict)
    """The stream's tasks that have not ended, by task id."""
    ended: set[str] = field(default_factory=set)

    def saw(self, chunk: Chunk) -> None:
        if isinstance(chunk, Finish):
            self.last_finish = chunk
            self.tail_after_finish = False
        else:
            self.tail_after_finish = True

    def chunks(self, *, max_idle_ms: float, queue: Mapping[str, int | None]) -> list[Chunk]:
        """The chunks that end the stream (none when it already ends on a turn's ``finish``)."""
        if self.failure is not None:
            message = f"until-idle stream failed: {type(self.failure).__name__}: {self.failure}"
            return [Error(payload=ErrorPayload(error={"name": "UntilIdleError", "message": message}))]
        finish: list[Chunk] = [] if self.last_finish is None else [self.last_finish]
        if self.reason is not None and self.tasks:  # closed before idle: say why, then end as the turn did
            return [self._closed(max_idle_ms, queue), *finish]
        # idle after all; a late chunk (of a task that ended) may have followed the turn's finish.
        # A turn without a finish (a tripwire) ended in its own way, which says why.
        return finish if self.tail_after_finish else []

    def _closed(self, max_idle_ms: float, queue: Mapping[str, int | None]) -> DataChunk:
        running = [tid for tid, seen in self.tasks.items() if seen.running]
        queued = [tid for tid, seen in self.tasks.items() if not seen.running]
        reason: ClosedReason = self.reason or "idle-timeout"
        if reason == "aborted":
            why = "the request was stopped while background tasks were still going"
        else:
            why = f"no news from its background tasks for {_ms(max_idle_ms)} (the idle window, max_idle_ms)"
        message = (
            f"The answer stream closed because {why}: {len(running)} running, {len(queued)} queued for a "
            "slot. They continue; their results are stored in the conversation when they finish."
        )

        def entry(task_id: str) -> dict[str, object]:
            seen = self.tasks[task_id]
            item: dict[str, object] = {
                "taskId": task_id,
                "toolName": seen.tool_name,
                "toolCallId": seen.tool_call_id,
            }
            if not seen.running and queue.get(task_id) is not None:
                item["queuePosition"] = queue[task_id]
            return item

        data = {
            "reason": reason,
            "message": message,
            "maxIdleMs": max_idle_ms,
            "running": [entry(t) for t in running],
            "queued": [entry(t) for t in queued],
        }
        return DataChunk(type=CLOSED_CHUNK, data=data)


def _ms(value: float) -> str:
    return f"{int(value)} ms" if float(value).is_integer() else f"{value} ms"

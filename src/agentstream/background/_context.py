"""What a tool receives as ``context`` when it runs as a background task."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NoReturn

from .._abort import AbortSignal
from ..chunks import ChunkFrom, DataChunk, ToolOutput, ToolOutputPayload
from ._errors import TaskSuspended

__all__ = ["BackgroundTaskContext", "BackgroundTaskWriter"]


class BackgroundTaskWriter:
    """``context.writer`` inside a background task.

    ``write(x)`` makes the ``tool-output`` chunk a foreground tool would emit; the manager wraps it
    in ``background-task-output``. Safe to call from a sync tool running in a worker thread. Writes
    after the task has ended (cancelled, timed out) are dropped.
    """

    __slots__ = ("_emit", "_loop", "_run_id", "_thread", "_tool_call_id", "_tool_name")

    def __init__(
        self, emit: Callable[[Any], None], *, run_id: str, tool_call_id: str, tool_name: str
    ) -> None:
        self._emit = emit
        self._run_id = run_id
        self._tool_call_id = tool_call_id
        self._tool_name = tool_name
        self._loop = asyncio.get_running_loop()
        self._thread = threading.get_ident()

    def _send(self, chunk: Any) -> None:
        if threading.get_ident() == self._thread:
            self._emit(chunk)
        else:
            self._loop.call_soon_threadsafe(self._emit, chunk)

    def write(self, output: Any) -> None:
        self._send(
            ToolOutput(
                run_id=self._run_id,
                from_=ChunkFrom.USER,
                payload=ToolOutputPayload(
                    output=output, tool_call_id=self._tool_call_id, tool_name=self._tool_name
                ),
            )
        )

    def custom(self, chunk: DataChunk | dict[str, Any]) -> None:
        if isinstance(chunk, dict):
            chunk = DataChunk(
                type=str(chunk.get("type", "")),
                data=chunk.get("data"),
                id=chunk.get("id"),
                transient=chunk.get("transient"),
            )
        if not isinstance(chunk, DataChunk):
            raise TypeError(f"writer.custom() takes a DataChunk or a dict, got {type(chunk).__name__}")
        self._send(chunk)


@dataclass
class BackgroundTaskContext:
    """Duck-compatible with :class:`agentstream.tools.ToolContext`, plus the task's identity.

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
    def is_resumed(self) -> bool:
        return self.resume_data is not None

    async def suspend(self, payload: Any = None) -> NoReturn:
        raise TaskSuspended(payload)

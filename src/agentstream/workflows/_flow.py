"""The walk's plumbing shared by the executor's modules: how a walk ends (`RunEnd`, `Stop`), a step's
outcome, and the in-order routing of concurrent steps' chunks in a durable run."""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ..chunks import UNSET, Chunk

__all__ = ["ROUTE", "InOrder", "Outcome", "Resume", "RunEnd", "Stop"]


@dataclass
class Resume:
    """Where a resumed run picks up: the suspended step, its data, and the entry it sits in."""

    step_id: str
    data: Any
    entry_index: int


@dataclass
class RunEnd:
    """How the walk ended: ``status`` and the result, error, or suspension points."""

    status: str
    result: Any = UNSET
    error: BaseException | None = None
    suspended: dict[str, list[int]] = field(default_factory=dict)


# A durable run's concurrent steps (parallel, foreach items) send their chunks through an `InOrder`
# of their own: (the execution, the step's emit), per task.
ROUTE: contextvars.ContextVar[tuple[Any, Callable[[Chunk], None]] | None] = contextvars.ContextVar(
    "agentstream_workflow_route", default=None
)


class InOrder:
    """Chunks of concurrent steps in step order: the first unfinished one streams live, the others'
    wait until it finishes. A checkpointed run needs this: a re-run must emit the same chunk
    sequence, and finishing order is timing (a replayed step finishes at once)."""

    def __init__(self, emit: Callable[[Chunk], None], count: int) -> None:
        self._emit = emit
        self._buffers: list[list[Chunk]] = [[] for _ in range(count)]
        self._done = [False] * count
        self._head = 0

    def emitter(self, index: int) -> Callable[[Chunk], None]:
        def emit(chunk: Chunk) -> None:
            if index == self._head:
                self._emit(chunk)
            else:
                self._buffers[index].append(chunk)

        return emit

    def finish(self, index: int) -> None:
        self._done[index] = True
        while self._head < len(self._done) and self._done[self._head]:
            self._head += 1
            if self._head < len(self._done):
                for chunk in self._buffers[self._head]:
                    self._emit(chunk)
                self._buffers[self._head].clear()

    async def run(self, execution: Any, index: int, job: Awaitable[Any]) -> Any:
        """Await ``job`` (in its own task) with its chunks routed through slot ``index``."""
        token = ROUTE.set((execution, self.emitter(index)))
        try:
            return await job
        finally:
            ROUTE.reset(token)
            self.finish(index)


class Outcome:
    __slots__ = ("kind", "value")

    def __init__(self, kind: str, value: Any) -> None:
        self.kind = kind  # success | failed | suspended | bailed
        self.value = value


class Stop(Exception):
    """Ends the walk early with a `RunEnd`."""

    def __init__(self, end: RunEnd) -> None:
        super().__init__(end.status)
        self.end = end

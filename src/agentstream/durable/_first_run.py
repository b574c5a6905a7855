"""A chat turn's first execution: its model calls are recorded only when another step follows them.

DBOS checks every step before running it (is there a record to replay?) and records it after, two
transactions each. A workflow the worker has just created (`WorkerJobs.start` refuses an id already
in use: ``workflow_id_reuse_policy="reject"``) has no record to find, so its model calls run
without the check; and a model call's record is read only by a re-run that gets past it, which
matters only once a later step exists (a tool call's record, the next model call's): so the
record is kept back and written just before the next step of the execution starts, and a turn's
last model call, after which nothing but its stream's end follows, is not recorded at all. A worker
that dies after it re-runs the call, as one that dies during it does (docs/decisions/
issue-28-worker-turn-cost.md). A re-run (a takeover, a restart's recovery) has records to find and
takes DBOS's ordinary path.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import Iterator
from typing import Any

from dbos import StepReservation

__all__ = ["FirstRun", "current_first_run", "first_run"]

_current: contextvars.ContextVar[FirstRun | None] = contextvars.ContextVar(
    "agentstream_durable_first_run", default=None
)


class FirstRun:
    """The model call record kept back in one first execution, written by `flush` before any
    other step starts (concurrent tool calls wait for it); a failed write fails every later step."""

    def __init__(self) -> None:
        self._pending: tuple[StepReservation, str, dict[str, Any]] | None = None
        self._lock = asyncio.Lock()
        self._failed: BaseException | None = None

    def defer(self, step: StepReservation, name: str, record: dict[str, Any]) -> None:
        self._pending = (step, name, record)

    async def flush(self) -> None:
        async with self._lock:
            if self._failed is not None:
                raise self._failed
            pending, self._pending = self._pending, None
            if pending is None:
                return
            step, name, record = pending

            async def recorded() -> dict[str, Any]:
                return record

            try:
                await step.run_async({"name": name, "retries_allowed": False}, recorded)
            except BaseException as exc:
                # A step after it must not be recorded without it: a re-run would replay that
                # step's record for what may be a different model answer.
                self._failed = exc
                raise


@contextlib.contextmanager
def first_run() -> Iterator[FirstRun]:
    """Mark the code run inside (a chat turn's workflow body) as its workflow's first execution."""
    run = FirstRun()
    token = _current.set(run)
    try:
        yield run
    finally:
        _current.reset(token)


def current_first_run() -> FirstRun | None:
    return _current.get()

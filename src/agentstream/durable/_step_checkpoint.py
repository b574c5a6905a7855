"""`DBOSCheckpoint`: a workflow run's `Checkpoint` on DBOS steps, so a leg run again after a crash
returns each completed step's record instead of running it (each step's outcome: output,
suspension, bail or error, with the chunks it wrote and the state it left; and the run's snapshot
load and resume claim)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from dbos import DBOS
from dbos import error as dbos_error

from .._abort import AbortError
from ..workflows import Slot
from ._cancel import is_cancelled

__all__ = ["DBOSCheckpoint"]


class DBOSCheckpoint:
    """A workflow `Checkpoint` on DBOS steps, for runs executed inside a DBOS workflow: slots are
    DBOS step ids reserved in the walk's order, sleeps are DBOS's durable sleeps.

    DBOS refuses to start or record a step of a cancelled workflow (`DBOSWorkflowCancelledError`,
    or `DBOSWorkflowConflictIDError` as the execution lost its claim; neither is stopped by an
    ``except Exception``, so the run would die mid-stream): ``cancelled`` is called
    then (the worker aborts the run with it) and the step fails with an `AbortError`, so the run
    ends ``canceled`` as a cancel in one process ends it."""

    def __init__(self, cancelled: Callable[[], object] | None = None) -> None:
        self._cancelled = cancelled

    def reserve(self, name: str) -> Slot:
        """Reserve the next DBOS step id now; the slot runs its body as that step."""
        reservation = DBOS.reserve_step()

        async def run(body: Callable[[], Awaitable[Any]]) -> Any:
            async def step() -> Any:  # a coroutine function, so DBOS awaits it on this loop
                return await body()

            try:
                return await reservation.run_async({"name": name}, step)
            except dbos_error.DBOSWorkflowCancelledError:
                raise self._abort() from None
            except dbos_error.DBOSWorkflowConflictIDError:
                # Cancelling also takes the workflow from its execution; a takeover does too, and
                # then this (stale) execution must stop without writing anything.
                if not await is_cancelled(DBOS.workflow_id):
                    raise
                raise self._abort() from None

        return run

    async def sleep(self, seconds: float) -> None:
        """Sleep durably: the wake-up time is recorded, so a re-run sleeps only what is left."""
        # Always a step id, even for no wait: a re-run (later on the clock) must take the same ids.
        try:
            await DBOS.sleep_async(max(seconds, 0.001))
        except dbos_error.DBOSWorkflowCancelledError:
            raise self._abort() from None

    def _abort(self) -> AbortError:
        if self._cancelled is not None:
            self._cancelled()
        return AbortError("the workflow was cancelled")

"""Cancelling a chat turn or a workflow leg on a worker: the server's side (`cancel_workflow`,
which also says whether the leg had started) and the worker's (`cancellations`, one status query
per interval over the legs this worker runs)."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
from collections.abc import AsyncIterator

from dbos import DBOS, DBOSClient
from dbos import error as dbos_error

from .._abort import AbortController

__all__ = ["CancelledIsNotAnError", "cancel_workflow", "cancellations", "is_cancelled", "watched"]

_log = logging.getLogger("agentstream.durable")

# How often a worker looks for its running legs having been cancelled.
_CANCEL_POLL_SEC = 0.5


async def cancel_workflow(client: DBOSClient, workflow_id: str) -> bool:
    """Cancel the DBOS workflow ``workflow_id``; whether it had ever been handed to a worker.

    ``False`` means no worker will ever run it: cancelling removes it from its queue at once, and
    a dequeue (the only way to start an enqueued workflow) counts a recovery attempt on the same
    row, which cancelling leaves as it is. An unknown workflow also never ran."""
    await client.cancel_workflow_async(workflow_id)
    statuses = await client.list_workflows_async(
        workflow_ids=[workflow_id], load_input=False, load_output=False
    )
    return any((status.recovery_attempts or 0) > 0 for status in statuses)


async def is_cancelled(workflow_id: str | None) -> bool:
    """Whether DBOS workflow ``workflow_id`` is cancelled (asked outside the calling workflow, so
    DBOS does not record the query as one of its steps)."""
    if workflow_id is None:
        return False
    query = DBOS.list_workflows_async(
        workflow_ids=[workflow_id], status="CANCELLED", load_input=False, load_output=False
    )
    found = await asyncio.get_running_loop().create_task(query, context=contextvars.Context())
    return bool(found)


class _Cancellations:
    """The running legs of this worker; one query per interval finds those cancelled in DBOS."""

    def __init__(self) -> None:
        self.running: dict[str, AbortController] = {}
        self.poller: asyncio.Task[None] | None = None

    def watch(self, workflow_id: str, controller: AbortController) -> None:
        self.running[workflow_id] = controller
        if self.poller is None or self.poller.done():
            # A fresh context: DBOS would otherwise record the status queries as steps of this leg.
            self.poller = asyncio.get_running_loop().create_task(self._poll(), context=contextvars.Context())

    async def _poll(self) -> None:
        while self.running:
            await asyncio.sleep(_CANCEL_POLL_SEC)
            try:
                cancelled = await DBOS.list_workflows_async(
                    workflow_ids=list(self.running), status="CANCELLED", load_input=False, load_output=False
                )
            except Exception:  # a database blip: the next round asks again
                _log.exception("checking running legs for cancellation failed")
                continue
            for status in cancelled:
                controller = self.running.pop(status.workflow_id, None)
                if controller is not None:
                    controller.abort()


cancellations = _Cancellations()


@contextlib.asynccontextmanager
async def watched(fallback_id: str) -> AsyncIterator[AbortController]:
    """Inside a DBOS workflow: a controller whose signal fires once the workflow is cancelled."""
    workflow_id = DBOS.workflow_id or fallback_id
    controller = AbortController()
    cancellations.watch(workflow_id, controller)
    try:
        yield controller
    finally:
        cancellations.running.pop(workflow_id, None)


class CancelledIsNotAnError(logging.Filter):
    """For DBOS's logger: a cancelled workflow's end, which DBOS logs as an error with a traceback,
    becomes one INFO line. A cancel is a user's stop, a newer message for the chat or a cancelled
    run, never a fault of the worker. DBOS's warning that a model step's task was cancelled is
    dropped: `ModelStep.aclose` cancels it on purpose when the loop stops reading."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno == logging.WARNING and "ModelStep._call" in str(record.msg):
            return not str(record.msg).startswith("Asyncio task cancelled for workflow or step")
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, dbos_error.DBOSAwaitedWorkflowCancelledError):
            record.levelno, record.levelname = logging.INFO, "INFO"
            record.msg, record.args = "workflow %s was cancelled; its run stopped", (error.workflow_id,)
            record.exc_info = record.exc_text = None
        return True

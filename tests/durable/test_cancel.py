"""`durable/_cancel.py`: the worker's log filter for DBOS's cancel noise (the cancel path itself runs
in real processes: tests/durable/test_chat_turns.py, test_workflow_runs.py)."""

from __future__ import annotations

import logging

from dbos._error import DBOSAwaitedWorkflowCancelledError

from agentstream.durable._cancel import CancelledIsNotAnError


def test_the_worker_log_filter_turns_dbos_cancel_noise_into_one_info_line() -> None:
    def record(level: int, msg: str, error: BaseException | None = None) -> logging.LogRecord:
        exc_info = (type(error), error, None) if error is not None else None
        return logging.LogRecord("dbos", level, __file__, 1, msg, None, exc_info)

    keep = CancelledIsNotAnError()
    cancelled = record(logging.ERROR, "Exception encountered", DBOSAwaitedWorkflowCancelledError("wf-1"))
    assert keep.filter(cancelled)
    assert (cancelled.levelname, cancelled.getMessage(), cancelled.exc_info) == (
        "INFO",
        "workflow wf-1 was cancelled; its run stopped",
        None,
    )
    step = (
        "Asyncio task cancelled for workflow or step functools.partial(<bound method ModelStep._call of <x>>)"
    )
    assert not keep.filter(record(logging.WARNING, step))
    other = record(logging.ERROR, "Exception encountered", RuntimeError("boom"))
    assert keep.filter(other) and other.levelname == "ERROR" and other.exc_info is not None
    assert keep.filter(record(logging.WARNING, "Asyncio task cancelled for workflow or step other"))

"""The executor's ``foreach`` and ``sleep`` entries (Mastra's executeForeach and sleep handlers)."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from .._abort import AbortError, until_aborted
from ..chunks import (
    UNSET,
    ChunkFrom,
    WorkflowStepProgress,
    WorkflowStepProgressPayload,
    WorkflowStepResult,
    WorkflowStepResultPayload,
    WorkflowStepWaiting,
    WorkflowStepWaitingPayload,
    to_jsonable,
)
from ._errors import WorkflowError, _Bail, _Suspend
from ._flow import InOrder, RunEnd, Stop
from ._step import Step, StepContext, call
from ._workflow import ForeachEntry, SleepEntry

if TYPE_CHECKING:
    from ._engine import Execution

__all__ = ["run_foreach", "run_sleep"]


def _noop(_context: StepContext) -> None:
    return None


async def run_foreach(ex: Execution, entry: ForeachEntry, items: Any) -> Any:
    """A ``foreach`` entry: the step on every item, ``entry.concurrency`` at a time, as one step."""
    step = entry.step
    if not isinstance(items, list):
        error = WorkflowError(
            f"foreach({step.id!r}): the previous step's output must be a list, got {type(items).__name__}"
        )
        started = ex._begin(step, items, call_id=None)
        ex._failed(step, None, started[1], error)
        raise Stop(RunEnd("failed", error=error))
    # One start and one result for the whole list, neither with a stepCallId (Mastra's
    # executeForeach runs the items with skipEmits).
    call_id, record, _, _, _ = ex._begin(step, items, call_id=None)
    # Every item's slot up front: items start in completion order, which a re-run does not repeat.
    slots = [ex._reserve(step) for _ in items]
    results: list[Any] = [None] * len(items)
    completed = 0
    next_index = 0
    failure: list[BaseException] = []

    order = None if ex.checkpoint is None else InOrder(ex._current_emit(), len(items))

    async def worker() -> None:
        nonlocal next_index
        while next_index < len(items) and not failure and not ex.signal.aborted:
            i = next_index
            next_index += 1
            await (item(i) if order is None else order.run(ex, i, item(i)))

    async def item(i: int) -> None:
        nonlocal completed
        try:
            results[i] = await ex._run_body(slots[i], step, items[i], None, None)
        except _Suspend:
            failure.append(WorkflowError(f"foreach({step.id!r}): suspending inside foreach is not supported"))
        except _Bail as bail:
            results[i] = to_jsonable(bail.result)
        except Exception as exc:
            failure.append(exc)
        completed += 1
        status: Literal["success", "failed"] = "failed" if failure else "success"
        ex._emit(
            WorkflowStepProgress(
                run_id=ex.run_id,
                from_=ChunkFrom.WORKFLOW,
                payload=WorkflowStepProgressPayload(
                    id=step.id,
                    completed_count=completed,
                    total_count=len(items),
                    current_index=i,
                    iteration_status=status,
                    iteration_output=results[i] if status == "success" else UNSET,
                    extra={"stepName": step.id},
                ),
            )
        )

    try:
        async with asyncio.TaskGroup() as group:
            for _ in range(min(entry.concurrency, max(len(items), 1))):
                group.create_task(worker())
    except asyncio.CancelledError:
        if not ex._take_interruption():
            raise
    if ex.signal.aborted and completed < len(items) and not failure:
        failure.append(AbortError(ex.signal.reason))
    if failure:
        ex._failed(step, call_id, record, failure[0])
        raise Stop(RunEnd("failed", error=failure[0]))
    ex._succeeded(step, call_id, record, results)
    return results


async def run_sleep(ex: Execution, entry: SleepEntry, prev: Any) -> Any:
    """A ``sleep`` / ``sleep_until`` entry: wait, passing the data through."""
    ex.path.append(entry.id)  # on Mastra's stepExecutionPath too (handlers/entry.ts)
    started = int(ex.clock())
    ex._emit(
        WorkflowStepWaiting(
            run_id=ex.run_id,
            from_=ChunkFrom.WORKFLOW,
            payload=WorkflowStepWaitingPayload(
                id=entry.id,
                payload=prev if isinstance(prev, dict) else {"value": prev},
                started_at=started,
                status="waiting",
                extra={"stepName": entry.id},
            ),
        )
    )
    ms: float
    if entry.fn is not None:
        value = await call(entry.fn, ex._context(Step(id=entry.id, execute=_noop), prev))
        if isinstance(value, datetime):
            ms = (value.timestamp() * 1000.0) - ex.clock()
        else:
            ms = float(value)
    elif entry.until is not None:
        ms = (entry.until.timestamp() * 1000.0) - ex.clock()
    else:
        ms = entry.ms or 0.0
    # A durable run always takes its sleep slot: a re-run computes a shorter wait from the clock.
    if ms > 0 or ex.checkpoint is not None:
        sleep = ex.sleep if ex.checkpoint is None else ex.checkpoint.sleep
        try:
            await until_aborted(sleep(max(ms, 0.0) / 1000.0), ex.signal)
        except AbortError:
            pass
    record = {
        "payload": prev,
        "startedAt": started,
        "status": "success",
        "output": prev,
        "endedAt": int(ex.clock()),
    }
    ex.records[entry.id] = record
    ex._emit(
        WorkflowStepResult(
            run_id=ex.run_id,
            from_=ChunkFrom.WORKFLOW,
            # Mastra's sleep result is bare: {id, endedAt, status, output}
            # (packages/core/src/workflows/handlers/entry.ts, the sleep/sleepUntil entries).
            payload=WorkflowStepResultPayload(
                step_name=entry.id,
                id=entry.id,
                status="success",
                output=prev,
                extra={"endedAt": record["endedAt"]},
            ),
        )
    )
    return prev

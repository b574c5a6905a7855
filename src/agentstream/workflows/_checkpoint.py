"""The durable-execution seam: a `Checkpoint` records each step's outcome, so a run re-executed after
a crash (on another worker) gets the recorded outcome back instead of running the step again.

The engine reserves a slot at a point of the walk whose order does not depend on timing (when a step
is announced; every item of a ``foreach`` up front), then runs the step's body through it. The body
returns a JSON record (``StepRecord``): the output, or the suspension, bail or error, plus the chunks
the step wrote and the run state it left. A replayed slot returns that record without calling the
body; the engine then writes the recorded chunks again and restores the state, so the re-run emits
the same chunk sequence as the first one. `agentstream.durable` implements it on DBOS steps.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypedDict

from ..chunks import Chunk, chunk_from_dict, chunk_to_dict, error_to_dict, to_jsonable
from ._errors import WorkflowError, _Bail, _Suspend

__all__ = ["Checkpoint", "RecordedStepError", "Slot", "StepRecord", "record_outcome", "replay_outcome"]

Slot = Callable[[Callable[[], Awaitable[Any]]], Awaitable[Any]]
"""``await slot(body)``: the body's JSON result, recorded; on a replay the recorded result, body not run."""


class Checkpoint(Protocol):
    """Where a durable run records its steps (``create_run(..., checkpoint=...)``)."""

    def reserve(self, name: str) -> Slot:
        """Take the next slot now; call order must be the same in every execution of the run."""
        ...

    async def sleep(self, seconds: float) -> None:
        """A sleep of the walk (``.sleep()`` entries) that a re-run does not sleep again."""
        ...


class StepRecord(TypedDict, total=False):
    """One step's recorded outcome: exactly one of ``output``, ``suspend``, ``bail``, ``error``."""

    output: Any
    suspend: Any
    bail: Any
    error: dict[str, Any]
    chunks: list[dict[str, Any]]
    state: Any


class RecordedStepError(WorkflowError):
    """A step's failure as recorded by the first execution, raised again by a replay: it keeps the
    original's ``name``, message and details, so chunks and snapshots read the same."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(str(error.get("message", "")))
        self.name = str(error.get("name", "Error"))
        self.details = {k: v for k, v in error.items() if k not in ("name", "message")}


async def record_outcome(
    body: Callable[[Callable[[Chunk], None]], Awaitable[Any]],
    emit: Callable[[Chunk], None],
    state: list[Any],
    ran: list[Any],
) -> StepRecord:
    """Run ``body(emit)`` with an ``emit`` that also keeps the chunks; its outcome as a `StepRecord`.
    The live outcome (the output, or the real signal or error) is put in ``ran``: the caller knows
    the body ran here (its chunks are out already) and re-raises the real object, not its record."""
    chunks: list[dict[str, Any]] = []

    def keep(chunk: Chunk) -> None:
        chunks.append(chunk_to_dict(chunk))
        emit(chunk)

    record: StepRecord
    try:
        output = to_jsonable(await body(keep))
        ran.append(output)
        record = {"output": output}
    except _Suspend as suspension:
        ran.append(suspension)
        record = {"suspend": to_jsonable(suspension.payload)}
    except _Bail as bail:
        ran.append(bail)
        record = {"bail": to_jsonable(bail.result)}
    except Exception as exc:
        ran.append(exc)
        record = {"error": error_to_dict(exc)}
    record["chunks"] = chunks
    record["state"] = to_jsonable(state[0])
    return record


def replay_outcome(record: StepRecord, emit: Callable[[Chunk], None], state: list[Any]) -> Any:
    """What a replayed step gives the walk: its chunks written again, its state restored, then its
    output returned (or its suspension, bail or error raised)."""
    for chunk in record.get("chunks", []):
        emit(chunk_from_dict(chunk, unknown="keep"))
    state[0] = record.get("state")
    if "suspend" in record:
        raise _Suspend(record["suspend"])
    if "bail" in record:
        raise _Bail(record["bail"])
    if "error" in record:
        raise RecordedStepError(record["error"])
    return record.get("output")

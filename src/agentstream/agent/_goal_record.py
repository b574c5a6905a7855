"""A thread's goal objective: Mastra's ``GoalObjectiveRecord``, kept in the storage's thread-state
domain under ``(thread_id, "goal")`` as its camelCase JSON."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any, Literal

import msgspec

if TYPE_CHECKING:
    from ..storage import Storage

__all__ = [
    "GoalObjective",
    "GoalStatus",
    "budget_reason",
    "load_objective",
    "save_objective",
    "set_objective",
    "update_objective",
]

STATE_KEY = "goal"

GoalStatus = Literal["active", "paused", "done"]


def budget_reason(max_runs: int) -> str:
    """Why a goal paused when its judged turns ran out (Mastra's words)."""
    return (
        f"Ran out of evaluation budget ({max_runs} runs) before reaching the goal"
        " \u2014 raise maxRuns to resume."
    )


class GoalObjective(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """One thread's objective (Mastra's ``GoalObjectiveRecord``; stored as its camelCase JSON)."""

    id: str | None = None
    objective: str
    status: GoalStatus
    runs_used: int
    active_duration_ms: int | None = None
    started_at: int
    updated_at: int
    max_runs: int | None = None
    judge_model_id: str | None = None
    prompt: str | None = None
    paused_reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The stored JSON (camelCase, absent fields left out)."""
        value: dict[str, Any] = msgspec.to_builtins(self)
        return value

    @classmethod
    def from_json(cls, value: Any) -> GoalObjective:
        """Read a stored record; `ValueError` names the field that is wrong."""
        try:
            return msgspec.convert(value, cls)
        except msgspec.ValidationError as exc:
            raise ValueError(f"stored goal objective is invalid: {exc}") from None


def _check_max_runs(max_runs: int | None) -> None:
    if max_runs is not None and (
        not isinstance(max_runs, int) or isinstance(max_runs, bool) or max_runs <= 0
    ):
        raise ValueError(f"max_runs must be a positive integer, got {max_runs!r}")


async def load_objective(storage: Storage, thread_id: str) -> GoalObjective | None:
    value = await storage.get_thread_state(thread_id, STATE_KEY)
    return None if value is None else GoalObjective.from_json(value)


async def save_objective(storage: Storage, thread_id: str, record: GoalObjective) -> None:
    await storage.set_thread_state(thread_id, STATE_KEY, record.to_json())


async def set_objective(
    storage: Storage,
    objective: str,
    *,
    thread_id: str,
    now_ms: int,
    judge_model_id: str | None = None,
    max_runs: int | None = None,
    prompt: str | None = None,
    id: str | None = None,
) -> GoalObjective:
    """A fresh ``active`` objective (replacing any earlier one on the thread)."""
    if not isinstance(objective, str) or not objective.strip():
        raise ValueError(f"objective must be a non-empty string, got {objective!r}")
    if not thread_id:
        raise ValueError("set_objective needs a thread_id")
    _check_max_runs(max_runs)
    record = GoalObjective(
        id=id or str(uuid.uuid4()),
        objective=objective,
        status="active",
        runs_used=0,
        active_duration_ms=0,
        started_at=now_ms,
        updated_at=now_ms,
        max_runs=max_runs,
        judge_model_id=judge_model_id,
        prompt=prompt,
    )
    await save_objective(storage, thread_id, record)
    return record


async def update_objective(
    storage: Storage,
    *,
    thread_id: str,
    now_ms: int,
    judge_model_id: str | None = None,
    max_runs: int | None = None,
    prompt: str | None = None,
    status: GoalStatus | None = None,
) -> GoalObjective | None:
    """Change an objective's options (``status="active"`` resumes a paused one); ``None``: no objective."""
    _check_max_runs(max_runs)
    if status is not None and status not in ("active", "paused", "done"):
        raise ValueError(f"status must be 'active', 'paused' or 'done', got {status!r}")
    record = await load_objective(storage, thread_id)
    if record is None:
        return None
    changes: dict[str, Any] = {"updated_at": now_ms}
    for name, value in (("judge_model_id", judge_model_id), ("max_runs", max_runs), ("prompt", prompt)):
        if value is not None:
            changes[name] = value
    if status is not None:
        changes["status"] = status
        if status != "paused":
            changes["paused_reason"] = None
    record = msgspec.structs.replace(record, **changes)
    await save_objective(storage, thread_id, record)
    return record

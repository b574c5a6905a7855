"""What a server and a worker agree on: the workflow's name, the queue, the stream key, the outcome."""

from __future__ import annotations

from typing import Any, Literal, TypedDict

__all__ = [
    "CHUNKS_STREAM",
    "QUEUE_NAME",
    "WORKFLOW_NAME",
    "Outcome",
    "TaskSpec",
    "to_sqlalchemy_url",
]

WORKFLOW_NAME = "agentstream.background_task"
QUEUE_NAME = "agentstream-background"
CHUNKS_STREAM = "chunks"
"""The DBOS stream (per workflow) that carries the task's chunks as wire dicts, in order."""


class TaskSpec(TypedDict):
    """The one argument of the durable workflow: everything a worker needs to run the tool."""

    task_id: str
    tool_name: str
    args: dict[str, Any]
    run_id: str
    tool_call_id: str
    agent_id: str | None
    thread_id: str | None
    resource_id: str | None
    resume_data: Any
    retry_count: int


class Outcome(TypedDict):
    """The workflow's result. A tool error is an outcome, not a workflow error, so the dispatching
    manager applies its own retry policy instead of DBOS's."""

    status: Literal["completed", "failed", "suspended"]
    result: Any
    error: str | None
    suspend_payload: Any


def to_sqlalchemy_url(url: str) -> str:
    """``postgresql://`` → ``postgresql+psycopg://`` (psycopg 3, the ``postgres`` extra's driver)."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url

"""Background-task spans: each attempt of a task is a ``background_task {tool}`` span whose parent is
the tool call that dispatched it (the ``execute_tool`` span, in the dispatching run's trace)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from ._settings import InstrumentationSettings, active_settings

if TYPE_CHECKING:
    from opentelemetry.context import Context

__all__ = ["TaskParent", "dispatch_parent", "traced_task"]

T = TypeVar("T")


@dataclass(frozen=True)
class TaskParent:
    """Where a dispatched task's spans go: the dispatcher's settings and OpenTelemetry context."""

    settings: InstrumentationSettings
    context: Context


def dispatch_parent() -> TaskParent | None:
    """The `TaskParent` of a task dispatched here and now (``None``: tracing is off here)."""
    settings = active_settings()
    if settings is None:
        return None
    from opentelemetry import context

    return TaskParent(settings, context.get_current())


def traced_task(
    parent: TaskParent | None,
    work: Awaitable[T],
    *,
    task_id: str,
    tool_name: str,
    agent_id: str,
    run_id: str,
    attempt: int,
    args: Any = None,
) -> Awaitable[T]:
    """``work`` (one attempt of a background task) inside its span; ``work`` itself when untraced."""
    if parent is None:
        return work
    return _traced(parent, work, task_id, tool_name, agent_id, run_id, attempt, args)


async def _traced(
    parent: TaskParent,
    work: Awaitable[T],
    task_id: str,
    tool_name: str,
    agent_id: str,
    run_id: str,
    attempt: int,
    args: Any,
) -> T:
    from opentelemetry import trace

    from ._settings import ACTIVE
    from ._spans import ABORTED, fail, to_json

    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": tool_name,
        "gen_ai.agent.id": agent_id,
        "agentstream.run_id": run_id,
        "agentstream.background_task.id": task_id,
        "agentstream.background_task.attempt": attempt,
    }
    content = parent.settings.include_content
    if content:
        attributes["gen_ai.tool.call.arguments"] = to_json(args)
    span = parent.settings.tracer.start_span(
        f"background_task {tool_name}", context=parent.context, attributes=attributes
    )
    token = ACTIVE.set(parent.settings)  # an agent run inside the task is traced the same way
    try:
        with trace.use_span(span, record_exception=False, set_status_on_exception=False):
            result = await work
    except asyncio.CancelledError:
        span.set_attribute(ABORTED, True)  # cancelled or timed out: the manager records which
        raise
    except BaseException as exc:
        fail(span, exc)
        raise
    else:
        if content:
            span.set_attribute("gen_ai.tool.call.result", to_json(result))
        return result
    finally:
        ACTIVE.reset(token)
        span.end()

"""Spans for workflows: a run and each of its steps (for the workflow engine to call)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any

from ._settings import active_settings

if TYPE_CHECKING:
    from opentelemetry.trace import Span

__all__ = ["workflow_run_span", "workflow_step_span"]


@contextmanager
def _span(name: str, attributes: dict[str, Any]) -> Iterator[Span | None]:
    settings = active_settings()
    if settings is None:
        yield None  # tracing is off: nothing is imported or made
        return
    from ._spans import ABORTED, fail

    with settings.tracer.start_as_current_span(
        name, attributes=attributes, record_exception=False, set_status_on_exception=False
    ) as span:
        try:
            yield span
        except Exception as exc:
            fail(span, exc)
            raise
        except BaseException:
            span.set_attribute(ABORTED, True)
            raise


def _attributes(workflow_id: str, run_id: str | None, extra: Mapping[str, Any] | None) -> dict[str, Any]:
    attributes: dict[str, Any] = {"agentstream.workflow.id": workflow_id}
    if run_id is not None:
        attributes["agentstream.workflow.run_id"] = run_id
    attributes.update(extra or {})
    return attributes


def workflow_run_span(
    workflow_id: str, *, run_id: str | None = None, attributes: Mapping[str, Any] | None = None
) -> AbstractContextManager[Span | None]:
    """``with workflow_run_span("wf", run_id=...) as span:`` — a ``workflow_run {id}`` span, current
    inside the block (steps and agent runs started there nest under it).

    ``span`` is ``None`` when tracing is off (then nothing is imported or made). An exception leaving
    the block is recorded on the span.
    """
    return _span(f"workflow_run {workflow_id}", _attributes(workflow_id, run_id, attributes))


def workflow_step_span(
    step_id: str,
    *,
    workflow_id: str,
    run_id: str | None = None,
    attributes: Mapping[str, Any] | None = None,
) -> AbstractContextManager[Span | None]:
    """``with workflow_step_span("fetch", workflow_id="wf", run_id=...) as span:`` — a
    ``workflow_step {step id}`` span, current inside the block, so an agent run or tool the step
    starts nests under it.

    ``span`` is ``None`` when tracing is off. An exception leaving the block is recorded on the span
    (status ``ERROR``); a cancellation marks it ``agentstream.aborted``. Use it around the step's
    execution only: a step that suspends ends its span and a resumed step opens a new one.
    """
    attrs = _attributes(workflow_id, run_id, attributes)
    attrs["agentstream.workflow.step.id"] = step_id
    return _span(f"workflow_step {step_id}", attrs)

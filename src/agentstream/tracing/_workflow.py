"""Spans for workflows: a run and each of its steps (for the workflow engine to call)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any

from .._abort import AbortError
from ._settings import active_settings

if TYPE_CHECKING:
    from opentelemetry.trace import Span

__all__ = ["workflow_run_span", "workflow_step_span"]


@contextmanager
def _span(
    name: str, attributes: dict[str, Any], control_flow: tuple[type[BaseException], ...] = ()
) -> Iterator[Span | None]:
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
        except control_flow as exc:
            span.set_attribute("agentstream.workflow.ended_by", type(exc).__name__)  # not an error
            raise
        except AbortError:
            span.set_attribute(ABORTED, True)
            raise
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
    control_flow: tuple[type[BaseException], ...] = (),
) -> AbstractContextManager[Span | None]:
    """``with workflow_step_span("fetch", workflow_id="wf", run_id=...) as span:`` — a
    ``workflow_step {step id}`` span, current inside the block, so an agent run or tool the step
    starts nests under it.

    ``span`` is ``None`` when tracing is off. An exception leaving the block is recorded on the span
    (status ``ERROR``), except the ``control_flow`` types (a suspension or bail raised through the
    step: the span gets ``agentstream.workflow.ended_by`` = the type's name); an ``AbortError`` or a
    cancellation marks it ``agentstream.aborted``. A step that suspends ends its span; the resumed
    step opens a new one.
    """
    attrs = _attributes(workflow_id, run_id, attributes)
    attrs["agentstream.workflow.step.id"] = step_id
    return _span(f"workflow_step {step_id}", attrs, control_flow)

"""OpenTelemetry tracing of agent runs (the ``otel`` extra: ``opentelemetry-api``).

Off unless switched on, and free when off: OpenTelemetry is not even imported.
`instrument` switches it on for every agent, ``Agent(instrument=True)`` (or an
`InstrumentationSettings`) for one. A traced run is a tree of spans following the GenAI semantic
conventions:

* ``invoke_agent {agent name}`` — the run (``gen_ai.agent.id``, ``gen_ai.usage.*`` totals, the final
  finish reason, ``agentstream.aborted`` when cut short);
* ``chat {model id}`` — each model call (``gen_ai.request.model``, ``gen_ai.provider.name``,
  ``gen_ai.usage.input_tokens`` / ``output_tokens``, ``gen_ai.response.finish_reasons``);
* ``execute_tool {tool name}`` — each tool call, the current span while the tool runs (so a nested
  agent run or a background task it starts nests under it);
* ``background_task {tool name}`` — each attempt of a background task, child of the tool call that
  dispatched it;
* ``workflow_run`` / ``workflow_step`` spans, made by workflows with `workflow_run_span` and
  `workflow_step_span`.

Errors set the span's status to ``ERROR`` with an ``exception`` event (secrets redacted). Prompts,
outputs, tool arguments and results are recorded only with ``include_content=True``.

`record_spans` (needs ``opentelemetry-sdk``, in the ``otel`` extra) keeps the finished spans in an
app's storage as Mastra's AI spans, for the Mastra API's observability routes (Studio's traces);
`traced_for` names the resource (user) the spans started inside belong to.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._background import TaskParent, dispatch_parent, traced_task
from ._owner import current_trace_resource, traced_for
from ._propagation import incoming_trace
from ._settings import (
    InstrumentationSettings,
    check_instrument_option,
    global_settings,
    instrument,
    settings_for,
)
from ._tree import format_span_tree
from ._workflow import workflow_run_span, workflow_step_span

if TYPE_CHECKING:
    from ..models import LanguageModel
    from ._recorder import (
        AppRecording,
        SpanRecorder,
        flush_spans,
        record_spans,
        record_spans_while_serving,
        recording_spans,
    )
    from ._run import RunTrace
else:

    def __getattr__(name: str) -> Any:
        if name == "RunTrace":  # OpenTelemetry is imported only when a run is traced
            from ._run import RunTrace

            return RunTrace
        if name in (
            "AppRecording",
            "SpanRecorder",
            "flush_spans",
            "record_spans",
            "record_spans_while_serving",
            "recording_spans",
        ):  # the SDK, only when asked for
            from . import _recorder

            return getattr(_recorder, name)
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "AppRecording",
    "InstrumentationSettings",
    "RunTrace",
    "SpanRecorder",
    "TaskParent",
    "check_instrument_option",
    "current_trace_resource",
    "dispatch_parent",
    "flush_spans",
    "format_span_tree",
    "global_settings",
    "incoming_trace",
    "instrument",
    "record_spans",
    "record_spans_while_serving",
    "recording_spans",
    "trace_run",
    "traced_for",
    "traced_task",
    "workflow_run_span",
    "workflow_step_span",
]


def trace_run(
    instrument: bool | InstrumentationSettings | None,
    *,
    agent_id: str,
    agent_name: str,
    run_id: str,
    model: LanguageModel,
    prompt: list[dict[str, Any]],
    thread_id: str | None = None,
) -> RunTrace | None:
    """The spans of one run of an agent built with ``instrument`` (``None``: the run is not traced).

    Called by ``Agent`` for every run; when tracing is off this is the only cost.
    """
    settings = settings_for(instrument)
    if settings is None:
        return None
    from ._run import RunTrace

    return RunTrace(
        settings,
        agent_id=agent_id,
        agent_name=agent_name,
        run_id=run_id,
        model=model,
        prompt=prompt,
        thread_id=thread_id,
    )

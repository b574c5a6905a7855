"""`SpanRecorder` / `record_spans`: ended spans saved in storage as Mastra AI spans (type, entity,
name, content as input/output, error), owned by the resource `traced_for` names, or by the
thread's resource; a remote parent makes a root; the pending queue is bounded."""

from __future__ import annotations

import asyncio

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import NonRecordingSpan, SpanContext, Status, StatusCode, TraceFlags

from agentstream.agent import Agent
from agentstream.memory import Memory
from agentstream.storage import InMemoryStore, ThreadRecord, TraceQuery, utc_now
from agentstream.tracing import InstrumentationSettings, SpanRecorder, flush_spans, traced_for


def _setup() -> tuple[InMemoryStore, TracerProvider, SpanRecorder]:
    storage = InMemoryStore()
    provider = TracerProvider()
    recorder = SpanRecorder(storage)
    provider.add_span_processor(recorder)
    return storage, provider, recorder


async def test_an_agent_run_is_stored_as_mastra_spans_owned_by_the_thread_resource() -> None:
    storage, provider, _ = _setup()
    now = utc_now()
    await storage.save_thread(ThreadRecord(id="t1", resource_id="ann", created_at=now, updated_at=now))
    settings = InstrumentationSettings(tracer_provider=provider, include_content=True)
    memory = Memory(storage)
    agent = Agent(
        id="helper", name="Helper", instructions="Be brief.", model="demo", instrument=settings, memory=memory
    )
    await agent.generate("What's the weather in Paris?", memory={"thread": "t1", "resource": "ann"})
    await flush_spans(storage)
    roots, total = await storage.list_traces(TraceQuery())
    assert total == 1
    root = roots[0]
    assert (root.span_type, root.entity_type, root.entity_id, root.name) == (
        "agent_run",
        "agent",
        "helper",
        "agent run: 'helper'",
    )
    assert root.resource_id == "ann" and root.error is None and root.ended_at is not None
    spans = await storage.get_trace(root.trace_id)
    model = next(s for s in spans if s.span_type == "model_generation")
    assert model.parent_span_id == root.span_id and model.name == "llm: 'demo'"
    assert isinstance(model.data, dict) and isinstance(model.data["input"], list)
    assert model.data["attributes"]["model"] == "demo"


async def test_traced_for_owns_spans_errors_are_kept_and_a_remote_parent_is_a_root() -> None:
    storage, provider, _ = _setup()
    tracer = provider.get_tracer("test")
    remote = SpanContext(trace_id=7, span_id=9, is_remote=True, trace_flags=TraceFlags(1))
    with traced_for("bob"):
        context = trace.set_span_in_context(NonRecordingSpan(remote))
        with tracer.start_as_current_span(
            "workflow_run wf", context=context, attributes={"agentstream.workflow.id": "wf"}
        ):
            with tracer.start_as_current_span(
                "execute_tool lookup",
                attributes={
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "lookup",
                    "gen_ai.tool.call.arguments": '{"q": 1}',
                },
            ) as span:
                span.set_attribute("error.type", "ValueError")
                span.set_status(Status(StatusCode.ERROR, "no such thing"))
    await flush_spans(storage)
    spans = await storage.get_trace(format(7, "032x"))
    root = next(s for s in spans if s.span_type == "workflow_run")
    tool = next(s for s in spans if s.span_type == "tool_call")
    assert root.parent_span_id is None and root.resource_id == "bob" and root.entity_id == "wf"
    assert tool.parent_span_id == root.span_id and tool.resource_id == "bob"
    assert tool.error == {"message": "no such thing", "name": "ValueError"}
    assert isinstance(tool.data, dict) and tool.data["input"] == {"q": 1}
    errors, _ = await storage.list_traces(TraceQuery(status="error"))
    assert errors == []  # the root did not fail


async def test_the_pending_queue_is_bounded() -> None:
    storage, provider, recorder = _setup()
    recorder.max_pending = 3
    tracer = provider.get_tracer("test")
    for i in range(5):  # ended with no running loop in between: nothing is saved meanwhile
        tracer.start_span(f"step {i}").end()
    assert recorder.dropped >= 2
    await recorder.flush()
    assert (await storage.list_traces(TraceQuery(per_page=100)))[1] <= 3
    await asyncio.sleep(0)

"""Legs resuming a suspended run are traced: their own ``invoke_agent`` span, linked to (and, outside
any span, a child of) the span of the leg that suspended."""

from __future__ import annotations

import itertools
from typing import Any

from agentstream import Agent, Mastra
from agentstream.agent import SNAPSHOT_WORKFLOW
from agentstream.storage import InMemoryStore
from agentstream.testing import ScriptedModel
from agentstream.tools import Tool, ToolContext

from .conftest import Spans

USAGE = {"inputTokens": 2, "outputTokens": 1, "totalTokens": 3}


def send_step(call_id: str = "c1") -> list[dict[str, Any]]:
    return [
        {"type": "tool-call", "toolCallId": call_id, "toolName": "send", "input": '{"to": "ann"}'},
        {"type": "finish", "finishReason": "tool-calls", "usage": USAGE},
    ]


def text_step(text: str) -> list[dict[str, Any]]:
    return [
        {"type": "text-start", "id": "t"},
        {"type": "text-delta", "id": "t", "delta": text},
        {"type": "text-end", "id": "t"},
        {"type": "finish", "finishReason": "stop", "usage": USAGE},
    ]


def mailer(steps: list[list[dict[str, Any]]], instrument: Any, storage: InMemoryStore | None = None) -> Agent:
    async def send(args: dict[str, Any], ctx: ToolContext) -> str:
        return f"sent to {args['to']}"

    tool = Tool("send", "send mail", {"type": "object"}, send, require_approval=True)
    agent = Agent(id="mailer", name="Mailer", model=ScriptedModel(steps), tools=[tool], instrument=instrument)
    Mastra(agents={"mailer": agent}, storage=storage or InMemoryStore())
    return agent


async def test_a_resumed_leg_is_a_child_of_the_suspended_leg(spans: Spans) -> None:
    agent = mailer([send_step(), text_step("Sent.")], spans.settings())
    first = agent.stream("mail ann", run_id="r1")
    await first.consume_stream()
    assert first.status == "suspended"
    leg = agent.approve_tool_call(run_id="r1")
    assert await leg.text == "Sent."

    runs = [s for s in spans.finished if s.name == "invoke_agent Mailer"]
    assert len(runs) == 2
    original, resumed = sorted(runs, key=lambda s: s.start_time or 0)
    assert original.context is not None and resumed.context is not None
    # one trace for the whole run, the leg under the leg it resumes, and linked to it
    assert resumed.context.trace_id == original.context.trace_id
    assert resumed.parent is not None and resumed.parent.span_id == original.context.span_id
    assert [link.context.span_id for link in resumed.links] == [original.context.span_id]
    attributes = dict(resumed.attributes or {})
    assert attributes["agentstream.run_id"] == "r1"
    assert attributes["agentstream.resumed"] is True and attributes["agentstream.resume.action"] == "approve"
    assert attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert "agentstream.resumed" not in dict(original.attributes or {})
    # the tool ran and the model answered inside the resumed leg's span
    assert spans.tree(original) == ("invoke_agent Mailer", [("chat mock-model-id", []), spans.tree(resumed)])
    assert spans.tree(resumed) == (
        "invoke_agent Mailer",
        [("execute_tool send", []), ("chat mock-model-id", [])],
    )


async def test_a_leg_resumed_inside_a_span_is_its_child_and_links_to_the_original(spans: Spans) -> None:
    agent = mailer([send_step(), text_step("Declined then.")], spans.settings())
    await agent.stream("mail ann", run_id="r1").consume_stream()
    tracer = spans.provider.get_tracer("test")
    with tracer.start_as_current_span("POST /api/chat"):
        leg = agent.decline_tool_call(run_id="r1", reason="no")
    assert await leg.text == "Declined then."  # streamed after the request span ended
    request = spans.named("POST /api/chat")
    runs = sorted(
        (s for s in spans.finished if s.name == "invoke_agent Mailer"), key=lambda s: s.start_time or 0
    )
    original, resumed = runs
    assert request.context is not None and original.context is not None
    assert resumed.parent is not None and resumed.parent.span_id == request.context.span_id
    assert [link.context.span_id for link in resumed.links] == [original.context.span_id]
    assert dict(resumed.attributes or {})["agentstream.resume.action"] == "decline"


async def test_a_run_suspending_twice_chains_its_legs(spans: Spans) -> None:
    agent = mailer([send_step("c1"), send_step("c2"), text_step("Both sent.")], spans.settings())
    await agent.stream("mail ann twice", run_id="r1").consume_stream()
    await agent.approve_tool_call(run_id="r1").consume_stream()
    assert await agent.approve_tool_call(run_id="r1").text == "Both sent."
    legs = sorted(
        (s for s in spans.finished if s.name == "invoke_agent Mailer"), key=lambda s: s.start_time or 0
    )
    assert len(legs) == 3
    for before, after in itertools.pairwise(legs):
        assert before.context is not None and after.parent is not None
        assert after.parent.span_id == before.context.span_id
    assert len({s.context.trace_id for s in legs if s.context}) == 1


async def test_an_untraced_suspension_gets_a_new_span_naming_the_run(spans: Spans) -> None:
    storage = InMemoryStore()
    first = mailer([send_step()], None, storage)
    await first.stream("mail ann", run_id="r1").consume_stream()
    assert spans.finished == []
    traced = mailer([text_step("Sent.")], spans.settings(), storage)
    assert await traced.approve_tool_call(run_id="r1").text == "Sent."
    run = spans.named("invoke_agent Mailer")
    assert run.parent is None and list(run.links) == []
    assert dict(run.attributes or {})["agentstream.run_id"] == "r1"
    assert dict(run.attributes or {})["agentstream.resumed"] is True


async def test_a_malformed_stored_trace_reference_is_ignored(spans: Spans) -> None:
    storage = InMemoryStore()
    agent = mailer([send_step(), text_step("Sent.")], spans.settings(), storage)
    await agent.stream("mail ann", run_id="r1").consume_stream()
    snapshot = await storage.load_workflow_snapshot(SNAPSHOT_WORKFLOW, "r1")
    assert isinstance(snapshot, dict) and set(snapshot["trace"]) == {"traceId", "spanId", "traceFlags"}
    await storage.persist_workflow_snapshot(SNAPSHOT_WORKFLOW, "r1", {**snapshot, "trace": {"traceId": "zz"}})
    spans.exporter.clear()
    assert await agent.approve_tool_call(run_id="r1").text == "Sent."
    run = spans.named("invoke_agent Mailer")
    assert run.parent is None and list(run.links) == []

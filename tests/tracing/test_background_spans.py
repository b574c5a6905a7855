"""Background tasks: each attempt's span is a child of the tool call that dispatched it."""

from __future__ import annotations

from typing import Any

from opentelemetry.trace import StatusCode

from agentstream import Agent, Mastra
from agentstream.background import BackgroundTaskManager
from agentstream.storage import InMemoryStore
from agentstream.testing import ScriptedModel
from agentstream.tools import Tool, ToolContext

from .conftest import Spans
from .test_run_spans import text_step

SCHEMA = {"type": "object", "properties": {"topic": {"type": "string"}}, "required": ["topic"]}


def research_step() -> list[dict[str, Any]]:
    return [
        {"type": "stream-start", "warnings": []},
        {"type": "tool-call", "toolCallId": "call-1", "toolName": "research", "input": '{"topic": "tides"}'},
        {"type": "finish", "finishReason": "tool-calls", "usage": {"inputTokens": 1, "outputTokens": 1}},
    ]


async def run_with_background(spans: Spans, execute: Any, *, retries: int = 0) -> str:
    tool = Tool(
        id="research",
        description="Research a topic.",
        input_schema=SCHEMA,
        execute=execute,
        background={"enabled": True},
    )
    agent = Agent(
        id="helper",
        name="Helper",
        model=ScriptedModel([research_step(), text_step("Started.")]),
        tools=[tool],
        instrument=spans.settings(),
    )
    manager = BackgroundTaskManager(
        InMemoryStore(), {"enabled": True, "default_retries": {"max_retries": retries}}
    )
    Mastra(agents={"helper": agent}, storage=manager.storage, background_tasks=manager)
    task_ids = [
        c.payload.task_id
        async for c in agent.stream("research tides").full_stream  # type: ignore[attr-defined]
        if c.type == "background-task-started"
    ]
    assert len(task_ids) == 1
    await manager.wait_for_completion(task_ids[0], timeout_ms=30_000)
    await manager.shutdown()
    return task_ids[0]


async def test_task_span_is_a_child_of_the_dispatching_tool_call(spans: Spans) -> None:
    inner = Agent(id="summarizer", model=ScriptedModel([text_step("Tides follow the moon.")]))

    async def research(args: dict[str, Any], ctx: ToolContext) -> str:
        return await inner.stream(f"summarize {args['topic']}").text  # traced like its dispatcher

    task_id = await run_with_background(spans, research)
    assert spans.tree() == (
        "invoke_agent Helper",
        [
            ("chat mock-model-id", []),
            (
                "execute_tool research",
                [
                    ("background_task research", [("invoke_agent summarizer", [("chat mock-model-id", [])])]),
                ],
            ),
            ("chat mock-model-id", []),
        ],
    )
    task = spans.named("background_task research")
    assert dict(task.attributes or {}) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "research",
        "gen_ai.agent.id": "helper",
        "agentstream.run_id": (spans.named("invoke_agent Helper").attributes or {})["agentstream.run_id"],
        "agentstream.background_task.id": task_id,
        "agentstream.background_task.attempt": 1,
    }
    assert task.status.status_code is StatusCode.UNSET


async def test_each_failed_attempt_is_an_error_span(spans: Spans) -> None:
    async def research(args: dict[str, Any], ctx: ToolContext) -> str:
        raise RuntimeError("archive unreachable")

    await run_with_background(spans, research, retries=1)
    tool_span = spans.named("execute_tool research")
    attempts = spans.children(tool_span)
    assert [(s.name, (s.attributes or {})["agentstream.background_task.attempt"]) for s in attempts] == [
        ("background_task research", 1),
        ("background_task research", 2),
    ]
    for span in attempts:
        assert span.status.status_code is StatusCode.ERROR
        assert span.status.description == "archive unreachable"


async def test_untraced_dispatch_makes_no_task_span(spans: Spans) -> None:
    async def research(args: dict[str, Any], ctx: ToolContext) -> str:
        return "done"

    tool = Tool(
        id="research", description="r", input_schema=SCHEMA, execute=research, background={"enabled": True}
    )
    agent = Agent(id="helper", model=ScriptedModel([research_step(), text_step()]), tools=[tool])
    manager = BackgroundTaskManager(InMemoryStore(), {"enabled": True})
    Mastra(agents={"helper": agent}, storage=manager.storage, background_tasks=manager)
    ids = [
        c.payload.task_id
        async for c in agent.stream("x").full_stream  # type: ignore[attr-defined]
        if c.type == "background-task-started"
    ]
    await manager.wait_for_completion(ids[0], timeout_ms=30_000)
    await manager.shutdown()
    assert spans.finished == []


async def test_until_idle_continuation_nests_where_the_stream_was_made(spans: Spans) -> None:
    async def research(args: dict[str, Any], ctx: ToolContext) -> str:
        return "tides follow the moon"

    tool = Tool(
        id="research", description="r", input_schema=SCHEMA, execute=research, background={"enabled": True}
    )
    agent = Agent(
        id="helper",
        name="Helper",
        tools=[tool],
        instrument=spans.settings(),
        model=ScriptedModel([research_step(), text_step("Started."), text_step("Tides: moon.")]),
    )
    manager = BackgroundTaskManager(InMemoryStore(), {"enabled": True})
    Mastra(agents={"helper": agent}, storage=manager.storage, background_tasks=manager)
    with spans.provider.get_tracer("test").start_as_current_span("request"):
        output = agent.stream("research tides", until_idle=True)
    assert "Tides: moon." in await output.text  # read outside the request span
    await manager.shutdown()
    assert spans.tree() == (
        "request",
        [
            (
                "invoke_agent Helper",
                [
                    ("chat mock-model-id", []),
                    ("execute_tool research", [("background_task research", [])]),
                    ("chat mock-model-id", []),
                ],
            ),
            ("invoke_agent Helper", [("chat mock-model-id", [])]),
        ],
    )

"""``background-task-progress`` while a step waits for running tasks under ``wait_timeout_ms``
(Mastra ``background-task-check-step.ts``; issue 21)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from agentstream import Mastra
from agentstream.agent import Agent
from agentstream.background import BackgroundTaskManager, _wait, stream_until_idle
from agentstream.chunks import chunk_to_dict
from agentstream.storage import InMemoryStore
from agentstream.testing import ScriptedModel
from agentstream.tools import Tool, ToolContext
from tests.background.test_until_idle import SCHEMA, _steps
from tests.conformance import CONFORMANCE, load


def _gated(gate: asyncio.Event) -> Tool:
    async def lookup(args: dict[str, Any], ctx: ToolContext) -> Any:
        await gate.wait()
        return {"answer": args["q"]}

    return Tool(id="lookup", description="d", input_schema=SCHEMA, execute=lookup, background=True)


def _recorded_progress() -> dict[str, Any]:
    vector = load(CONFORMANCE / "aisdk" / "background-tasks.json")
    return next(c for c in vector["input"] if c["type"] == "background-task-progress")


async def test_a_step_waits_streaming_progress_and_continues_with_the_real_result(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_wait, "PROGRESS_INTERVAL_MS", 20)
    gate = asyncio.Event()
    model = ScriptedModel(_steps(("c1", "lookup", {"q": "x"}), "The answer is x."))
    agent = Agent(id="a", model=model, tools=[_gated(gate)])
    config = {"enabled": True, "wait_timeout_ms": 10_000, "shutdown_grace_ms": 0}
    async with BackgroundTaskManager(InMemoryStore(), config) as manager:
        Mastra(agents={"a": agent}, background_tasks=manager)
        chunks: list[dict[str, Any]] = []
        async with asyncio.timeout(10):
            async for chunk in agent.stream("go", run_id="run-1").full_stream:
                chunks.append(chunk_to_dict(chunk))
                if sum(c["type"] == "background-task-progress" for c in chunks) == 3:
                    gate.set()  # the task ends after the wait has reported twice on its cadence
    types = [c["type"] for c in chunks]
    progress = [c for c in chunks if c["type"] == "background-task-progress"]
    task_id = next(c for c in chunks if c["type"] == "background-task-started")["payload"]["taskId"]
    recorded = _recorded_progress()
    for chunk in progress:
        assert set(chunk) == set(recorded) and set(chunk["payload"]) == set(recorded["payload"])
        assert chunk["runId"] == "run-1" and chunk["from"] == "AGENT"
        assert chunk["payload"]["taskIds"] == [task_id] and chunk["payload"]["runningCount"] == 1
    elapsed = [c["payload"]["elapsedMs"] for c in progress]
    assert elapsed[0] == 0 and all(isinstance(e, int) for e in elapsed)
    assert elapsed[1:] == sorted(elapsed[1:]) and elapsed[1] >= 20
    # the wait ends with the task's record, before the step ends; the loop goes on
    first_step_end = types.index("step-finish")
    assert types.index("background-task-progress") > types.index("tool-result")
    completed = types.index("background-task-completed")
    assert completed < first_step_end and chunks[completed]["runId"] == "run-1"
    assert types[-1] == "finish" and types.count("step-start") == 2
    # the next model call sees the task's real result instead of the placeholder
    tool_message = model.calls[1].prompt[-1]
    assert tool_message["role"] == "tool"
    assert tool_message["content"][0]["output"] == {"type": "json", "value": {"answer": "x"}}


async def test_after_the_timeout_the_loop_ends_as_it_would_and_the_task_runs_on() -> None:
    gate = asyncio.Event()
    model = ScriptedModel(_steps(("c1", "lookup", {"q": "x"}), "Started."))
    agent = Agent(id="a", model=model, tools=[_gated(gate)])
    config = {"enabled": True, "wait_timeout_ms": 30, "shutdown_grace_ms": 0}
    async with BackgroundTaskManager(InMemoryStore(), config) as manager:
        Mastra(agents={"a": agent}, background_tasks=manager)
        async with asyncio.timeout(10):
            chunks = [chunk_to_dict(c) async for c in agent.stream("go").full_stream]
        assert (await manager.list_tasks(status="running")).total == 1
    types = [c["type"] for c in chunks]
    assert types[-1] == "finish" and "background-task-completed" not in types
    # each of the two steps waited once (30 ms, under the 3 s cadence): one progress chunk each
    assert [c["payload"]["elapsedMs"] for c in chunks if c["type"] == "background-task-progress"] == [0, 0]
    placeholder = model.calls[1].prompt[-1]["content"][0]["output"]
    assert "background" in json.dumps(placeholder).lower()


async def test_without_wait_timeout_or_in_an_until_idle_turn_a_step_does_not_wait() -> None:
    for config, until_idle in (
        ({"enabled": True}, False),
        ({"enabled": True, "wait_timeout_ms": 60_000}, True),
    ):
        gate = asyncio.Event()
        model = ScriptedModel(_steps(("c1", "lookup", {"q": "x"}), "Started.", "Done."))
        agent = Agent(id="a", model=model, tools=[_gated(gate)])
        async with BackgroundTaskManager(InMemoryStore(), {**config, "shutdown_grace_ms": 0}) as manager:
            Mastra(agents={"a": agent}, background_tasks=manager)
            out: Any = stream_until_idle(agent, "go", manager=manager) if until_idle else agent.stream("go")
            types: list[str] = []
            async with asyncio.timeout(10):
                async for chunk in out.full_stream:
                    types.append(chunk.type)
                    if chunk.type == "finish":
                        gate.set()
        assert "background-task-progress" not in types, (config, until_idle)
        assert types[-1] == "finish"

"""The public wiring: ``Mastra(storage, background_tasks)``, ``Tool(background=...)``,
``agent.stream(..., until_idle=...)`` / ``agent.stream_until_idle`` and ``memory=`` together."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest

from agentstream import Mastra
from agentstream.agent import Agent
from agentstream.background import BackgroundTaskManager, UntilIdleOutput
from agentstream.storage import BaseStore, InMemoryStore
from agentstream.testing import ScriptedModel
from agentstream.tools import Tool, ToolContext

USAGE = {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}
SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}


def text(t: str) -> list[dict[str, Any]]:
    return [
        {"type": "stream-start", "warnings": []},
        {"type": "text-start", "id": "t"},
        {"type": "text-delta", "id": "t", "delta": t},
        {"type": "text-end", "id": "t"},
        {"type": "finish", "finishReason": "stop", "usage": USAGE},
    ]


def call(call_id: str, q: str) -> list[dict[str, Any]]:
    return [
        {"type": "stream-start", "warnings": []},
        {"type": "tool-call", "toolCallId": call_id, "toolName": "lookup", "input": json.dumps({"q": q})},
        {"type": "finish", "finishReason": "tool-calls", "usage": USAGE},
    ]


def lookup_tool(release: asyncio.Event | None = None, **kw: Any) -> Tool:
    """The ``lookup`` tool; with ``release`` it finishes only once the test sets that event."""

    async def lookup(args: dict[str, Any], ctx: Any) -> Any:
        if args["q"] == "ask" and ctx.resume_data is None:
            await ctx.suspend({"question": "which one?"})
        if release is not None:
            await release.wait()
        return {"answer": args["q"], "resumed": getattr(ctx, "resume_data", None)}

    return Tool(id="lookup", description="d", input_schema=SCHEMA, execute=lookup, **kw)


async def test_mastra_defaults_and_lifecycle() -> None:
    agent = Agent(id="a", model=ScriptedModel([text("hi")]))
    mastra = Mastra(agents={"a": agent})
    assert isinstance(mastra.storage, InMemoryStore)
    assert mastra.background_task_manager is None and agent.background_task_manager is None
    assert Mastra(background_tasks={"enabled": False}).background_task_manager is None
    async with Mastra(agents={"a": agent}, background_tasks={"global_concurrency": 2}) as m2:
        manager = m2.background_task_manager
        assert manager is not None and manager.config.enabled
        assert manager.config.global_concurrency == 2
        assert manager.storage is m2.storage and agent.background_task_manager is manager
        assert not manager._started  # lazily started on first use
    await mastra.aclose()
    other = BackgroundTaskManager(InMemoryStore())
    with pytest.raises(ValueError, match="Mastra's storage"):
        Mastra(storage=InMemoryStore(), background_tasks=other)


async def test_registered_agent_dispatches_plain_stream_with_memory(store: BaseStore) -> None:
    model = ScriptedModel([call("c1", "x"), text("Started.")])
    release = asyncio.Event()
    agent = Agent(id="a", instructions="sys", model=model, tools=[lookup_tool(release, background=True)])
    async with Mastra(agents={"a": agent}, storage=store, background_tasks=True) as mastra:
        manager = mastra.background_task_manager
        assert manager is not None
        out = agent.stream("go", memory={"thread": "t1", "resource": "u1"})
        types = [c.type async for c in out.full_stream]
        assert "background-task-started" in types
        assert "_background" in model.calls[0].options["tools"][0]["inputSchema"]["properties"]
        assert "background" in model.calls[0].prompt[0]["content"]
        (task,) = (await manager.list_tasks()).tasks
        assert (task.thread_id, task.resource_id, task.agent_id) == ("t1", "u1", "a")
        assert task.status in ("pending", "running")  # the stream ended; the task goes on
        release.set()
        done = await manager.wait_for_completion(task.id, timeout_ms=5_000)
        assert done.result == {"answer": "x", "resumed": None}
        # a tool without background config runs inline even under the manager
        model2 = ScriptedModel([call("c2", "y"), text("Done.")])
        inline = Agent(id="b", model=model2, tools=[lookup_tool()])
        mastra.register_agent("b", inline)
        chunks = [c async for c in inline.stream("go").full_stream]
        assert not any(c.type.startswith("background-task") for c in chunks)
        assert "_background" not in model2.calls[0].options["tools"][0]["inputSchema"].get("properties", {})


async def test_until_idle_options_suspend_and_resume(store: BaseStore) -> None:
    model = ScriptedModel([call("c1", "ask"), text("Asked."), text("Waiting for you.")])
    agent = Agent(id="a", model=model, tools=[lookup_tool(background={"enabled": True})])
    async with Mastra(agents={"a": agent}, storage=store, background_tasks=True) as mastra:
        manager = mastra.background_task_manager
        assert manager is not None
        out = agent.stream_until_idle("go", memory={"thread": "t1", "resource": "u1"}, max_idle_ms=5_000)
        assert isinstance(out, UntilIdleOutput)
        types = [c.type async for c in out.full_stream]
        assert "background-task-suspended" in types and types.count("start") == 2
        (task,) = (await manager.list_tasks(status="suspended")).tasks
        await manager.resume(task.id, {"pick": 1})
        done = await manager.wait_for_completion(task.id, timeout_ms=5_000)
        assert done.result == {"answer": "ask", "resumed": {"pick": 1}}
        stored = (await store.list_messages("t1")).messages
        assert [m.role for m in stored] == ["user", "assistant", "assistant"]
        assert stored[2].content["content"] == "Waiting for you."

    agent2 = Agent(id="z", model=ScriptedModel([text("plain")]))
    out2 = agent2.stream("hi", until_idle=True)  # no manager: a plain stream, as in Mastra
    assert not isinstance(out2, UntilIdleOutput) and await out2.text == "plain"
    with pytest.raises(TypeError, match="unknown until_idle"):
        agent2.stream("hi", until_idle={"maxIdle": 1})
    with pytest.raises(ValueError, match="max_idle_ms"):
        agent2.stream("hi", until_idle={"max_idle_ms": 0})
    with pytest.raises(TypeError, match="generate"):
        await agent2.generate("hi", until_idle=True)


@pytest.mark.looptime
async def test_until_idle_max_idle_ms_closes_the_stream() -> None:
    async def never(args: dict[str, Any], ctx: ToolContext) -> Any:
        await asyncio.sleep(3600)

    tool = Tool(id="lookup", description="d", input_schema=SCHEMA, execute=never, background=True)
    agent = Agent(id="a", model=ScriptedModel([call("c1", "x"), text("Started.")]), tools=[tool])
    async with Mastra(agents={"a": agent}, background_tasks={"shutdown_grace_ms": 0}) as mastra:
        out = agent.stream("go", until_idle={"max_idle_ms": 100})
        types = await asyncio.wait_for(_types(out), 5)
        assert types[-1] == "finish" and "background-task-running" in types
        assert mastra.background_task_manager is not None


async def _types(out: Any) -> list[str]:
    return [c.type async for c in out.full_stream]


@pytest.mark.looptime  # the demo model and tool pace themselves with asyncio.sleep
async def test_serve_demo_app_streams_background_task_parts() -> None:
    from agentstream._app import create_app, demo_mastra

    mastra = demo_mastra()
    app = create_app(mastra, delay_in_ms=None, heartbeat_ms=0)
    body = {
        "id": "c1",
        "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "research tides"}]}],
        "trigger": "submit-message",
    }
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
        response = await client.post("/api/chat/demo", json=body, timeout=60)
    await mastra.aclose()
    frames = [f[len("data: ") :] for f in response.text.split("\n\n") if f.startswith("data: ")]
    events = [json.loads(f) for f in frames if f != "[DONE]"]
    types = [e["type"] for e in events]
    for kind in ("started", "running", "output", "completed"):
        assert f"data-background-task-{kind}" in types, types
    completed = next(e for e in events if e["type"] == "data-background-task-completed")
    assert completed["data"]["result"]["topic"] == "tides"
    assert completed["data"]["state"] == "data-background-task-completed" and completed["id"]
    text = "".join(e.get("delta", "") for e in events if e["type"] == "text-delta")
    assert "Here is what I found about tides" in text  # the continuation answer

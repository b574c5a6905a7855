"""``request_context`` in workflow runs (Mastra's ``requestContext``): every step sees it, agent and
tool steps hand it on, a nested workflow inherits it, and a suspended run keeps it in its snapshot."""

from __future__ import annotations

from typing import Any

from agentstream import Agent, Mastra, RequestContext
from agentstream.storage import InMemoryStore
from agentstream.testing import ScriptedModel
from agentstream.tools import Tool, ToolContext
from agentstream.workflows import StepContext, create_step, create_workflow

ANSWER = [
    {"type": "stream-start", "warnings": []},
    {"type": "text-start", "id": "t"},
    {"type": "text-delta", "id": "t", "delta": "ok"},
    {"type": "text-end", "id": "t"},
    {"type": "finish", "finishReason": "stop", "usage": {"inputTokens": 1, "outputTokens": 1}},
]


async def test_steps_and_conditions_see_the_run_s_context() -> None:
    seen: list[tuple[str, Any]] = []

    def first(c: StepContext) -> Any:
        seen.append(("first", c.request_context.get("tenant")))
        c.request_context.set("visited", True)  # one context per run: later steps see it
        return {"n": 1}

    def second(c: StepContext) -> Any:
        seen.append(("second", dict(c.request_context)))
        return {"n": 2}

    wf = (
        create_workflow(id="w")
        .then(create_step(id="first", execute=first))
        .branch(
            [(lambda c: c.request_context.get("tenant") == "acme", create_step(id="second", execute=second))]
        )
        .commit()
    )
    context = RequestContext(tenant="acme")
    result = await (await wf.create_run()).start(input_data={}, request_context=context)
    assert result.status == "success"
    assert seen == [("first", "acme"), ("second", {"tenant": "acme", "visited": True})]


async def test_agent_tool_and_nested_steps_hand_it_on() -> None:
    model = ScriptedModel([ANSWER])
    instructions: list[str] = []

    def dynamic(request_context: RequestContext) -> str:
        instructions.append(f"for {request_context.get('tenant')}")
        return instructions[-1]

    agent = Agent(id="writer", instructions=dynamic, model=model)
    tool_saw: list[Any] = []

    async def lookup(args: dict[str, Any], ctx: ToolContext) -> Any:
        tool_saw.append(ctx.request_context.get("tenant"))
        return {"prompt": "write"}

    tool = Tool(id="lookup", description="d", input_schema={"type": "object"}, execute=lookup)
    inner_saw: list[Any] = []
    inner = (
        create_workflow(id="inner")
        .then(
            create_step(id="peek", execute=lambda c: inner_saw.append(c.request_context.get("tenant")) or {})
        )
        .commit()
    )
    wf = (
        create_workflow(id="outer")
        .then(create_step(tool))
        .then(create_step(agent))
        .then(create_step(inner))
        .commit()
    )
    result = await (await wf.create_run()).start(input_data={}, request_context={"tenant": "globex"})
    assert result.status == "success", result.error
    assert tool_saw == ["globex"] and instructions == ["for globex"] and inner_saw == ["globex"]
    assert model.calls[0].prompt[0] == {"role": "system", "content": "for globex"}


async def test_a_suspended_run_keeps_its_context_for_the_resume() -> None:
    asked: list[Any] = []

    async def approve(c: StepContext) -> Any:
        asked.append(c.request_context.get("tenant"))
        if c.resume_data is None:
            return await c.suspend({})
        return {"tenant": c.request_context.get("tenant"), "by": c.request_context.get("approver")}

    wf = create_workflow(id="approval").then(create_step(id="approve", execute=approve)).commit()
    store = InMemoryStore()
    Mastra(workflows={"approval": wf}, storage=store)
    first = await wf.create_run("r1")
    assert (await first.start(input_data={}, request_context={"tenant": "acme"})).status == "suspended"
    snapshot = await store.load_workflow_snapshot("approval", "r1")
    assert isinstance(snapshot, dict) and snapshot["requestContext"] == {"tenant": "acme"}
    # another run object (another process): the context comes back from the snapshot
    again = await wf.create_run("r1")
    result = await again.resume(resume_data={})
    assert result.result == {"tenant": "acme", "by": None}
    assert asked == ["acme", "acme"]


async def test_a_resume_may_bring_its_own_context() -> None:
    async def approve(c: StepContext) -> Any:
        if c.resume_data is None:
            return await c.suspend({})
        return dict(c.request_context)

    wf = create_workflow(id="approval").then(create_step(id="approve", execute=approve)).commit()
    Mastra(workflows={"approval": wf}, storage=InMemoryStore())
    run = await wf.create_run("r2")
    await run.start(input_data={}, request_context={"tenant": "acme"})
    result = await run.resume(resume_data={}, request_context={"tenant": "acme", "approver": "ada"})
    assert result.result == {"tenant": "acme", "approver": "ada"}


async def test_without_a_context_steps_get_an_empty_one_and_the_snapshot_has_none() -> None:
    seen: list[Any] = []
    wf = create_workflow(id="w").then(
        create_step(id="s", execute=lambda c: seen.append(c.request_context) or {})
    )
    store = InMemoryStore()
    Mastra(workflows={"w": wf.commit()}, storage=store)
    run = await wf.create_run("r3")
    await run.start(input_data={})
    assert seen == [RequestContext()]
    snapshot = await store.load_workflow_snapshot("w", "r3")
    assert isinstance(snapshot, dict) and "requestContext" not in snapshot

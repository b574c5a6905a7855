"""Human in the loop beyond the recorded vectors: wrong answers, races, policies, storage."""

from __future__ import annotations

import asyncio
from typing import Any

import pydantic
import pytest

from agentstream import Mastra
from agentstream.agent import SNAPSHOT_WORKFLOW, Agent, ResumeError
from agentstream.chunks import Chunk
from agentstream.memory import Memory
from agentstream.storage import InMemoryStore, SQLiteStore
from agentstream.testing import ScriptedModel
from agentstream.tools import Tool, ToolContext, ToolInputValidationError

USAGE = {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}


def calls_step(*calls: tuple[str, str, str]) -> list[dict[str, Any]]:
    """One model step calling ``(call_id, tool, json_args)`` each."""
    parts: list[dict[str, Any]] = [
        {"type": "tool-call", "toolCallId": cid, "toolName": name, "input": args} for cid, name, args in calls
    ]
    return [*parts, {"type": "finish", "finishReason": "tool-calls", "usage": USAGE}]


def text_step(text: str) -> list[dict[str, Any]]:
    return [
        {"type": "text-start", "id": "t"},
        {"type": "text-delta", "id": "t", "delta": text},
        {"type": "text-end", "id": "t"},
        {"type": "finish", "finishReason": "stop", "usage": USAGE},
    ]


class Transfer(pydantic.BaseModel):
    amount: int


class Confirm(pydantic.BaseModel):
    confirmed: bool


def make_tools(executions: list[tuple[str, Any]], *, approval: bool = True) -> list[Tool]:
    async def transfer(args: Transfer, ctx: ToolContext) -> dict[str, Any]:
        executions.append(("transfer", args.amount))
        return {"sent": args.amount}

    async def book(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        executions.append(("book", ctx.resume_data))
        if ctx.resume_data is None:
            return await ctx.suspend({"question": "sure?"})
        return {"booked": ctx.resume_data.confirmed}

    return [
        Tool("transfer", "send money", Transfer, transfer, require_approval=approval),
        Tool("book", "book it", {"type": "object"}, book, resume_schema=Confirm),
    ]


async def read(output: Any) -> list[Chunk]:
    return [c async for c in output.full_stream]


def types(chunks: list[Chunk]) -> list[str]:
    return [c.type for c in chunks]


async def suspended_agent(
    steps: list[list[dict[str, Any]]], executions: list[tuple[str, Any]], **agent_kw: Any
) -> tuple[Agent, ScriptedModel]:
    model = ScriptedModel(steps)
    agent = Agent(id="a", model=model, tools=make_tools(executions), **agent_kw)
    out = agent.stream("go", run_id="r1")
    chunks = await read(out)
    assert out.status == "suspended", types(chunks)
    return agent, model


async def test_unknown_run_fails_the_leg_with_a_clear_error() -> None:
    agent = Agent(id="a", model=ScriptedModel([]), tools=make_tools([]))
    out = agent.approve_tool_call(run_id="nope", tool_call_id="c1")
    chunks = await read(out)
    assert types(chunks) == ["error"]
    with pytest.raises(ResumeError, match="no suspended run 'nope'") as info:
        await out.text
    assert info.value.status == "not-found" and info.value.run_id == "nope"
    with pytest.raises(ValueError, match="run_id must be"):
        agent.approve_tool_call(run_id="")


async def test_a_finished_run_cannot_be_resumed_again() -> None:
    executions: list[tuple[str, Any]] = []
    steps = [calls_step(("c1", "transfer", '{"amount": 5}')), text_step("sent")]
    agent, _ = await suspended_agent(steps, executions)
    done = agent.approve_tool_call(run_id="r1", tool_call_id="c1")
    assert await done.text == "sent"
    again = agent.approve_tool_call(run_id="r1", tool_call_id="c1")
    with pytest.raises(ResumeError, match="already finished") as info:
        await again.text
    assert info.value.status == "finished"
    assert executions == [("transfer", 5)]


async def test_two_legs_racing_for_one_run_run_the_tool_once() -> None:
    executions: list[tuple[str, Any]] = []
    steps = [calls_step(("c1", "transfer", '{"amount": 5}')), text_step("sent"), text_step("twice?")]
    agent, model = await suspended_agent(steps, executions)
    legs = [agent.approve_tool_call(run_id="r1", tool_call_id="c1") for _ in range(5)]
    results = await asyncio.gather(*(leg.text for leg in legs), return_exceptions=True)
    assert results.count("sent") == 1, results
    errors = [r for r in results if isinstance(r, ResumeError)]
    assert len(errors) == 4 and all(e.status in ("running", "finished") for e in errors)
    assert executions == [("transfer", 5)]
    assert len(model.calls) == 2


async def test_wrong_answers_leave_the_run_waiting() -> None:
    executions: list[tuple[str, Any]] = []
    steps = [calls_step(("c1", "book", '{"flight": "LH1"}')), text_step("booked")]
    agent, _ = await suspended_agent(steps, executions)
    # resume data that does not match the tool's resume_schema: the error names the field
    bad = agent.resume_stream({"confirmed": "maybe"}, run_id="r1")
    with pytest.raises(ToolInputValidationError, match=r"(?s)resume_schema.*- confirmed: "):
        await bad.text
    # approve / decline do not answer a tool that suspended itself
    with pytest.raises(ResumeError, match="waits for resume data") as info:
        await agent.approve_tool_call(run_id="r1").text
    assert info.value.status == "mismatch"
    # another call id
    with pytest.raises(ResumeError, match="waits for tool call 'c1'"):
        await agent.resume_stream({"confirmed": True}, run_id="r1", tool_call_id="c9").text
    # still waiting: the right answer resumes it, the tool runs again from the start
    ok = agent.resume_stream({"confirmed": True}, run_id="r1", tool_call_id="c1")
    chunks = await read(ok)
    assert types(chunks)[:2] == ["tool-result", "step-finish"]
    assert await ok.text == "booked"
    assert executions == [("book", None), ("book", Confirm(confirmed=True))]


async def test_another_agent_resumes_only_its_own_runs() -> None:
    store = InMemoryStore()
    executions: list[tuple[str, Any]] = []
    steps = [calls_step(("c1", "transfer", '{"amount": 5}')), text_step("sent")]
    await suspended_agent(steps, executions, memory=Memory(store))
    other = Agent(id="b", model=ScriptedModel([]), memory=Memory(store))
    with pytest.raises(ResumeError, match="belongs to agent 'a', not 'b'"):
        await other.approve_tool_call(run_id="r1").text


async def test_decline_with_a_reason_tells_the_model() -> None:
    executions: list[tuple[str, Any]] = []
    steps = [calls_step(("c1", "transfer", '{"amount": 500}')), text_step("ok, not sent")]
    agent, model = await suspended_agent(steps, executions)
    out = agent.decline_tool_call(run_id="r1", tool_call_id="c1", reason="too much")
    chunks = await read(out)
    denied = chunks[0]
    assert denied.type == "tool-output-denied"
    assert denied.payload.approval == {"id": "c1", "approved": False, "reason": "too much"}
    tool_message = model.calls[1].prompt[-1]
    assert tool_message["content"][0]["output"] == {"type": "text", "value": "too much"}
    assert executions == []
    assert await out.text == "ok, not sent"


async def test_resume_stream_answers_an_approval_with_the_approval_schema() -> None:
    executions: list[tuple[str, Any]] = []
    steps = [calls_step(("c1", "transfer", '{"amount": 5}')), text_step("no")]
    agent, _ = await suspended_agent(steps, executions)
    with pytest.raises(ToolInputValidationError, match="waits for approval of 'transfer'"):
        await agent.resume_stream({"ok": 1}, run_id="r1").text
    out = agent.resume_stream({"approved": False}, run_id="r1")
    chunks = await read(out)
    assert chunks[0].type == "tool-output-denied"
    assert chunks[0].payload.approval["reason"] == "Tool call was not approved by the user"


async def test_two_calls_needing_approval_in_one_step_ask_one_at_a_time() -> None:
    executions: list[tuple[str, Any]] = []
    steps = [
        calls_step(("c1", "transfer", '{"amount": 1}'), ("c2", "transfer", '{"amount": 2}')),
        text_step("both sent"),
    ]
    agent, _ = await suspended_agent(steps, executions)
    first = agent.approve_tool_call(run_id="r1", tool_call_id="c1")
    chunks = await read(first)
    # c1 ran; the step stops again on c2's approval, still without step-finish
    assert types(chunks) == ["tool-call-approval"]
    assert chunks[0].payload.tool_call_id == "c2"
    assert first.status == "suspended"
    assert executions == [("transfer", 1)]
    second = agent.approve_tool_call(run_id="r1", tool_call_id="c2")
    chunks = await read(second)
    assert types(chunks) == [
        "tool-result",
        "tool-result",
        "step-finish",
        "step-start",
        "text-start",
        "text-delta",
        "text-end",
        "step-finish",
        "finish",
    ]
    assert [c.payload.result for c in chunks[:2]] == [{"sent": 1}, {"sent": 2}]
    assert executions == [("transfer", 1), ("transfer", 2)]
    assert len(await second.steps) == 2
    assert (await second.usage).input_tokens == 2


@pytest.mark.parametrize("is_async", [False, True])
async def test_require_tool_approval_callable_decides_per_call(is_async: bool) -> None:
    asked: list[tuple[str, Any]] = []

    def sync_policy(name: str, args: Any) -> bool:
        asked.append((name, args))
        return bool(args.get("amount", 0) > 100)

    async def async_policy(name: str, args: Any) -> bool:
        return sync_policy(name, args)

    executions: list[tuple[str, Any]] = []
    model = ScriptedModel(
        [
            calls_step(("c1", "transfer", '{"amount": 5}')),
            calls_step(("c2", "transfer", '{"amount": 500}')),
            text_step("done"),
        ]
    )
    agent = Agent(id="a", model=model, tools=make_tools(executions, approval=False))
    out = agent.stream("go", require_tool_approval=async_policy if is_async else sync_policy)
    chunks = await read(out)
    assert types(chunks)[-1] == "tool-call-approval"
    assert asked == [("transfer", {"amount": 5}), ("transfer", {"amount": 500})]
    assert executions == [("transfer", 5)]
    assert len(await out.steps) == 1
    # the callable is not stored with the run: the agent's default (no approval) applies when resumed
    done = agent.approve_tool_call(run_id=out.run_id)
    assert await done.text == "done"
    assert executions == [("transfer", 5), ("transfer", 500)]


def test_require_tool_approval_must_be_bool_or_callable() -> None:
    with pytest.raises(TypeError, match="require_tool_approval must be True, False or a callable"):
        Agent(id="a", model=ScriptedModel([]), require_tool_approval="yes")  # type: ignore[arg-type]


async def test_tools_that_may_stop_the_run_run_one_at_a_time() -> None:
    running = 0
    peak = 0

    async def slow(args: dict[str, Any], ctx: ToolContext) -> str:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        running -= 1
        return "ok"

    steps = [calls_step(("c1", "slow", "{}"), ("c2", "slow", "{}"), ("c3", "slow", "{}")), text_step("x")]
    plain = Tool("slow", "s", {"type": "object"}, slow)
    await Agent(id="a", model=ScriptedModel(steps), tools=[plain]).generate("go")
    assert peak == 3
    peak = 0
    may_suspend = Tool("other", "o", {"type": "object"}, slow, resume_schema={"type": "object"})
    await Agent(id="a", model=ScriptedModel(steps), tools=[plain, may_suspend]).generate("go")
    assert peak == 1
    peak = 0
    await Agent(id="a", model=ScriptedModel(steps), tools=[plain]).generate(
        "go", require_tool_approval=lambda name, args: False
    )
    assert peak == 1


async def test_a_new_agent_object_over_the_same_storage_resumes(tmp_path: Any) -> None:
    path = tmp_path / "runs.db"
    executions: list[tuple[str, Any]] = []
    async with SQLiteStore(path) as store:
        steps = [calls_step(("c1", "transfer", '{"amount": 5}'))]
        first = Agent(id="a", model=ScriptedModel(steps), tools=make_tools(executions))
        Mastra(agents={"a": first}, storage=store)
        out = first.stream("go", run_id="r-sql", max_steps=7)
        await read(out)
        assert out.status == "suspended"
        snapshot = await store.load_workflow_snapshot(SNAPSHOT_WORKFLOW, "r-sql")
        assert isinstance(snapshot, dict) and snapshot["status"] == "suspended"
        assert snapshot["pending"]["kind"] == "approval" and snapshot["options"]["max_steps"] == 7
    async with SQLiteStore(path) as store:
        model = ScriptedModel([text_step("sent")])
        second = Agent(id="a", model=model, tools=make_tools(executions))
        Mastra(agents={"a": second}, storage=store)
        finishes: list[Any] = []
        out = second.approve_tool_call(run_id="r-sql", on_finish=finishes.append)
        assert await out.text == "sent"
        assert [f.finish_reason for f in finishes] == ["stop"]
        assert [m["role"] for m in model.calls[0].prompt] == ["user", "assistant", "tool"]
        done = await store.load_workflow_snapshot(SNAPSHOT_WORKFLOW, "r-sql")
        assert isinstance(done, dict) and done["status"] == "finished"
    assert executions == [("transfer", 5)]


async def test_without_storage_runs_stay_in_the_agent() -> None:
    executions: list[tuple[str, Any]] = []
    steps = [calls_step(("c1", "transfer", '{"amount": 5}')), text_step("sent")]
    agent, _ = await suspended_agent(steps, executions)
    stranger = Agent(id="a", model=ScriptedModel([]), tools=make_tools(executions))
    with pytest.raises(ResumeError, match="no suspended run 'r1'"):
        await stranger.approve_tool_call(run_id="r1").text
    assert await agent.approve_tool_call(run_id="r1").text == "sent"


async def test_a_suspended_turn_and_its_continuation_are_stored_in_memory() -> None:
    store = InMemoryStore()
    executions: list[tuple[str, Any]] = []
    memory = {"thread": "t1", "resource": "u1"}
    model = ScriptedModel(
        [calls_step(("c1", "transfer", '{"amount": 5}')), text_step("sent"), text_step("you're welcome")]
    )
    agent = Agent(id="a", model=model, tools=make_tools(executions), memory=Memory(store))
    out = agent.stream("send 5", memory=memory, run_id="r1")
    await read(out)
    page = await store.list_messages("t1")
    assert [m.role for m in page.messages] == ["user", "assistant"]
    stopped = page.messages[1]
    invocation = stopped.content["parts"][-1]["toolInvocation"]
    assert invocation["state"] == "call" and invocation["toolCallId"] == "c1"
    done = agent.approve_tool_call(run_id="r1")  # the thread comes from the stored run
    assert await done.text == "sent"
    # as Mastra's message list: the continuation is the rest of the stopped message (its id and
    # time kept), the call's part now holding its result, so a reader sees the call once
    page = await store.list_messages("t1")
    assert [m.role for m in page.messages] == ["user", "assistant"]
    message = page.messages[1]
    assert (message.id, message.created_at) == (stopped.id, stopped.created_at)
    kinds = [p["type"] for p in message.content["parts"]]
    assert kinds == ["tool-invocation", "step-start", "text"], kinds
    call = message.content["parts"][0]["toolInvocation"]
    assert call["state"] == "result" and call["result"] == {"sent": 5} and call["args"] == {"amount": 5}
    assert message.content["content"] == "sent"
    # the next turn's history: the call, its result, then the answer
    await read(agent.stream("thanks", memory=memory))
    history = model.calls[2].prompt
    assert [m["role"] for m in history] == ["user", "assistant", "tool", "assistant", "user"]
    assert history[2]["content"][0]["output"] == {"type": "json", "value": {"sent": 5}}


async def test_a_declined_call_is_stored_as_denied_in_the_stopped_message() -> None:
    store = InMemoryStore()
    executions: list[tuple[str, Any]] = []
    memory = {"thread": "t1", "resource": "u1"}
    model = ScriptedModel(
        [calls_step(("c1", "transfer", '{"amount": 5}')), text_step("not sent"), text_step("ok")]
    )
    agent = Agent(id="a", model=model, tools=make_tools(executions), memory=Memory(store))
    await read(agent.stream("send 5", memory=memory, run_id="r1"))
    assert await agent.decline_tool_call(run_id="r1", reason="too much").text == "not sent"
    assert executions == []
    page = await store.list_messages("t1")
    assert [m.role for m in page.messages] == ["user", "assistant"]
    call = page.messages[1].content["parts"][0]["toolInvocation"]
    # Mastra's updateToolInvocation on a decline: state output-denied, the approval kept
    assert call["state"] == "output-denied" and call["approval"]["approved"] is False
    assert call["approval"]["reason"] == "too much"
    # read back, the model is told why the call did not run (Mastra's conversion: the reason)
    await read(agent.stream("fine", memory=memory))
    tool = next(m for m in model.calls[2].prompt if m["role"] == "tool")
    assert tool["content"][0]["output"] == {"type": "text", "value": "too much"}


def json_step(value: str) -> list[dict[str, Any]]:
    """The auto-resume reader's model call: structured output as JSON text."""
    return text_step(value)


async def test_auto_resume_a_new_message_answers_the_suspended_tool() -> None:
    store = InMemoryStore()
    executions: list[tuple[str, Any]] = []
    memory = {"thread": "t1", "resource": "u1"}
    model = ScriptedModel(
        [
            calls_step(("c1", "book", '{"flight": "LH1"}')),
            json_step('{"confirmed": true}'),  # the reader turns "yes, book it" into resume data
            text_step("Booked."),
            text_step("You're welcome."),
        ]
    )
    agent = Agent(id="a", model=model, tools=make_tools(executions), memory=Memory(store))
    first = agent.stream("book LH1", memory=memory, auto_resume_suspended_tools=True)
    await read(first)
    assert first.status == "suspended"
    second = agent.stream("yes, book it", memory=memory, auto_resume_suspended_tools=True)
    chunks = await read(second)
    assert types(chunks)[:2] == ["tool-result", "step-finish"]  # the same run goes on: no start
    assert second.run_id == first.run_id
    assert await second.text == "Booked."
    assert executions == [("book", None), ("book", Confirm(confirmed=True))]
    reader_call = model.calls[1]
    assert "asked the user for input" in reader_call.prompt[0]["content"]
    assert reader_call.prompt[-1]["content"][0]["text"] == "yes, book it"
    page = await store.list_messages("t1")
    assert [m.role for m in page.messages] == ["user", "assistant", "user", "assistant"]
    assert await store.get_thread_state("t1", "agentstream:suspended-run") is None
    # nothing is pending any more: the next message starts a new run
    third = agent.stream("thanks", memory=memory, auto_resume_suspended_tools=True)
    chunks = await read(third)
    assert types(chunks)[0] == "start" and third.run_id != first.run_id


async def test_auto_resume_answers_an_approval() -> None:
    store = InMemoryStore()
    executions: list[tuple[str, Any]] = []
    memory = {"thread": "t2", "resource": "u1"}
    model = ScriptedModel(
        [
            calls_step(("c1", "transfer", '{"amount": 9}')),
            json_step('{"approved": false, "reason": "not today"}'),
            text_step("Cancelled."),
        ]
    )
    agent = Agent(id="a", model=model, tools=make_tools(executions), memory=Memory(store))
    await read(agent.stream("send 9", memory=memory, auto_resume_suspended_tools=True))
    out = agent.stream("no, not today", memory=memory, auto_resume_suspended_tools=True)
    chunks = await read(out)
    assert chunks[0].type == "tool-output-denied"
    assert chunks[0].payload.approval["reason"] == "not today"
    assert executions == []
    assert await out.text == "Cancelled."


async def test_without_auto_resume_a_new_message_starts_over() -> None:
    store = InMemoryStore()
    memory = {"thread": "t3", "resource": "u1"}
    model = ScriptedModel([calls_step(("c1", "transfer", '{"amount": 9}')), text_step("Hello again.")])
    agent = Agent(id="a", model=model, tools=make_tools([]), memory=Memory(store))
    first = agent.stream("send 9", memory=memory)
    await read(first)
    second = agent.stream("hi", memory=memory)
    chunks = await read(second)
    assert types(chunks)[0] == "start" and second.run_id != first.run_id
    # the earlier run still waits for its approval
    snapshot = await store.load_workflow_snapshot(SNAPSHOT_WORKFLOW, first.run_id)
    assert isinstance(snapshot, dict) and snapshot["status"] == "suspended"


async def test_results_of_calls_that_ran_before_the_suspension_survive_the_storage(tmp_path: Any) -> None:
    executions: list[tuple[str, Any]] = []

    async def boom(args: dict[str, Any], ctx: ToolContext) -> Any:
        executions.append(("boom", None))
        raise RuntimeError("the sky fell")

    async def weather(args: dict[str, Any], ctx: ToolContext) -> Any:
        executions.append(("weather", None))
        ctx.writer.write({"progress": "looking"})
        return {"sunny": True}

    tools = [
        Tool("boom", "b", {"type": "object"}, boom),
        Tool("weather", "w", {"type": "object"}, weather),
        *make_tools(executions),
    ]
    steps = [
        calls_step(("c1", "boom", "{}"), ("c2", "weather", "{}"), ("c3", "transfer", '{"amount": 1}')),
        text_step("done"),
    ]
    async with SQLiteStore(tmp_path / "r.db") as store:
        model = ScriptedModel(steps)
        agent = Agent(id="a", model=model, tools=tools, memory=Memory(store))
        first = agent.stream("go", run_id="r1")
        chunks = await read(first)
        # tools write live: weather's tool-output streams in the first leg; results wait for the step
        assert types(chunks)[-2:] == ["tool-output", "tool-call-approval"]
        out = agent.approve_tool_call(run_id="r1", tool_call_id="c3")
        chunks = await read(out)
    assert types(chunks)[:4] == ["tool-error", "tool-result", "tool-result", "step-finish"]
    error = chunks[0].payload.error
    assert str(error) == "the sky fell" and getattr(error, "name", None) == "RuntimeError"
    assert executions == [("boom", None), ("weather", None), ("transfer", 1)]  # nothing ran twice
    tool_message = model.calls[1].prompt[-1]["content"]
    assert tool_message[0]["output"] == {"type": "error-text", "value": "the sky fell"}
    assert tool_message[1]["output"] == {"type": "json", "value": {"sunny": True}}
    assert await out.text == "done"


async def test_suspended_run_tells_what_a_run_waits_for() -> None:
    store = InMemoryStore()
    memory = {"thread": "t9", "resource": "u1"}
    model = ScriptedModel([calls_step(("c1", "book", '{"flight": "LH1"}')), text_step("ok")])
    agent = Agent(id="a", model=model, tools=make_tools([]), memory=Memory(store))
    assert await agent.suspended_run(run_id="r9") is None
    await read(agent.stream("book", run_id="r9", memory=memory))
    pending = await agent.suspended_run(run_id="r9")
    assert pending is not None
    assert {k: pending[k] for k in ("runId", "kind", "toolCallId", "toolName", "suspendPayload")} == {
        "runId": "r9",
        "kind": "suspend",
        "toolCallId": "c1",
        "toolName": "book",
        "suspendPayload": {"question": "sure?"},
    }
    assert '"confirmed"' in pending["resumeSchema"]
    assert await agent.suspended_run(thread_id="t9") == pending
    await agent.resume_stream({"confirmed": False}, run_id="r9").consume_stream()
    assert await agent.suspended_run(run_id="r9") is None
    assert await agent.suspended_run(thread_id="t9") is None
    with pytest.raises(TypeError, match="exactly one of"):
        await agent.suspended_run()


async def test_a_leg_cannot_move_a_run_into_another_users_thread() -> None:
    store = InMemoryStore()
    executions: list[tuple[str, Any]] = []
    model = ScriptedModel([calls_step(("c1", "transfer", '{"amount": 5}')), text_step("sent")])
    agent = Agent(id="a", model=model, tools=make_tools(executions), memory=Memory(store))
    await read(agent.stream("send 5", run_id="r1", memory={"thread": "t-alice", "resource": "alice"}))
    pending = await agent.suspended_run(run_id="r1")
    assert pending is not None and (pending["threadId"], pending["resourceId"]) == ("t-alice", "alice")
    stolen = agent.approve_tool_call(run_id="r1", memory={"thread": "t-mallory", "resource": "mallory"})
    with pytest.raises(ResumeError, match="belongs to memory thread 't-alice' of resource 'alice'"):
        await stolen.text
    assert executions == []
    assert (await store.find_thread("t-mallory")) is None  # nothing was written there
    ok = agent.approve_tool_call(run_id="r1", memory={"thread": "t-alice", "resource": "alice"})
    assert await ok.text == "sent"


async def test_closing_a_resumed_leg_mid_tool_ends_the_run_without_hanging() -> None:
    started = asyncio.Event()
    cancelled: list[bool] = []

    async def slow(args: dict[str, Any], ctx: ToolContext) -> Any:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(True)
            raise

    tool = Tool("slow", "s", {"type": "object"}, slow, require_approval=True)
    store = InMemoryStore()
    agent = Agent(
        id="a", model=ScriptedModel([calls_step(("c1", "slow", "{}"))]), tools=[tool], memory=Memory(store)
    )
    await read(agent.stream("go", run_id="r1"))
    leg = agent.approve_tool_call(run_id="r1")
    reader = asyncio.create_task(read(leg))
    await started.wait()
    await leg.aclose()
    await reader  # the stream ends; nothing hangs
    assert cancelled == [True] and leg.status == "canceled"
    snapshot = await store.load_workflow_snapshot(SNAPSHOT_WORKFLOW, "r1")
    assert isinstance(snapshot, dict) and snapshot["status"] == "failed"
    with pytest.raises(ResumeError, match="already finished"):
        await agent.approve_tool_call(run_id="r1").text

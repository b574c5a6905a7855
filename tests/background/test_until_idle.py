"""The agent integration: dispatch from the tool-call step and until-idle streams, checked against
the recorded Mastra run ``conformance/agent/background-task-until-idle.json`` (through the public
``Mastra(background_tasks=...)`` + ``agent.stream(..., until_idle=True, memory=...)``)."""

from __future__ import annotations

import asyncio
import json
import re
from datetime import UTC, datetime
from typing import Any

from agentstream import Mastra
from agentstream._abort import AbortController
from agentstream.agent import Agent
from agentstream.background import BackgroundTaskManager, stream_until_idle
from agentstream.chunks import chunk_to_dict, to_jsonable
from agentstream.storage import BaseStore
from agentstream.testing import ScriptedModel
from agentstream.tools import Tool, ToolContext
from tests.conformance import CONFORMANCE, load, to_wire

FROZEN = datetime(2000, 1, 1, tzinfo=UTC)
FROZEN_MS = 946684800000
VECTOR = CONFORMANCE / "agent" / "background-task-until-idle.json"

_ID = re.compile(r"^<id:\d+>$")


def _matches(expected: Any, actual: Any, path: str = "") -> None:
    if isinstance(expected, str) and _ID.match(expected):
        assert isinstance(actual, str) and actual, path
        return
    if isinstance(expected, str) and "<id:" in expected:
        pattern = re.escape(expected)
        pattern = re.sub(r"<id:\d+>", "[0-9a-f-]+", pattern.replace(r"\<", "<").replace(r"\>", ">"))
        pattern = re.sub(r"<id:\d+>", "[0-9a-f-]+", pattern)
        assert re.fullmatch(pattern, actual), f"{path}: {expected!r} !~ {actual!r}"
        return
    if isinstance(expected, dict):
        assert isinstance(actual, dict), f"{path}: expected a dict, got {actual!r}"
        assert set(expected) == set(actual), f"{path}: keys {sorted(expected)} != {sorted(actual)}"
        for key in expected:
            _matches(expected[key], actual[key], f"{path}.{key}")
        return
    if isinstance(expected, list):
        assert isinstance(actual, list) and len(expected) == len(actual), (
            f"{path}: {expected!r} != {actual!r}"
        )
        for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
            _matches(e, a, f"{path}[{i}]")
        return
    assert expected == actual, f"{path}: {expected!r} != {actual!r}"


def _research_tool(gate: asyncio.Event, spec: dict[str, Any]) -> Tool:
    async def research(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        await gate.wait()
        return {"topic": args["topic"], "summary": "Research complete"}

    return Tool(
        id="research",
        description=spec["description"],
        input_schema=spec["inputSchema"],
        execute=research,
        background=spec["background"],
    )


async def _run_vector(
    store: BaseStore, *, finish_by_default: bool = False
) -> tuple[
    dict[str, Any], list[dict[str, Any]], ScriptedModel, Any, BackgroundTaskManager, dict[str, list[Any]]
]:
    vector = load(VECTOR)
    spec = vector["agent"]
    gate = asyncio.Event()
    model = ScriptedModel(vector["modelSteps"])
    calls: dict[str, list[Any]] = {"onFinish": [], "onStepFinish": []}
    finish = {"on_finish": calls["onFinish"].append}
    agent = Agent(
        default_options=finish if finish_by_default else None,
        id=spec["id"],
        name=spec["name"],
        instructions=spec["instructions"],
        model=model,
        tools=[_research_tool(gate, spec["tools"][0])],
    )
    manager = BackgroundTaskManager(store, {"enabled": True}, clock=lambda: FROZEN)
    mastra = Mastra(agents={spec["registeredAs"]: agent}, storage=store, background_tasks=manager)
    assert mastra.background_task_manager is manager
    out = agent.stream(
        vector["prompt"],
        until_idle=True,
        memory={"thread": "thread-1", "resource": "user-1"},
        run_id="run-1",
        clock=lambda: FROZEN_MS,
        **({} if finish_by_default else finish),
        on_step_finish=calls["onStepFinish"].append,
    )
    chunks: list[dict[str, Any]] = []
    async for chunk in out.full_stream:
        chunks.append(chunk_to_dict(chunk))
        if chunk.type == "finish" and not gate.is_set():
            gate.set()
    return vector, chunks, model, out, manager, calls


async def test_until_idle_matches_recording(store: BaseStore) -> None:
    vector, chunks, model, out, manager, calls = await _run_vector(store)
    expected = to_wire(vector["expectedChunks"])
    assert [c["type"] for c in chunks] == [c["type"] for c in expected]
    for i, (exp, act) in enumerate(zip(expected, chunks, strict=True)):
        where = f"chunk[{i}] {exp['type']}"
        if exp["type"] in ("step-finish", "finish"):
            for key in ("reason", "isContinued"):
                assert act["payload"]["stepResult"].get(key) == exp["payload"]["stepResult"].get(key), where
            assert act["payload"]["output"]["usage"] == exp["payload"]["output"]["usage"], where
            assert act["payload"]["output"].get("text") == exp["payload"]["output"].get("text"), where
        elif exp["type"] in ("start", "step-start"):
            assert act["payload"]["messageId"], where
            assert act["runId"] == "run-1"
        else:
            _matches(exp, act, where)
    # one task id throughout: started, running, placeholder, completed
    task_id = chunks[6]["payload"]["taskId"]
    assert chunks[7]["payload"]["taskId"] == chunks[16]["payload"]["taskId"] == task_id
    assert task_id in chunks[8]["payload"]["result"]
    assert chunks[17]["payload"]["messageId"] != chunks[0]["payload"]["messageId"]

    # prompts: call 1 has the background section + injected schema; call 3 the directive and the real result
    assert len(model.calls) == 3
    exp_calls = vector["modelCalls"]
    prompt0 = to_jsonable(model.calls[0].prompt)
    _matches(to_wire(exp_calls[0]["prompt"]), prompt0, "modelCalls[0].prompt")
    tools_sent = to_jsonable(model.calls[0].options["tools"])
    _matches(exp_calls[0]["otherOptions"]["tools"], tools_sent, "modelCalls[0].tools")
    prompt2 = to_jsonable(model.calls[2].prompt)
    exp2 = to_wire(exp_calls[2]["prompt"])
    assert [m["role"] for m in prompt2] == [m["role"] for m in exp2]
    _matches(exp2[0], prompt2[0], "call3.system")
    _matches(exp2[1], prompt2[1], "call3.directive")
    _matches(exp2[4]["content"][0]["output"], prompt2[4]["content"][0]["output"], "call3.tool-result.output")
    _matches(
        exp2[3]["content"][0]["providerOptions"],
        prompt2[3]["content"][0]["providerOptions"],
        "call3.tool-call.providerOptions",
    )
    _matches(
        exp2[4]["content"][0]["providerOptions"],
        prompt2[4]["content"][0]["providerOptions"],
        "call3.tool-result.providerOptions",
    )

    # text: every turn's, as the user saw them (each turn's own in out.turns); on_finish once; the stored task
    assert await out.text == "Research started.\n\nThe research is complete."
    assert [await turn.text for turn in out.turns] == ["Research started.", "The research is complete."]
    assert len(calls["onFinish"]) == 1 and len(calls["onStepFinish"]) == 3
    after = to_wire(vector["backgroundTasksAfter"])
    tasks = [chunk_to_dict_task(t) for t in (await manager.list_tasks()).tasks]
    _matches(after, tasks, "backgroundTasksAfter")

    # memory: the user message, the first turn (placeholder replaced by the real result), the continuation
    stored = (await store.list_messages("thread-1")).messages
    assert [m.role for m in stored] == ["user", "assistant", "assistant"]
    text_part = {"type": "text", "text": "Research quantum computing"}  # + createdAt (ms), as Mastra's
    assert [{k: v for k, v in p.items() if k != "createdAt"} for p in stored[0].content["parts"]] == [
        text_part
    ]
    first = stored[1].content
    inv = next(p for p in first["parts"] if p["type"] == "tool-invocation")
    assert inv["toolInvocation"]["state"] == "result"
    assert inv["toolInvocation"]["result"] == {"topic": "quantum computing", "summary": "Research complete"}
    assert inv["providerMetadata"]["mastra"]["backgroundTask"] == {"taskId": task_id, "status": "completed"}
    assert first["metadata"]["backgroundTasks"]["call-1"]["taskId"] == task_id
    assert first["content"] == "Research started."
    assert stored[2].content["content"] == "The research is complete."
    assert "IMPORTANT" not in json.dumps([m.content for m in stored])  # the directive is not kept
    await manager.shutdown()


def chunk_to_dict_task(task: Any) -> dict[str, Any]:
    from agentstream.chunks._codec import format_date

    out: dict[str, Any] = {
        "id": task.id,
        "status": task.status,
        "toolName": task.tool_name,
        "toolCallId": task.tool_call_id,
        "args": task.args,
        "agentId": task.agent_id,
        "threadId": task.thread_id,
        "resourceId": task.resource_id,
        "runId": task.run_id,
        "retryCount": task.retry_count,
        "maxRetries": task.max_retries,
        "timeoutMs": task.timeout_ms,
        "createdAt": format_date(task.created_at),
    }
    for key, value in (("startedAt", task.started_at), ("completedAt", task.completed_at)):
        if value is not None:
            out[key] = format_date(value)
    if task.result is not None:
        out["result"] = task.result
    return out


def _steps(*texts_or_calls: Any) -> list[list[dict[str, Any]]]:
    steps = []
    for i, item in enumerate(texts_or_calls):
        parts: list[dict[str, Any]] = [{"type": "stream-start", "warnings": []}]
        if isinstance(item, tuple):
            call_id, name, args = item
            parts += [
                {"type": "tool-call", "toolCallId": call_id, "toolName": name, "input": json.dumps(args)}
            ]
            parts.append(
                {
                    "type": "finish",
                    "finishReason": "tool-calls",
                    "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
                }
            )
        else:
            parts += [
                {"type": "text-start", "id": f"t{i}"},
                {"type": "text-delta", "id": f"t{i}", "delta": item},
                {"type": "text-end", "id": f"t{i}"},
                {
                    "type": "finish",
                    "finishReason": "stop",
                    "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
                },
            ]
        steps.append(parts)
    return steps


SCHEMA = {
    "type": "object",
    "properties": {"q": {"type": "string"}},
    "required": ["q"],
    "additionalProperties": False,
}


async def test_failed_task_continuation_and_awaited(store: BaseStore) -> None:
    async def flaky(args: dict[str, Any], ctx: ToolContext) -> Any:
        if args["q"] == "bad":
            raise ValueError("no luck")
        return {"answer": args["q"]}

    tool = Tool(id="lookup", description="d", input_schema=SCHEMA, execute=flaky, background=True)
    model = ScriptedModel(
        _steps(
            ("c1", "lookup", {"q": "bad"}),
            "Started.",
            "It failed.",
        )
    )
    agent = Agent(id="a", instructions="sys", model=model, tools=[tool])
    async with BackgroundTaskManager(store) as manager:
        out = stream_until_idle(agent, "go", manager=manager, thread_id="t")
        # awaiting the text starts the stream and waits until it is idle: every turn's text, in order
        assert await out.text == "Started.\n\nIt failed."
        assert [await turn.text for turn in out.turns] == ["Started.", "It failed."]
        types = [c.type async for c in out.full_stream]
    assert "background-task-failed" in types and types.count("start") == 2
    directive = model.calls[2].prompt[1]["content"]
    assert "The following tool-call IDs failed: c1 (lookup)" in directive
    tool_msg = next(m for m in model.calls[2].prompt if m["role"] == "tool")
    assert tool_msg["content"][0]["output"] == {
        "type": "error-text",
        "value": "Background task failed: no luck",
    }

    # awaited: the run blocks on the task and sees the real result
    model2 = ScriptedModel(
        _steps(("c2", "lookup", {"q": "ok", "_background": {"disposition": "awaited"}}), "Done.")
    )
    agent2 = Agent(id="a2", instructions="sys", model=model2, tools=[tool])
    async with BackgroundTaskManager(store) as manager:
        Mastra(agents={"a2": agent2}, background_tasks=manager)
        chunks = [chunk_to_dict(c) async for c in agent2.stream("go").full_stream]
    result = next(c for c in chunks if c["type"] == "tool-result")
    assert result["payload"]["result"] == {"answer": "ok"}
    assert result["payload"]["providerMetadata"]["mastra"]["backgroundTask"]["status"] == "completed"
    assert [c["type"] for c in chunks].count("background-task-started") == 1


async def test_foreground_override_and_plain_stream(store: BaseStore) -> None:
    async def fast(args: dict[str, Any], ctx: ToolContext) -> Any:
        return {"q": args["q"]}

    tool = Tool(id="lookup", description="d", input_schema=SCHEMA, execute=fast, background=True)
    model = ScriptedModel(
        _steps(("c1", "lookup", {"q": "x", "_background": {"disposition": "foreground"}}), "ok")
    )
    async with BackgroundTaskManager(store) as manager:
        agent = Agent(id="a", model=model, tools=[tool])
        Mastra(agents={"a": agent}, background_tasks=manager)
        chunks = [chunk_to_dict(c) async for c in agent.stream("go").full_stream]
        assert (await manager.list_tasks()).total == 0
    result = next(c for c in chunks if c["type"] == "tool-result")
    assert result["payload"]["result"] == {"q": "x"} and "providerMetadata" not in result["payload"]
    assert "_background" in model.calls[0].options["tools"][0]["inputSchema"]["properties"]
    assert "_background" not in (await_args := model.calls[1].prompt[-1]["content"][0]["input"]), await_args


async def test_abort_and_max_idle(store: BaseStore) -> None:
    async def never(args: dict[str, Any], ctx: ToolContext) -> Any:
        await asyncio.sleep(3600)

    tool = Tool(id="lookup", description="d", input_schema=SCHEMA, execute=never, background=True)
    # the tools never end: leaving the block abandons them at once instead of granting them the 5 s grace
    async with BackgroundTaskManager(store, {"shutdown_grace_ms": 0}) as manager:
        model = ScriptedModel(_steps(("c1", "lookup", {"q": "x"}), "Started."))
        out = stream_until_idle(
            Agent(id="a", model=model, tools=[tool]), "go", manager=manager, max_idle_ms=100
        )
        types = [c.type async for c in out.full_stream]  # closes 100 ms after the first turn
        assert types[-1] == "finish" and "background-task-running" in types
        assert await out.text == "Started." and len(out.turns) == 1
        ctrl = AbortController()
        model = ScriptedModel(_steps(("c1", "lookup", {"q": "x"}), "Started."))
        out = stream_until_idle(
            Agent(id="b", model=model, tools=[tool]), "go", manager=manager, abort_signal=ctrl.signal
        )
        seen: list[str] = []

        async def read() -> None:
            async for c in out.full_stream:
                seen.append(c.type)
                if c.type == "finish":
                    ctrl.abort()

        await asyncio.wait_for(read(), 5)
        assert seen[-1] == "finish"
        running = (await manager.list_tasks(status="running")).total
        assert running == 2  # tasks outlive the closed stream


async def test_suspended_and_cancelled_tasks_get_a_continuation(store: BaseStore) -> None:
    started = asyncio.Event()

    async def gated(args: dict[str, Any], ctx: Any) -> Any:
        if args["q"] == "ask":
            if ctx.resume_data is None:
                await ctx.suspend({"secret": "do-not-leak"})
            return {"resumed": ctx.resume_data}
        started.set()
        await asyncio.sleep(3600)

    tool = Tool(id="lookup", description="d", input_schema=SCHEMA, execute=gated, background=True)
    model = ScriptedModel(_steps(("c1", "lookup", {"q": "ask"}), "Asked.", "Waiting for you."))
    async with BackgroundTaskManager(store) as manager:
        out = stream_until_idle(
            Agent(id="a", model=model, tools=[tool]), "go", manager=manager, thread_id="t"
        )
        chunks = [chunk_to_dict(c) async for c in out.full_stream]
        types = [c["type"] for c in chunks]
        assert "background-task-suspended" in types and types.count("start") == 2
        directive = model.calls[2].prompt[1]["content"]
        assert "are suspended: c1 (lookup)" in directive and "do-not-leak" not in directive
        task_id = next(c for c in chunks if c["type"] == "background-task-started")["payload"]["taskId"]
        # resumed later (e.g. by the user's next request): completes from the registry executor
        await manager.resume(task_id, {"ok": True})
        done = await manager.wait_for_completion(task_id)
        assert done.result == {"resumed": {"ok": True}}

        model = ScriptedModel(_steps(("c9", "lookup", {"q": "long"}), "Working.", "Cancelled it."))
        out = stream_until_idle(Agent(id="b", model=model, tools=[tool]), "go", manager=manager)

        async def cancel_soon() -> None:
            await started.wait()
            running = await manager.list_tasks(status="running", agent_id="b")
            await manager.cancel(running.tasks[0].id)

        canceller = asyncio.create_task(cancel_soon())
        types = [c.type async for c in out.full_stream]
        await canceller
        assert "background-task-cancelled" in types and types.count("start") == 2
        assert (
            "were cancelled by the user before completion: c9 (lookup)" in model.calls[2].prompt[1]["content"]
        )


class _StopsOnAbort:
    """Streams a first word, then waits until the run is aborted (as a provider's request ends)."""

    specification_version = "v2"
    provider = "test"
    model_id = "stops-on-abort"

    def do_stream(self, options: Any) -> Any:
        return self._play(options["abort_signal"])

    async def _play(self, signal: Any) -> Any:
        from agentstream._abort import AbortError

        yield {"type": "stream-start", "warnings": []}
        yield {"type": "text-start", "id": "t1"}
        yield {"type": "text-delta", "id": "t1", "delta": "Once "}
        aborted = asyncio.Event()
        signal.add_listener(lambda _reason: aborted.set())
        await aborted.wait()
        raise AbortError("the request was aborted")


async def test_an_abort_mid_turn_ends_the_stream_as_an_aborted_run_does(store: BaseStore) -> None:
    ctrl = AbortController()
    async with BackgroundTaskManager(store) as manager:
        out = stream_until_idle(
            Agent(id="a", model=_StopsOnAbort()), "go", manager=manager, abort_signal=ctrl.signal
        )
        seen: list[str] = []

        async def read() -> None:
            async for c in out.full_stream:
                seen.append(c.type)
                if c.type == "text-delta":
                    ctrl.abort()

        await asyncio.wait_for(read(), 10)
    # The turn in flight ends itself (`abort`, `finish`); the combined stream carries that end.
    assert seen[-2:] == ["abort", "finish"]


async def test_a_default_on_finish_is_called_once_too(store: BaseStore) -> None:
    """``default_options`` are merged once per run: the continuation turns, which leave
    ``on_finish`` out, do not get the default's back."""
    _, _, _, out, _, calls = await _run_vector(store, finish_by_default=True)
    assert await out.text == "Research started.\n\nThe research is complete."
    assert len(calls["onFinish"]) == 1

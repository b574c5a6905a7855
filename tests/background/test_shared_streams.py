"""Managers sharing a stream store follow each other's tasks; a remote engine's task is attached to,
not restarted, when its manager dies (in-process managers here; real processes in tests/durable)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest

from agentstream import Agent, Mastra
from agentstream.background import (
    STALE_TASK_MESSAGE,
    BackgroundTaskContext,
    BackgroundTaskManager,
    TaskReleased,
    stream_until_idle,
)
from agentstream.chunks import chunk_to_dict
from agentstream.resumable import MemoryStreamStore, StreamOwnerError
from agentstream.storage import BaseStore, InMemoryStore, utc_now
from agentstream.testing import ScriptedModel

IDS = {"tool_call_id": "call-1", "agent_id": "agent-a", "run_id": "run-1"}
T0 = utc_now().replace(microsecond=0)
LEASED = {"lease_ms": 10_000, "heartbeat_interval_ms": 3_000}


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> Any:
        return self.now

    def advance(self, ms: float) -> None:
        self.now += timedelta(milliseconds=ms)


async def never(_seconds: float) -> None:
    await asyncio.Event().wait()


@dataclass
class _Attempt:
    chunks: list[Any] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    work: asyncio.Task[Any] | None = None


class Engine:
    """A `RemoteTasks` whose "worker" is a task of its own: one execution per attempt, whoever asks,
    outputs kept in order like a DBOS stream and relayed from the start to every caller."""

    def __init__(self, tools: dict[str, Callable[..., Any]], local: frozenset[str] = frozenset()) -> None:
        self.tools = tools
        self.local = local
        self.attempts: dict[str, _Attempt] = {}
        self.cancelled: list[tuple[str, Any]] = []
        self.runs: list[str] = []

    def runs_remotely(self, tool_name: str, agent_id: str) -> bool:
        return tool_name not in self.local

    async def run(self, tool_name: str, args: dict[str, Any], context: BackgroundTaskContext) -> Any:
        key = f"{context.task_id}:{context.retry_count}"
        attempt = self.attempts.get(key)
        if attempt is None:
            attempt = self.attempts[key] = _Attempt()
            self.runs.append(key)

            def write(value: Any) -> None:
                attempt.chunks.append(value)
                attempt.changed.set()
                attempt.changed = asyncio.Event()

            attempt.work = asyncio.create_task(self.tools[tool_name](args, write))
            attempt.work.add_done_callback(lambda _t: write(None))

        def on_abort(reason: Any) -> None:
            if not isinstance(reason, TaskReleased):
                self.cancelled.append((key, reason))

        remove = context.abort_signal.add_listener(on_abort)
        try:
            relayed = 0
            assert attempt.work is not None
            while True:
                while relayed < len(attempt.chunks):
                    value = attempt.chunks[relayed]
                    relayed += 1
                    if value is not None:
                        context.writer.write(value)
                if attempt.work.done():
                    return attempt.work.result()
                await attempt.changed.wait()
        finally:
            remove()


async def _collect(manager: BackgroundTaskManager, into: list[dict[str, Any]], **filters: Any) -> None:
    async for chunk in manager.stream(**filters):
        into.append(chunk_to_dict(chunk))


async def _until(predicate: Callable[[], bool], what: str) -> None:
    for _ in range(2000):
        if predicate():
            return
        await asyncio.sleep(0.005)
    raise AssertionError(f"never happened: {what}")


def _summary(chunks: list[dict[str, Any]]) -> list[Any]:
    out: list[Any] = []
    for chunk in chunks:
        payload = chunk["payload"]
        if chunk["type"] == "background-task-output":
            out.append(("output", payload["payload"]["payload"]["output"]))
        elif chunk["type"] == "background-task-completed":
            out.append(("completed", payload["result"]))
        else:
            out.append(chunk["type"].removeprefix("background-task-"))
    return out


@contextlib.asynccontextmanager
async def _reading(manager: BackgroundTaskManager, **filters: Any) -> AsyncIterator[list[dict[str, Any]]]:
    seen: list[dict[str, Any]] = []
    reader = asyncio.create_task(_collect(manager, seen, **filters))
    await asyncio.sleep(0)
    try:
        yield seen
    finally:
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reader


def _die(manager: BackgroundTaskManager) -> None:
    """What `kill -9` leaves: no more heartbeats, nothing of its runs, no shutdown."""
    for task in (manager._lease_task, manager._follow_task, *manager._workers, *manager._followers.values()):
        if task is not None:
            task.cancel()


async def test_a_manager_follows_a_task_another_manager_runs(store: BaseStore) -> None:
    gate = asyncio.Event()

    async def steps(args: dict[str, Any], ctx: BackgroundTaskContext) -> Any:
        ctx.writer.write({"step": 1})
        await gate.wait()
        ctx.writer.write({"step": 2})
        return {"done": args["n"]}

    shared = MemoryStreamStore()
    config = {**LEASED, "stream_store": shared}
    a = BackgroundTaskManager(store, config, tools={"steps": steps}, sleep=never, owner_id="a")
    b = BackgroundTaskManager(store, config, sleep=never, owner_id="b")  # cannot run `steps` itself
    await a.start()
    await b.start()
    async with (
        _reading(a) as at_a,
        _reading(b, agent_id="agent-a") as at_b,
        _reading(b, agent_id="x") as other,
    ):
        task = await a.dispatch("steps", {"n": 7}, **IDS)
        await _until(lambda: len(at_a) == 2, "a sees step 1")
        await b.follow_tasks()
        await _until(lambda: len(at_b) == 2, "b sees step 1 live")
        gate.set()
        await _until(lambda: len(at_b) == 4, "b sees the end")
        await b.follow_tasks()  # the segment ended: it is not followed again
    expected = ["running", ("output", {"step": 1}), ("output", {"step": 2}), ("completed", {"done": 7})]
    assert _summary(at_a) == expected
    assert _summary(at_b) == expected
    assert at_b == at_a  # the same chunks, dates and ids included
    assert other == []  # filters apply to followed tasks too
    assert (await b.get_task(task.id)).status == "completed"
    assert b._followers == {}
    await a.shutdown()
    await b.shutdown()


async def test_a_remote_task_is_attached_to_after_its_manager_dies_and_runs_once(store: BaseStore) -> None:
    clock = Clock()
    gate = asyncio.Event()
    effects: list[str] = []

    async def steps(args: dict[str, Any], write: Callable[[Any], None]) -> Any:
        effects.append("one")
        write({"step": 1})
        await gate.wait()
        effects.append("two")
        write({"step": 2})
        return {"done": args["n"]}

    engine = Engine({"steps": steps})
    shared = MemoryStreamStore()
    config = {**LEASED, "stream_store": shared}
    # No executor registered anywhere: the engine alone runs `steps` (no tool wrapping).
    a = BackgroundTaskManager(store, config, remote=engine, clock=clock, sleep=never, owner_id="a")
    b = BackgroundTaskManager(store, config, remote=engine, clock=clock, sleep=never, owner_id="b")
    await a.start()
    await b.start()
    async with _reading(b) as at_b:
        task = await a.dispatch("steps", {"n": 3}, **IDS)
        await a.wait_until_started(task.id)
        await b.follow_tasks()
        await _until(lambda: len(at_b) == 2, "b sees step 1 through the shared stream")
        segment = await shared.active(f"task:{task.id}")
        _die(a)
        await asyncio.sleep(0)
        clock.advance(10_000)  # a's lease lapses
        await b.heartbeat()  # b takes the task over: attaches to the attempt under way
        held = await b.get_task(task.id)
        assert (held.status, held.owner_id, held.retry_count) == ("running", "b", 0)
        gate.set()
        done = await b.wait_for_completion(task.id, timeout_ms=10_000)
        await _until(lambda: len(at_b) == 4, "b delivers the end")
    assert done.status == "completed" and done.result == {"done": 3} and done.retry_count == 0
    assert effects == ["one", "two"]  # the tool ran once, across the takeover
    assert engine.runs == [f"{task.id}:0"] and engine.cancelled == []
    # b re-relayed the attempt from its start but published only what a had not.
    assert _summary(at_b) == [
        "running",
        ("output", {"step": 1}),
        ("output", {"step": 2}),
        ("completed", {"done": 3}),
    ]
    # The new segment starts with a copy of the dead manager's: a late reader gets the whole task.
    assert segment is not None and await shared.active(f"task:{task.id}") is None
    copies = [chunk async for chunk in shared.read(segment.stream_id)]
    assert len(copies) == 2
    await a.shutdown()
    await b.shutdown()


async def test_a_follower_ends_from_the_record_when_the_owner_died_without_a_successor(
    store: BaseStore,
) -> None:
    clock = Clock()

    async def hangs(args: dict[str, Any], ctx: BackgroundTaskContext) -> Any:
        ctx.writer.write({"step": 1})
        await asyncio.Event().wait()

    shared = MemoryStreamStore()
    config = {**LEASED, "stream_store": shared}
    a = BackgroundTaskManager(store, config, tools={"hangs": hangs}, clock=clock, sleep=never, owner_id="a")
    b = BackgroundTaskManager(store, config, clock=clock, sleep=never, owner_id="b")
    await a.start()
    await b.start()
    async with _reading(b) as at_b:
        task = await a.dispatch("hangs", {}, **IDS)  # no retries: a takeover fails it
        await a.wait_until_started(task.id)
        await b.follow_tasks()
        await _until(lambda: len(at_b) == 2, "b follows")
        _die(a)
        clock.advance(10_000)
        await b.heartbeat()  # fails the stale task; its stream never says so
        await b.follow_tasks()  # the task left "running": one more poll of grace
        assert len(at_b) == 2
        await b.follow_tasks()
        await _until(lambda: len(at_b) == 3, "b tells the end from the record")
    assert at_b[-1]["type"] == "background-task-failed"
    assert at_b[-1]["payload"]["taskId"] == task.id
    assert at_b[-1]["payload"]["error"] == {"message": STALE_TASK_MESSAGE}
    assert b._followers == {}
    await a.shutdown()
    await b.shutdown()


async def test_enqueue_runs_on_the_engine_except_local_tools_and_shutdown_does_not_cancel(
    store: BaseStore,
) -> None:
    gate = asyncio.Event()
    ran_here: list[str] = []

    async def remote_tool(args: dict[str, Any], write: Callable[[Any], None]) -> Any:
        await gate.wait()
        return "remote"

    async def local_tool(args: dict[str, Any], ctx: BackgroundTaskContext) -> Any:
        ran_here.append(ctx.task_id)
        return "local"

    engine = Engine({"remote_tool": remote_tool}, local=frozenset({"local_tool"}))
    manager = BackgroundTaskManager(store, {}, tools={"local_tool": local_tool}, remote=engine)
    await manager.start()
    local = await manager.dispatch("local_tool", {}, **IDS)
    assert (await manager.wait_for_completion(local.id, timeout_ms=10_000)).result == "local"
    far = await manager.dispatch("remote_tool", {}, **{**IDS, "tool_call_id": "call-2"})
    await _until(lambda: bool(engine.runs), "the engine got the task")
    await manager.shutdown(grace_ms=0)
    assert ran_here == [local.id] and engine.runs == [f"{far.id}:0"]
    assert engine.cancelled == []  # released on shutdown: the worker goes on for a successor
    assert (await manager.get_task(far.id)).status == "running"
    gate.set()


async def test_cancel_reaches_the_engine(store: BaseStore) -> None:
    async def forever(args: dict[str, Any], write: Callable[[Any], None]) -> Any:
        await asyncio.Event().wait()

    engine = Engine({"forever": forever})
    async with BackgroundTaskManager(store, {}, remote=engine) as manager:
        task = await manager.dispatch("forever", {}, **IDS)
        await _until(lambda: bool(engine.runs), "the engine got the task")
        await manager.cancel(task.id)
        await _until(lambda: bool(engine.cancelled), "the engine was told")
    assert engine.cancelled[0][0] == f"{task.id}:0"
    for attempt in engine.attempts.values():
        assert attempt.work is not None
        attempt.work.cancel()


def test_mastra_config_carries_remote_and_stream_store_and_refuses_wrong_types() -> None:
    engine = Engine({})
    shared = MemoryStreamStore()
    mastra = Mastra(background_tasks={"remote": engine, "stream_store": shared})
    manager = mastra.background_task_manager
    assert manager is not None and manager.remote is engine
    with pytest.raises(TypeError, match=r"remote must have runs_remotely\(tool_name, agent_id\)"):
        Mastra(background_tasks={"remote": "postgresql://x"})
    with pytest.raises(TypeError, match="stream_store must be a StreamStore"):
        BackgroundTaskManager(InMemoryStore(), {}, stream_store=object())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="follow_interval_ms must be an int >= 1"):
        Mastra(background_tasks={"follow_interval_ms": 0})


class _GatedModel(ScriptedModel):
    """A `ScriptedModel` whose first call holds its finish until `gate` is set."""

    def __init__(self, steps: Any, gate: asyncio.Event) -> None:
        super().__init__(steps)
        self.gate = gate

    def do_stream(self, options: Any) -> AsyncIterator[Any]:
        parts = super().do_stream(options)
        first = len(self.calls) == 1

        async def play() -> AsyncIterator[Any]:
            async for part in parts:
                if first and part["type"] == "finish":
                    await self.gate.wait()
                yield part

        return play()


def _text(delta: str) -> list[dict[str, Any]]:
    usage = {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}
    return [
        {"type": "stream-start", "warnings": []},
        {"type": "text-start", "id": "t"},
        {"type": "text-delta", "id": "t", "delta": delta},
        {"type": "text-end", "id": "t"},
        {"type": "finish", "finishReason": "stop", "usage": usage},
    ]


async def test_until_idle_on_another_manager_waits_for_a_followed_task_and_continues_with_its_result(
    store: BaseStore,
) -> None:
    task_gate, turn_gate = asyncio.Event(), asyncio.Event()

    async def slow(args: dict[str, Any], ctx: BackgroundTaskContext) -> Any:
        await task_gate.wait()
        return {"answer": 42}

    shared = MemoryStreamStore()
    config = {**LEASED, "stream_store": shared}
    a = BackgroundTaskManager(store, config, tools={"slow": slow}, sleep=never, owner_id="a")
    b = BackgroundTaskManager(store, config, sleep=never, owner_id="b")
    await a.start()
    await b.start()
    ids = {"tool_call_id": "call-9", "agent_id": "helper", "run_id": "run-on-a", "thread_id": "t1"}
    task = await a.dispatch("slow", {}, **ids)
    await a.wait_until_started(task.id)
    model = _GatedModel([_text("Working on it."), _text("The answer is 42.")], turn_gate)
    agent = Agent(id="helper", instructions="sys", model=model)
    out = stream_until_idle(agent, "what is it?", manager=b, thread_id="t1")
    seen: list[str] = []

    async def read() -> None:
        async for chunk in out.full_stream:
            seen.append(chunk.type)

    reader = asyncio.create_task(read())
    await _until(lambda: "text-delta" in seen, "b's first turn streams")
    await b.follow_tasks()  # b finds a's running task of this thread while the turn is open
    await _until(lambda: "background-task-running" in seen, "b's stream announces a's task")
    turn_gate.set()
    task_gate.set()
    assert await out.text == "Working on it.\n\nThe answer is 42."
    await reader
    assert seen.count("background-task-completed") == 1 and seen.count("start") == 2
    directive = model.calls[1].prompt[1]["content"]
    assert "call-9 (slow)" in directive
    await a.shutdown()
    await b.shutdown()


async def test_a_chat_cannot_claim_or_read_a_tasks_stream(store: BaseStore) -> None:
    gate = asyncio.Event()

    async def waits(args: dict[str, Any], ctx: BackgroundTaskContext) -> Any:
        await gate.wait()

    shared = MemoryStreamStore()
    async with BackgroundTaskManager(store, {"stream_store": shared}, tools={"waits": waits}) as manager:
        task = await manager.dispatch("waits", {}, **IDS)
        await manager.wait_until_started(task.id)
        # What the chat route does for a request with chat id "task:<id>" (no auth: owner None).
        with pytest.raises(StreamOwnerError):
            await shared.start(f"task:{task.id}", owner=None)
        active = await shared.active(f"task:{task.id}")
        assert active is not None and active.owner not in (None, "")  # the resume route answers 204
        gate.set()
        await manager.wait_for_completion(task.id, timeout_ms=10_000)

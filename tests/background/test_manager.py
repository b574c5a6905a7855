"""BackgroundTaskManager lifecycle over every storage backend."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from agentstream.background import (
    STALE_TASK_MESSAGE,
    BackgroundTaskContext,
    BackgroundTaskManager,
    ConcurrencyLimitError,
    InvalidTaskStateError,
    TaskHooks,
    TaskNotFoundError,
    TaskWaitTimeoutError,
)
from agentstream.chunks import chunk_to_dict
from agentstream.storage import BackgroundTask, BaseStore, TaskError, TaskUpdate, utc_now

IDS = {"tool_call_id": "call-1", "agent_id": "agent-a", "run_id": "run-1"}


class Recorder:
    """Collects manager-stream chunks as wire dicts; ``until`` waits for one to arrive."""

    def __init__(self, manager: BackgroundTaskManager, **filters: Any) -> None:
        self.chunks: list[dict[str, Any]] = []
        self._arrived = asyncio.Event()
        self.unsubscribe = manager.subscribe(self._add, **filters)

    def _add(self, chunk: Any) -> None:
        self.chunks.append(chunk_to_dict(chunk))
        self._arrived.set()

    async def until(self, done: Callable[[], bool], timeout: float = 10.0) -> None:
        """Returns once ``done()`` holds, checked after each chunk (a hang guard, not a pause)."""
        async with asyncio.timeout(timeout):
            while not done():
                self._arrived.clear()
                await self._arrived.wait()

    def types(self, task_id: str | None = None) -> list[str]:
        return [c["type"] for c in self.chunks if task_id is None or c["payload"]["taskId"] == task_id]


async def echo(args: dict[str, Any], ctx: BackgroundTaskContext) -> Any:
    ctx.writer.write({"progress": 50})
    await asyncio.sleep(0)
    return {"echo": args}


async def test_completes_with_exact_chunks(store: BaseStore) -> None:
    async with BackgroundTaskManager(store, tools={"echo": echo}) as m:
        rec = Recorder(m)
        task = await m.dispatch("echo", {"x": 1}, thread_id="t1", resource_id="u1", **IDS)
        assert task.status == "pending"
        done = await m.wait_for_completion(task.id, timeout_ms=5000)
        assert done.status == "completed" and done.result == {"echo": {"x": 1}}
        assert done.started_at is not None and done.completed_at is not None
        await asyncio.sleep(0)
    assert rec.types() == ["background-task-running", "background-task-output", "background-task-completed"]
    running, output, completed = rec.chunks
    for chunk in rec.chunks:
        assert "runId" not in chunk and "from" not in chunk
    assert running["payload"] == {
        "taskId": task.id,
        "toolName": "echo",
        "toolCallId": "call-1",
        "runId": "run-1",
        "agentId": "agent-a",
        "startedAt": running["payload"]["startedAt"],
        "args": {"x": 1},
    }
    assert running["payload"]["startedAt"].endswith("Z") and len(running["payload"]["startedAt"]) == 24
    assert output["payload"]["payload"] == {
        "type": "tool-output",
        "runId": "run-1",
        "from": "USER",
        "payload": {"output": {"progress": 50}, "toolCallId": "call-1", "toolName": "echo"},
    }
    assert completed["payload"]["result"] == {"echo": {"x": 1}}
    assert set(completed["payload"]) == {
        "taskId",
        "toolName",
        "toolCallId",
        "agentId",
        "runId",
        "completedAt",
        "result",
    }


async def test_failure_retries_then_fails(store: BaseStore) -> None:
    calls = Counter[str]()

    async def flaky(args: dict[str, Any], ctx: BackgroundTaskContext) -> Any:
        calls[ctx.task_id] += 1
        if calls[ctx.task_id] <= args["fail_times"]:
            raise RuntimeError(f"boom {calls[ctx.task_id]}")
        return "ok"

    async with BackgroundTaskManager(store, tools={"flaky": flaky}) as m:
        rec = Recorder(m)
        ok = await m.dispatch("flaky", {"fail_times": 2}, max_retries=2, **IDS)
        bad = await m.dispatch("flaky", {"fail_times": 5}, max_retries=1, **IDS)
        none = await m.dispatch("flaky", {"fail_times": 1}, **IDS)
        assert (await m.wait_for_completion(ok.id)).status == "completed"
        failed = await m.wait_for_completion(bad.id)
        zero = await m.wait_for_completion(none.id)
    got = await store.get_task(ok.id)
    assert got.retry_count == 2 and got.result == "ok" and calls[ok.id] == 3
    assert failed.status == "failed" and failed.error is not None and failed.error.message == "boom 2"
    assert calls[bad.id] == 2
    assert zero.status == "failed" and calls[none.id] == 1  # max_retries defaults to 0
    assert rec.types(bad.id) == ["background-task-running", "background-task-failed"]
    failed_chunk = [c for c in rec.chunks if c["payload"]["taskId"] == bad.id][-1]
    assert failed_chunk["payload"]["error"] == {"message": "boom 2"}


async def test_timeout_is_timed_out_surfaced_as_failed(store: BaseStore) -> None:
    seen_abort: list[object] = []

    async def hang(args: dict[str, Any], ctx: BackgroundTaskContext) -> Any:
        ctx.abort_signal.add_listener(seen_abort.append)
        await asyncio.sleep(60)

    async with BackgroundTaskManager(store, tools={"hang": hang}) as m:
        rec = Recorder(m)
        task = await m.dispatch("hang", {}, timeout_ms=50, max_retries=3, **IDS)
        done = await m.wait_for_completion(task.id, timeout_ms=5000)
    assert done.status == "timed_out" and done.error is not None
    assert done.error.message == "Task timed out after 50ms"
    assert done.retry_count == 0  # timeouts are not retried
    assert rec.types() == ["background-task-running", "background-task-failed"]
    assert rec.chunks[1]["payload"]["error"] == {"message": "Task timed out after 50ms"}
    assert seen_abort and "timed out" in str(seen_abort[0])


async def test_cancel_mid_write_and_errors(store: BaseStore) -> None:
    started, stopped = asyncio.Event(), asyncio.Event()

    async def chatty(args: dict[str, Any], ctx: BackgroundTaskContext) -> Any:
        try:
            for i in range(10_000):
                ctx.writer.write(i)
                started.set()
                await asyncio.sleep(0)
            return "never"
        finally:
            stopped.set()

    async with BackgroundTaskManager(store, tools={"chatty": chatty}) as m:
        rec = Recorder(m)
        task = await m.dispatch("chatty", {}, **IDS)
        await started.wait()
        cancelled = await m.cancel(task.id)
        assert cancelled.status == "cancelled"
        await asyncio.wait_for(stopped.wait(), 10)  # the tool itself was stopped, not only its record
        stored = await m.get_task(task.id)
        assert stored.status == "cancelled" and stored.completed_at is not None and stored.result is None
        types = rec.types()
        assert types[-1] == "background-task-cancelled" and types.count("background-task-cancelled") == 1
        assert "background-task-completed" not in types
        with pytest.raises(InvalidTaskStateError, match=f"{task.id}.*'cancelled'") as info:
            await m.cancel(task.id)
        assert info.value.task_id == task.id and info.value.status == "cancelled"
        with pytest.raises(InvalidTaskStateError, match="Cannot resume task in status 'cancelled'"):
            await m.resume(task.id, {})
        with pytest.raises(TaskNotFoundError, match="nope"):
            await m.cancel("nope")
        with pytest.raises(TaskNotFoundError, match="nope"):
            await m.get_task("nope")
        with pytest.raises(TaskNotFoundError, match="nope"):
            await m.resume("nope")
        done = await m.dispatch("chatty", {}, **IDS)
        await m.cancel(done.id)


async def test_suspend_then_resume(store: BaseStore) -> None:
    runs: list[Any] = []

    async def approve(args: dict[str, Any], ctx: BackgroundTaskContext) -> Any:
        runs.append(ctx.resume_data)
        if ctx.resume_data is None:
            await ctx.suspend({"question": f"approve {args['what']}?"})
        return {"approved": ctx.resume_data["ok"]}

    async with BackgroundTaskManager(store, tools={"approve": approve}) as m:
        rec = Recorder(m)
        task = await m.dispatch("approve", {"what": "x"}, **IDS)
        await rec.until(lambda: "background-task-suspended" in rec.types())
        parked = await m.get_task(task.id)
        assert parked.status == "suspended" and parked.suspend_payload == {"question": "approve x?"}
        assert parked.suspended_at is not None
        assert m.running_count == 0  # a suspended task holds no slot
        resumed = await m.resume(task.id, {"ok": True})
        assert resumed.status == "running" and resumed.suspend_payload is None
        with pytest.raises(InvalidTaskStateError, match="expected 'suspended'"):
            await m.resume(task.id, {"ok": False})
        done = await m.wait_for_completion(task.id, timeout_ms=5000)
    assert done.status == "completed" and done.result == {"approved": True}
    assert runs == [None, {"ok": True}]
    assert rec.types() == [
        "background-task-running",
        "background-task-suspended",
        "background-task-resumed",
        "background-task-completed",
    ]
    suspended = rec.chunks[1]["payload"]
    assert suspended["suspendPayload"] == {"question": "approve x?"} and suspended["args"] == {"what": "x"}
    assert suspended["suspendedAt"].endswith("Z")


async def test_concurrent_resume_runs_once(store: BaseStore) -> None:
    runs: list[Any] = []

    async def gate(args: dict[str, Any], ctx: BackgroundTaskContext) -> Any:
        runs.append(ctx.resume_data)
        if ctx.resume_data is None:
            await ctx.suspend("wait")
        return ctx.resume_data

    async with BackgroundTaskManager(store, tools={"gate": gate}) as m:
        rec = Recorder(m)
        task = await m.dispatch("gate", {}, **IDS)
        await rec.until(lambda: "background-task-suspended" in rec.types())
        results = await asyncio.gather(*(m.resume(task.id, i) for i in range(1, 6)), return_exceptions=True)
        ok = [r for r in results if isinstance(r, BackgroundTask)]
        assert len(ok) == 1
        assert all(isinstance(r, InvalidTaskStateError) for r in results if r not in ok)
        await m.wait_for_completion(task.id)
    assert len(runs) == 2


async def test_cancel_races_completion(store: BaseStore) -> None:
    async def quick(args: dict[str, Any], ctx: BackgroundTaskContext) -> Any:
        await asyncio.sleep(args["d"])
        return "done"

    async with BackgroundTaskManager(
        store, {"global_concurrency": 50, "per_agent_concurrency": 50}, tools={"quick": quick}
    ) as m:
        rec = Recorder(m)
        tasks = [await m.dispatch("quick", {"d": 0.002 * (i % 5)}, **IDS) for i in range(30)]

        async def try_cancel(t: BackgroundTask) -> None:
            await asyncio.sleep(0.002 * (t.args["d"] > 0.004))
            try:
                await m.cancel(t.id)
            except InvalidTaskStateError:
                pass

        await asyncio.gather(*(try_cancel(t) for t in tasks))
        ended = ("background-task-completed", "background-task-cancelled")
        await rec.until(lambda: all(any(x in ended for x in rec.types(t.id)) for t in tasks))
    # The manager is closed: every task has ended and no chunk can still arrive.
    for t in tasks:
        final = await store.get_task(t.id)
        assert final.status in ("completed", "cancelled")
        terminal = [x for x in rec.types(t.id) if x in ended]
        assert terminal == [f"background-task-{final.status}"], (t.id, rec.types(t.id))


async def test_200_tasks_respect_concurrency_limits(store: BaseStore) -> None:
    active: Counter[str] = Counter()
    peak: Counter[str] = Counter()
    executed: Counter[str] = Counter()
    # The first wave is held until the global limit is full, so reaching it doesn't depend on timing.
    release, full = asyncio.Event(), asyncio.Event()

    async def work(args: dict[str, Any], ctx: BackgroundTaskContext) -> Any:
        assert ctx.agent_id is not None
        executed[ctx.task_id] += 1
        active["*"] += 1
        active[ctx.agent_id] += 1
        peak["*"] = max(peak["*"], active["*"])
        peak[ctx.agent_id] = max(peak[ctx.agent_id], active[ctx.agent_id])
        if active["*"] == 10:
            full.set()
        if not release.is_set():
            await release.wait()
        await asyncio.sleep(0)
        active["*"] -= 1
        active[ctx.agent_id] -= 1
        return args["i"]

    async with BackgroundTaskManager(
        store, {"global_concurrency": 10, "per_agent_concurrency": 5}, tools={"work": work}
    ) as m:
        tasks = await asyncio.gather(
            *(
                m.dispatch(
                    "work",
                    {"i": i},
                    tool_call_id=f"c{i}",
                    agent_id="agent-0" if i % 10 < 7 else f"agent-{i % 3}",
                    run_id="r",
                )
                for i in range(200)
            )
        )
        assert m.running_count <= 10
        await asyncio.wait_for(full.wait(), 60)
        for _ in range(20):  # give the queue every chance to over-admit before releasing
            await asyncio.sleep(0)
        assert peak["*"] == 10 and peak["agent-0"] == 5
        release.set()
        await asyncio.gather(*(m.wait_for_completion(t.id, timeout_ms=60_000) for t in tasks))
        page = await m.list_tasks(status="completed")
    assert page.total == 200
    assert len(executed) == 200 and set(executed.values()) == {1}
    assert peak["*"] == 10
    assert max(peak[f"agent-{i}"] for i in range(3)) == 5


async def test_backpressure_reject_and_fallback(store: BaseStore) -> None:
    release = asyncio.Event()

    async def block(args: dict[str, Any], ctx: BackgroundTaskContext) -> Any:
        await release.wait()
        return 1

    async with BackgroundTaskManager(
        store, {"global_concurrency": 1, "backpressure": "reject"}, tools={"b": block}
    ) as m:
        first = await m.dispatch("b", {}, **IDS)
        with pytest.raises(
            ConcurrencyLimitError, match='Concurrency limit reached, cannot enqueue task for tool "b"'
        ):
            await m.dispatch("b", {}, **IDS)
        assert (await m.list_tasks()).total == 1  # the rejected record was deleted
        release.set()
        await m.wait_for_completion(first.id)
    release.clear()
    async with BackgroundTaskManager(
        store, {"global_concurrency": 1, "backpressure": "fallback-sync"}, tools={"b": block}
    ) as m:
        held = await m.enqueue("b", {}, **IDS)
        assert not held.fallback_to_sync
        fb = await m.enqueue("b", {}, **IDS)
        assert fb.fallback_to_sync and await store.find_task(fb.task.id) is None
        release.set()
        await m.wait_for_completion(held.task.id)


async def test_hooks_and_global_callbacks(store: BaseStore) -> None:
    seen: list[tuple[str, Any]] = []

    async def boom(args: dict[str, Any], ctx: BackgroundTaskContext) -> Any:
        raise ValueError("bad")

    config = {
        "on_task_complete": lambda t: seen.append(("global-complete", t.status)),
        "on_task_failed": lambda t: seen.append(("global-failed", t.status)),
    }
    async with BackgroundTaskManager(store, config) as m:
        hooks = TaskHooks(
            executor=echo,
            on_chunk=lambda c: seen.append(("chunk", c.type)),
            on_result=lambda t: seen.append(("result", t.status)),
            on_complete=lambda t: seen.append(("complete", t.status)),
        )
        t1 = await m.dispatch("no-registry", {"a": 1}, hooks=hooks, **IDS)
        await m.wait_for_completion(t1.id)
        t2 = await m.dispatch(
            "boom",
            {},
            hooks=TaskHooks(executor=boom, on_failed=lambda t: seen.append(("failed", t.error.message))),
            **IDS,
        )
        await m.wait_for_completion(t2.id)
        t3 = await m.dispatch("missing", {}, **IDS)
        missing = await m.wait_for_completion(t3.id)
    assert seen[:4] == [
        ("chunk", "background-task-completed"),
        ("result", "completed"),
        ("complete", "completed"),
        ("global-complete", "completed"),
    ]
    assert ("failed", "bad") in seen and ("global-failed", "failed") in seen
    assert missing.status == "failed" and missing.error is not None
    assert missing.error.message == 'No executor registered for tool "missing"'


async def test_stream_include_existing_and_filters(store: BaseStore) -> None:
    release = asyncio.Event()

    async def block(args: dict[str, Any], ctx: BackgroundTaskContext) -> Any:
        await release.wait()
        return args

    async with BackgroundTaskManager(store, tools={"b": block}) as m:
        rec = Recorder(m)
        a = await m.dispatch("b", {"n": 1}, thread_id="t1", **IDS)
        await m.dispatch("b", {"n": 2}, thread_id="t2", **IDS)
        await rec.until(lambda: rec.types(a.id) == ["background-task-running"])
        from agentstream._abort import AbortController

        ctrl = AbortController()
        got: list[dict[str, Any]] = []
        listed = asyncio.Event()

        async def read() -> None:
            async for chunk in m.stream(thread_id="t1", abort_signal=ctrl.signal):
                got.append(chunk_to_dict(chunk))
                listed.set()
                if chunk.type == "background-task-completed":
                    ctrl.abort()

        reader = asyncio.create_task(read())
        await asyncio.wait_for(listed.wait(), 10)  # the running task came from the listing
        release.set()
        await asyncio.wait_for(reader, 5)
    assert [c["type"] for c in got] == ["background-task-running", "background-task-completed"]
    assert all(c["payload"]["taskId"] == a.id for c in got)


async def test_wait_for_next_task(store: BaseStore) -> None:
    async def sleepy(args: dict[str, Any], ctx: BackgroundTaskContext) -> Any:
        await asyncio.sleep(args["s"])
        return args["s"]

    async with BackgroundTaskManager(store, tools={"s": sleepy}) as m:
        slow = await m.dispatch("s", {"s": 0.5}, **IDS)
        fast = await m.dispatch("s", {"s": 0.01}, **IDS)
        first = await m.wait_for_next_task([slow.id, fast.id], timeout_ms=3000)
        assert first.id == fast.id
        with pytest.raises(TaskWaitTimeoutError, match="Timed out waiting for background task"):
            await m.wait_for_next_task([slow.id], timeout_ms=20)
        progress: list[float] = []
        await m.wait_for_next_task([slow.id], on_progress=progress.append, progress_interval_ms=100)
        assert progress


async def test_progress_throttle(store: BaseStore) -> None:
    async def spam(args: dict[str, Any], ctx: BackgroundTaskContext) -> Any:
        for i in range(50):
            ctx.writer.write(i)
        return None

    async with BackgroundTaskManager(store, {"progress_throttle_ms": 10_000}, tools={"spam": spam}) as m:
        rec = Recorder(m)
        t = await m.dispatch("spam", {}, **IDS)
        await m.wait_for_completion(t.id)
    assert rec.types().count("background-task-output") == 1


async def test_sync_tool_in_thread_writes(store: BaseStore) -> None:
    def blocking(args: dict[str, Any], ctx: BackgroundTaskContext) -> Any:
        ctx.writer.write("from-thread")
        return 42

    async with BackgroundTaskManager(store, tools={"blocking": blocking}) as m:
        rec = Recorder(m)
        t = await m.dispatch("blocking", {}, **IDS)
        assert (await m.wait_for_completion(t.id)).result == 42
        await rec.until(lambda: "background-task-output" in rec.types())
    assert "background-task-output" in rec.types()


async def test_cleanup_ttls(store: BaseStore) -> None:
    old = utc_now() - timedelta(hours=2)
    very_old = utc_now() - timedelta(days=2)
    for tid, status, when in [
        ("c-old", "completed", old),
        ("c-new", "completed", utc_now()),
        ("f-old", "failed", old),
        ("f-vold", "timed_out", very_old),
    ]:
        await store.create_task(
            BackgroundTask(
                id=tid,
                tool_name="x",
                tool_call_id="c",
                agent_id="a",
                run_id="r",
                status=status,
                completed_at=when,
            )
        )
    m = BackgroundTaskManager(store)
    await m.start()
    assert await m.cleanup() == 2
    left = sorted(t.id for t in (await m.list_tasks()).tasks)
    assert left == ["c-new", "f-old"]
    await m.shutdown()


async def test_recovery_of_stale_tasks(store: BaseStore) -> None:
    now = utc_now()
    await store.create_task(
        BackgroundTask(
            id="s1",
            tool_name="echo",
            tool_call_id="c",
            agent_id="a",
            run_id="r",
            status="running",
            started_at=now,
        )
    )
    await store.create_task(
        BackgroundTask(
            id="s2",
            tool_name="echo",
            tool_call_id="c",
            agent_id="a",
            run_id="r",
            status="running",
            started_at=now,
            max_retries=1,
            args={"again": True},
        )
    )
    await store.create_task(
        BackgroundTask(
            id="p1",
            tool_name="echo",
            tool_call_id="c",
            agent_id="a",
            run_id="r",
            status="pending",
            args={"queued": True},
        )
    )
    async with BackgroundTaskManager(store, tools={"echo": echo}) as m:
        s1 = await m.get_task("s1")
        assert s1.status == "failed" and s1.error is not None and s1.error.message == STALE_TASK_MESSAGE
        s2 = await m.wait_for_completion("s2", timeout_ms=5000)
        p1 = await m.wait_for_completion("p1", timeout_ms=5000)
    assert s2.status == "completed" and s2.result == {"echo": {"again": True}} and s2.retry_count == 1
    assert p1.status == "completed"


async def test_disabled_and_config_errors(store: BaseStore) -> None:
    from agentstream.background import BackgroundTasksDisabledError

    m = BackgroundTaskManager(store, {"enabled": False})
    with pytest.raises(BackgroundTasksDisabledError):
        await m.dispatch("x", {}, **IDS)
    with pytest.raises(ValueError, match="backpressure"):
        BackgroundTaskManager(store, {"backpressure": "drop"})
    with pytest.raises(ValueError, match="unknown key"):
        BackgroundTaskManager(store, {"globalConcurrency": 3})
    _ = TaskUpdate  # imported for type users


# ------------------------------------------------------------------ leases, on fake time

T0 = utc_now().replace(microsecond=0)
# Heartbeats are driven by hand below: the loops wait on fake time that is never advanced for them.
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


def managers(
    store: BaseStore, clock: Clock, tools: dict[str, Any], **config: Any
) -> list[BackgroundTaskManager]:
    cfg = {**LEASED, **config}
    return [
        BackgroundTaskManager(store, cfg, tools=tools, clock=clock, sleep=never, owner_id=name)
        for name in ("p1", "p2")
    ]


async def test_live_lease_is_never_taken_and_an_expired_one_exactly_once(store: BaseStore) -> None:
    clock = Clock()
    release, three_ran = asyncio.Event(), asyncio.Event()
    runs: list[tuple[str, str]] = []

    def tools(owner: str) -> dict[str, Any]:
        async def slow(args: dict[str, Any], ctx: BackgroundTaskContext) -> Any:
            runs.append((owner, ctx.task_id))
            if len(runs) == 3:
                three_ran.set()
            await release.wait()
            return {"by": owner}

        return {"slow": slow}

    m1 = BackgroundTaskManager(store, LEASED, tools=tools("p1"), clock=clock, sleep=never, owner_id="p1")
    m2 = BackgroundTaskManager(store, LEASED, tools=tools("p2"), clock=clock, sleep=never, owner_id="p2")
    await m1.start()
    retry = await m1.dispatch("slow", {}, max_retries=1, **IDS)
    once = await m1.dispatch("slow", {}, **{**IDS, "tool_call_id": "call-2"})
    queued = await m1.dispatch("slow", {}, **{**IDS, "tool_call_id": "call-3"})  # waits: per_agent 5
    await asyncio.wait_for(three_ran.wait(), 10)
    held = await m1.get_task(retry.id)
    assert (held.status, held.owner_id, held.lease_expires_at) == (
        "running",
        "p1",
        T0 + timedelta(seconds=10),
    )

    await m2.start()  # a second process on the same store: the live process's tasks are untouched
    clock.advance(9_999)
    await m2.heartbeat()
    await m1.heartbeat()  # p1 renews: lease now ends at T0 + 19.999 s
    clock.advance(9_000)
    await m2.heartbeat()
    for t in (retry, once, queued):
        got = await m2.get_task(t.id)
        assert (got.status, got.owner_id) == ("running", "p1"), got

    clock.advance(1_000)  # p1 stopped renewing 10 s ago: its leases lapsed
    await m2.heartbeat()
    failed = await m2.get_task(once.id)
    assert failed.status == "failed" and failed.error == TaskError(message=STALE_TASK_MESSAGE)
    await m1.heartbeat()  # p1 learns it lost them: it stops its runs and writes nothing
    release.set()
    done = await m2.wait_for_completion(retry.id, timeout_ms=10_000)
    assert done.status == "completed" and done.result == {"by": "p2"} and done.retry_count == 1
    assert (done.owner_id, done.lease_expires_at) == (None, None)
    assert [owner for owner, tid in runs if tid == retry.id] == ["p1", "p2"]
    assert [owner for owner, tid in runs if tid == once.id] == ["p1"]
    assert m1.running_count == 0
    await m1.shutdown()
    await m2.shutdown()


async def test_cancel_from_another_process_stops_the_owner(store: BaseStore) -> None:
    clock = Clock()
    aborted = asyncio.Event()

    async def slow(args: dict[str, Any], ctx: BackgroundTaskContext) -> Any:
        ctx.abort_signal.add_listener(lambda _r: aborted.set())
        await asyncio.Event().wait()

    m1, m2 = managers(store, clock, {"slow": slow})
    await m1.start()
    await m2.start()
    seen: list[dict[str, Any]] = []
    task = await m1.dispatch(
        "slow", {}, hooks=TaskHooks(on_chunk=lambda c: seen.append(chunk_to_dict(c))), **IDS
    )
    rec = Recorder(m1)
    assert await m1.wait_until_started(task.id, timeout_ms=5000)
    cancelled = await m2.cancel(task.id)
    assert (cancelled.status, cancelled.owner_id) == ("cancelled", None)
    await m1.heartbeat()
    await asyncio.wait_for(aborted.wait(), 10)
    assert [c["type"] for c in seen] == ["background-task-cancelled"]
    assert rec.types(task.id)[-1] == "background-task-cancelled"
    assert (await m1.get_task(task.id)).status == "cancelled"
    await m1.shutdown()
    await m2.shutdown()


async def test_shutdown_releases_leases_for_an_immediate_takeover(store: BaseStore) -> None:
    clock = Clock()

    async def slow(args: dict[str, Any], ctx: BackgroundTaskContext) -> Any:
        await asyncio.Event().wait()

    m1, m2 = managers(store, clock, {"slow": slow}, global_concurrency=1)
    await m1.start()
    running = await m1.dispatch("slow", {}, max_retries=1, **IDS)
    queued = await m1.dispatch("slow", {}, **{**IDS, "tool_call_id": "call-2"})
    assert await m1.wait_until_started(running.id, timeout_ms=5000)
    await m1.shutdown(grace_ms=0)
    for t in (running, queued):
        got = await m1.get_task(t.id)
        assert got.owner_id == "p1" and got.lease_expires_at == T0  # expired now, not in 10 s

    m2._registry["slow"] = lambda args, ctx: {"rerun": True}
    await m2.start()  # no clock advance needed
    for t in (running, queued):
        done = await m2.wait_for_completion(t.id, timeout_ms=10_000)
        assert done.status == "completed" and done.result == {"rerun": True}
    await m2.shutdown()


async def test_sync_executor_timeout_records_that_its_thread_may_still_run(store: BaseStore) -> None:
    import threading

    gate = threading.Event()
    finished = threading.Event()

    def blocking(args: dict[str, Any], ctx: BackgroundTaskContext) -> Any:
        gate.wait(30)
        finished.set()
        return "late"

    try:
        async with BackgroundTaskManager(store, tools={"blocking": blocking}) as m:
            timed = await m.dispatch("blocking", {}, timeout_ms=50, **IDS)
            done = await m.wait_for_completion(timed.id, timeout_ms=10_000)
            assert done.status == "timed_out" and done.abandoned_thread is True
            assert done.error is not None and done.error.message == (
                "Task timed out after 50ms; its synchronous executor runs in a thread that Python cannot "
                "stop: the thread may still be running"
            )
            names = [t.name for t in threading.enumerate()]
            thread = next(
                t for t in threading.enumerate() if t.name == f"agentstream-background-task:{timed.id}"
            )
            assert thread.daemon, names  # it never keeps the interpreter from exiting

            cancelled = await m.dispatch("blocking", {}, **{**IDS, "tool_call_id": "call-2"})
            assert await m.wait_until_started(cancelled.id, timeout_ms=5000)
            got = await m.cancel(cancelled.id)
            assert got.abandoned_thread is True and (await m.get_task(cancelled.id)).abandoned_thread is True

            quick = await m.dispatch("blocking", {}, timeout_ms=60_000, **{**IDS, "tool_call_id": "call-3"})
            gate.set()
            done = await m.wait_for_completion(quick.id, timeout_ms=10_000)
            assert done.status == "completed" and done.abandoned_thread is False
            # the abandoned threads' late results changed nothing
            assert (await m.get_task(timed.id)).status == "timed_out"
    finally:
        gate.set()
    assert finished.wait(10)


async def test_pending_queue_is_bounded(store: BaseStore) -> None:
    async def slow(args: dict[str, Any], ctx: BackgroundTaskContext) -> Any:
        await asyncio.Event().wait()

    async with BackgroundTaskManager(
        store, {"global_concurrency": 1, "max_queued": 1}, tools={"slow": slow}
    ) as m:
        await m.dispatch("slow", {}, **IDS)
        second = await m.enqueue("slow", {}, **{**IDS, "tool_call_id": "call-2"})
        assert not second.admitted
        with pytest.raises(ConcurrencyLimitError, match=r"queue is full \(1 tasks waiting for a slot\)"):
            await m.dispatch("slow", {}, **{**IDS, "tool_call_id": "call-3"})
        assert (await m.list_tasks()).total == 2  # the refused task left no record
        await m.shutdown(grace_ms=0)


async def test_stream_drops_progress_not_lifecycle_for_a_slow_consumer(store: BaseStore) -> None:
    async def chatty(args: dict[str, Any], ctx: BackgroundTaskContext) -> Any:
        for i in range(50):
            ctx.writer.write({"i": i})
        return "done"

    async with BackgroundTaskManager(store, tools={"chatty": chatty}) as m:
        stream = m.stream(include_existing=False, max_buffered_output=3)
        first = asyncio.ensure_future(stream.__anext__())
        await asyncio.sleep(0)  # one loop turn: the stream's generator subscribes before its first await
        task = await m.dispatch("chatty", {}, **IDS)
        await m.wait_for_completion(task.id, timeout_ms=10_000)
        chunks = [await first]
        while chunks[-1].type != "background-task-completed":
            chunks.append(await asyncio.wait_for(stream.__anext__(), 10))
        await stream.aclose()
    types = [c.type for c in chunks]
    assert types[0] == "background-task-running" and types[-1] == "background-task-completed"
    assert 1 <= types.count("background-task-output") <= 4 < 50
    with pytest.raises(ValueError, match="max_buffered_output must be >= 0, got -1"):
        await m.stream(max_buffered_output=-1).__anext__()


async def test_finished_records_are_cleaned_up_by_default(store: BaseStore) -> None:
    from agentstream.testing import FakeClock

    fake = FakeClock()
    clock = Clock()
    for tid, status, age_ms in [
        ("old", "completed", 3_600_001),
        ("new", "completed", 10),
        ("bad", "failed", 3_600_001),
    ]:
        await store.create_task(
            BackgroundTask(
                id=tid,
                tool_name="x",
                tool_call_id="c",
                agent_id="a",
                run_id="r",
                status=status,
                completed_at=T0 - timedelta(milliseconds=age_ms),
            )
        )
    m = BackgroundTaskManager(store, {}, clock=clock, sleep=fake.sleep)
    assert m.config.cleanup is not None  # no "cleanup" key: retention still applies
    await m.start()
    for _ in range(500):  # fake minutes pass (cleanup runs every 60 s) until the record is gone
        await fake.advance(60)
        if await store.find_task("old") is None:
            break
        await asyncio.sleep(0.01)
    assert sorted(t.id for t in (await store.list_tasks()).tasks) == ["bad", "new"]  # failed: kept 24 h
    await m.shutdown()


async def test_idle_heartbeat_does_not_take_the_sqlite_write_lock(tmp_path: Any) -> None:
    import sqlite3

    from agentstream.storage import SQLiteStore

    async with SQLiteStore(tmp_path / "idle.db", busy_timeout_ms=0) as store:
        m = BackgroundTaskManager(store, LEASED, sleep=never)
        await m.start()
        holder = sqlite3.connect(tmp_path / "idle.db", isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")  # another process writing for a long time
        try:
            await m.heartbeat()  # busy_timeout 0: any write attempt would raise StorageBusyError
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        await m.shutdown()


async def test_results_become_json_data_and_a_non_json_result_fails_the_task(store: BaseStore) -> None:
    import pydantic

    class Found(pydantic.BaseModel):
        title: str

    async def models(args: dict[str, Any], ctx: BackgroundTaskContext) -> Any:
        return {"hits": [Found(title="a"), Found(title="b")]}

    async def opaque(args: dict[str, Any], ctx: BackgroundTaskContext) -> Any:
        return object()

    async with BackgroundTaskManager(store, tools={"models": models, "opaque": opaque}) as m:
        good = await m.wait_for_completion((await m.dispatch("models", {}, **IDS)).id)
        bad = await m.wait_for_completion((await m.dispatch("opaque", {}, **IDS)).id)
    assert good.status == "completed" and good.result == {"hits": [{"title": "a"}, {"title": "b"}]}
    assert bad.status == "failed" and bad.error is not None
    assert "cannot encode object" in bad.error.message

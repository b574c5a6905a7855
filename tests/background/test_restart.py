"""Real processes sharing one store (SQLite file, PostgreSQL schema): a live worker's tasks are never
touched by another manager; a SIGKILLed worker's tasks are taken over once its leases lapse, each run
exactly once. Waits are polls with generous timeouts, never timing assertions."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from agentstream.background import STALE_TASK_MESSAGE, BackgroundTaskContext, BackgroundTaskManager
from agentstream.storage import BackgroundTask, BaseStore, TaskError

from ._worker_script import LEASE, open_store

ROOT = Path(__file__).parents[2]
PATIENCE_S = 60.0


@pytest.fixture(params=["sqlite", "postgres"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield str(tmp_path / "tasks.db")
        return
    dsn = request.getfixturevalue("pg_dsn")
    schema = f"bgkill_{uuid.uuid4().hex[:12]}"
    yield f"{dsn}#{schema}"
    from .conftest import _drop_schema

    asyncio.run(_drop_schema(dsn, schema))


async def eventually(check: Callable[[], Awaitable[bool]], what: str) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + PATIENCE_S
    while not await check():
        if loop.time() > deadline:
            raise AssertionError(f"gave up after {PATIENCE_S:.0f} s waiting for {what}")
        await asyncio.sleep(0.02)


@asynccontextmanager
async def worker(
    target: str, scenario: str, markers: Path, wait_for: list[str]
) -> AsyncIterator[subprocess.Popen[bytes]]:
    """Start the worker process, wait for its markers, and SIGKILL it on the way out (if still alive)."""
    markers.mkdir(exist_ok=True)
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.background._worker_script", target, scenario, str(markers)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )

    async def ready() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"worker exited early: {proc.communicate()[1].decode()[-2000:]}")
        return all((markers / name).exists() for name in wait_for)

    try:
        await eventually(ready, f"worker markers {wait_for}")
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        assert proc.stderr is not None
        proc.stderr.close()


def kill(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    assert proc.returncode == -signal.SIGKILL


@pytest.fixture
async def reopen(target: str) -> AsyncIterator[Callable[[], BaseStore]]:
    stores: list[BaseStore] = []

    def make() -> BaseStore:
        s = open_store(target)
        stores.append(s)
        return s

    yield make
    for s in stores:
        await s.close()


class Sweeps:
    """Counts a manager's reclaim sweeps, so a test can wait for "several sweeps happened"."""

    def __init__(self, manager: BackgroundTaskManager) -> None:
        self.count = 0
        original = manager.reclaim_expired

        async def counted() -> None:
            await original()
            self.count += 1

        manager.reclaim_expired = counted  # type: ignore[method-assign]


async def all_tasks(store: BaseStore) -> dict[str, BackgroundTask]:
    return {t.tool_call_id: t for t in (await store.list_tasks()).tasks}


async def test_live_workers_tasks_are_never_touched(target: str, tmp_path: Path, reopen: Any) -> None:
    markers = tmp_path / "m"
    ran_here: list[str] = []

    async def slow(args: dict[str, Any], ctx: BackgroundTaskContext) -> Any:
        ran_here.append(ctx.task_id)
        return {"n": args["n"], "by": "second manager"}

    async with worker(target, "running", markers, ["ready", "started-0", "started-1"]):
        owner = (markers / "owner").read_text()
        store = reopen()
        before = await all_tasks(store)
        assert {c: t.status for c, t in before.items()} == {
            "c0": "running",
            "c1": "running",
            "c2": "pending",
            "c3": "pending",
            "c4": "pending",
        }
        assert {t.owner_id for t in before.values()} == {owner}
        first_lease = max(t.lease_expires_at for t in before.values() if t.lease_expires_at)

        second = BackgroundTaskManager(store, {**LEASE, "heartbeat_interval_ms": 50}, tools={"slow": slow})
        sweeps = Sweeps(second)
        async with second:
            # Run well past the worker's first lease (it must renew), while the second manager sweeps.
            async def renewed_past_first_lease() -> bool:
                leases = [t.lease_expires_at for t in (await all_tasks(store)).values()]
                beyond_ms = LEASE["lease_ms"]
                return all(
                    lease is not None and (lease - first_lease).total_seconds() * 1000 > beyond_ms
                    for lease in leases
                )

            await eventually(renewed_past_first_lease, "the live worker to renew its leases")
            seen = sweeps.count
            await eventually(lambda: _gt(sweeps.count, seen + 3), "more sweeps by the second manager")
            during = await all_tasks(store)
            assert {c: (t.status, t.owner_id, t.retry_count) for c, t in during.items()} == {
                c: (t.status, owner, 0) for c, t in before.items()
            }

            (markers / "release").write_text("1")  # the worker finishes everything itself

            async def all_completed() -> bool:
                return all(t.status == "completed" for t in (await all_tasks(store)).values())

            await eventually(all_completed, "the worker to complete its five tasks")
    after = await all_tasks(store)
    assert {c: t.result for c, t in after.items()} == {f"c{n}": {"n": n, "by": "worker"} for n in range(5)}
    assert all(t.owner_id is None and t.retry_count == 0 for t in after.values())
    assert ran_here == []


async def _gt(value: int, threshold: int) -> bool:
    return value > threshold


async def test_killed_workers_tasks_are_taken_over_exactly_once(
    target: str, tmp_path: Path, reopen: Any
) -> None:
    markers = tmp_path / "m"
    runs: list[tuple[str, str]] = []

    def tools(name: str) -> dict[str, Any]:
        async def slow(args: dict[str, Any], ctx: BackgroundTaskContext) -> Any:
            runs.append((name, ctx.tool_call_id))
            await asyncio.sleep(0.05)  # overlap the two managers' sweeps
            return {"n": args["n"], "by": name}

        return {"slow": slow}

    async with worker(target, "running", markers, ["ready", "started-0", "started-1"]) as proc:
        owner = (markers / "owner").read_text()
        kill(proc)
    survivors = [
        BackgroundTaskManager(reopen(), {**LEASE, "heartbeat_interval_ms": 50}, tools=tools(name))
        for name in ("b1", "b2")
    ]
    store = survivors[0].storage
    left = await all_tasks(store)  # type: ignore[arg-type]
    assert {t.owner_id for t in left.values()} == {owner}  # the dead process still holds them
    for m in survivors:
        await m.start()

    async def settled() -> bool:
        tasks = await all_tasks(store)  # type: ignore[arg-type]
        return all(t.status in ("completed", "failed") for t in tasks.values())

    await eventually(settled, "the survivors to take over the dead worker's tasks")
    for m in survivors:
        await m.shutdown()
    after = await all_tasks(store)  # type: ignore[arg-type]
    stale = after.pop("c0")  # running when killed, no retries left: failed as Mastra does
    assert stale.status == "failed" and stale.error == TaskError(message=STALE_TASK_MESSAGE)
    assert {c: t.status for c, t in after.items()} == dict.fromkeys(("c1", "c2", "c3", "c4"), "completed")
    assert after["c1"].retry_count == 1  # was running: this is its retry
    assert [after[c].retry_count for c in ("c2", "c3", "c4")] == [0, 0, 0]  # were only queued
    calls = sorted(call for _, call in runs)
    assert calls == ["c1", "c2", "c3", "c4"]  # each exactly once, across both survivors
    assert all(after[call].result == {"n": int(call[1]), "by": name} for name, call in runs)


async def test_suspended_task_resumes_in_new_process(target: str, tmp_path: Path, reopen: Any) -> None:
    markers = tmp_path / "m"
    async with worker(target, "suspend", markers, ["ready", "suspended"]) as proc:
        kill(proc)
    task_id = (markers / "suspended").read_text()
    store = reopen()
    seen: list[Any] = []

    async def approval(args: dict[str, Any], ctx: BackgroundTaskContext) -> Any:
        seen.append(ctx.resume_data)
        if ctx.resume_data is None:
            await ctx.suspend({"again": True})
        return {"n": args["n"], "answer": ctx.resume_data}

    async with BackgroundTaskManager(store, tools={"approval": approval}) as m:
        parked = await m.get_task(task_id)
        assert parked.status == "suspended" and parked.suspend_payload == {"question": "ok?", "n": 7}
        assert parked.owner_id is None  # a suspended task belongs to nobody: any process may resume it
        await m.resume(task_id, {"approved": True})
        done = await m.wait_for_completion(task_id, timeout_ms=PATIENCE_S * 1000)
    assert done.status == "completed" and done.result == {"n": 7, "answer": {"approved": True}}
    assert seen == [{"approved": True}]

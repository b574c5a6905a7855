"""Kill a real worker process mid-task (SIGKILL), then recover / resume from this process."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentstream.background import STALE_TASK_MESSAGE, BackgroundTaskContext, BackgroundTaskManager
from agentstream.storage import BaseStore

from ._worker_script import open_store

SCRIPT = Path(__file__).with_name("_worker_script.py")


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


async def run_and_kill(target: str, scenario: str, markers: Path, wait_for: list[str]) -> None:
    markers.mkdir(exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.background._worker_script", target, scenario, str(markers)],
        cwd=Path(__file__).parents[2],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        for _ in range(1500):
            if all((markers / name).exists() for name in wait_for):
                break
            if proc.poll() is not None:
                raise AssertionError(f"worker exited early: {proc.communicate()[1].decode()[-2000:]}")
            await asyncio.sleep(0.02)
        else:
            raise AssertionError(f"worker never wrote {wait_for}")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    assert proc.returncode == -signal.SIGKILL


@pytest.fixture
async def reopen(target: str) -> AsyncIterator[Any]:
    stores: list[BaseStore] = []

    def make() -> BaseStore:
        s = open_store(target)
        stores.append(s)
        return s

    yield make
    for s in stores:
        await s.close()


async def test_killed_running_tasks_are_recovered(target: str, tmp_path: Path, reopen: Any) -> None:
    markers = tmp_path / "m"
    await run_and_kill(target, "running", markers, ["ready", "started-0", "started-1"])
    store = reopen()
    await store.init()
    before = {t.tool_call_id: t for t in (await store.list_tasks()).tasks}
    assert {t.status for t in before.values()} == {"running"}  # the dead process left them running

    reran: list[str] = []

    async def slow(args: dict[str, Any], ctx: BackgroundTaskContext) -> Any:
        reran.append(ctx.task_id)
        return {"n": args["n"], "recovered": True}

    async with BackgroundTaskManager(store, tools={"slow": slow}) as m:
        no_retry = await m.get_task(before["c0"].id)
        assert no_retry.status == "failed" and no_retry.error is not None
        assert no_retry.error.message == STALE_TASK_MESSAGE and no_retry.completed_at is not None
        retried = await m.wait_for_completion(before["c1"].id, timeout_ms=10_000)
    assert retried.status == "completed" and retried.result == {"n": 1, "recovered": True}
    assert retried.retry_count == 1
    assert reran == [before["c1"].id]  # the failed one was not run again


async def test_suspended_task_resumes_in_new_process(target: str, tmp_path: Path, reopen: Any) -> None:
    markers = tmp_path / "m"
    await run_and_kill(target, "suspend", markers, ["ready", "suspended"])
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
        await m.resume(task_id, {"approved": True})
        done = await m.wait_for_completion(task_id, timeout_ms=10_000)
    assert done.status == "completed" and done.result == {"n": 7, "answer": {"approved": True}}
    assert seen == [{"approved": True}]

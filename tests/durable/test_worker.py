"""Background tasks dispatched by this process run on `agentstream worker` processes (DBOS)."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest

from agentstream.background import BackgroundTaskManager
from agentstream.durable import DurableBackground
from agentstream.storage import SQLiteStore

from .conftest import Workers, read_lines


async def _until(predicate: Callable[[], bool], what: str, limit: float = 60.0) -> None:
    """Polls; the limit only turns a hang into a failure naming what never happened."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"never happened: {what}")
        await asyncio.sleep(0.05)


async def _manager(tmp: Path, remote: DurableBackground, **config: Any) -> BackgroundTaskManager:
    store = SQLiteStore(tmp / "tasks.db")
    await store.init()
    tools = remote.manager_tools(["approval", "echo", "three_steps", "failing", "counted", "missing"])
    manager = BackgroundTaskManager(store, {"enabled": True, **config}, tools=tools)
    await manager.start()
    return manager


async def test_task_runs_on_worker_and_its_chunks_reach_the_dispatcher(
    workers: Workers, tmp_path: Path
) -> None:
    worker = workers.start()
    remote = DurableBackground(workers.url)
    manager = await _manager(tmp_path, remote)
    seen: list[Any] = []
    manager.subscribe(seen.append)
    try:
        task = await manager.dispatch("echo", {"text": "hi"}, tool_call_id="c1", agent_id="a", run_id="r1")
        done = await asyncio.wait_for(manager.wait_for_completion(task.id), 60)
    finally:
        await manager.shutdown()
        remote.close()
    assert done.status == "completed"
    assert done.result == {"echo": "hi", "agent": "a"}
    kinds = [chunk.type for chunk in seen]
    assert kinds[0] == "background-task-running" and kinds[-1] == "background-task-completed"
    outputs = [c for c in seen if c.type == "background-task-output"]
    assert len(outputs) == 1
    # Produced in the worker process, not here.
    assert outputs[0].payload.payload["payload"]["output"] == {"progress": "half", "pid": worker.pid}
    assert worker.pid != os.getpid()


async def test_tool_error_and_unknown_tool_fail_the_task_with_the_workers_message(
    workers: Workers, tmp_path: Path
) -> None:
    workers.start()
    remote = DurableBackground(workers.url)
    manager = await _manager(tmp_path, remote)
    try:
        bad = await manager.dispatch("failing", {"topic": "x"}, tool_call_id="c1", agent_id="a", run_id="r1")
        missing = await manager.dispatch("missing", {}, tool_call_id="c2", agent_id="a", run_id="r1")
        bad_done = await asyncio.wait_for(manager.wait_for_completion(bad.id), 60)
        missing_done = await asyncio.wait_for(manager.wait_for_completion(missing.id), 60)
    finally:
        await manager.shutdown()
        remote.close()
    assert bad_done.status == "failed" and bad_done.error is not None
    assert "ValueError: bad topic 'x'" in bad_done.error.message
    assert missing_done.status == "failed" and missing_done.error is not None
    assert "tool 'missing' is not registered on this worker" in missing_done.error.message


async def test_killed_worker_task_finishes_on_another_completed_steps_once(
    workers: Workers, tmp_path: Path
) -> None:
    log, release = tmp_path / "steps.log", tmp_path / "release"
    first = workers.start("--lease-sec", "1.5")
    remote = DurableBackground(workers.url)
    manager = await _manager(tmp_path, remote)
    try:
        task = await manager.dispatch(
            "three_steps",
            {"log": str(log), "release": str(release)},
            tool_call_id="c1",
            agent_id="a",
            run_id="r1",
        )
        await _until(
            lambda: any(line.startswith("two-started") for line in read_lines(log)), "step two started"
        )
        os.kill(first.pid, signal.SIGKILL)
        first.wait()
        second = workers.start("--lease-sec", "1.5")
        release.touch()
        done = await asyncio.wait_for(manager.wait_for_completion(task.id), 90)
    finally:
        await manager.shutdown()
        remote.close()
    assert done.status == "completed"
    assert done.result == {"steps": ["one", "two", "three"]}
    lines = [line.split() for line in read_lines(log)]
    # Step one completed on the killed worker: recorded, never run again. Step two was in flight:
    # it ran again on the second worker, which also ran step three; each completed exactly once.
    assert lines == [
        ["one", str(first.pid)],
        ["two-started", str(first.pid)],
        ["two-started", str(second.pid)],
        ["two", str(second.pid)],
        ["three", str(second.pid)],
    ]


async def test_concurrency_limits_hold_across_worker_processes(workers: Workers, tmp_path: Path) -> None:
    with psycopg.connect(workers.url, autocommit=True) as conn:
        conn.execute("CREATE TABLE running (agent text, task text)")
        conn.execute("CREATE TABLE observed (total int, of_agent int)")
        conn.execute("CREATE TABLE reached (flag int)")
    # Two at most per worker: the third task running at once has to be on the other worker.
    limits = ("--global-concurrency", "3", "--per-agent-concurrency", "2", "--worker-concurrency", "2")
    workers.start(*limits)
    workers.start(*limits)
    remote = DurableBackground(workers.url)
    manager = await _manager(tmp_path, remote, global_concurrency=50, per_agent_concurrency=50)
    try:
        tasks = [
            await manager.dispatch(
                "counted",
                {"dsn": workers.url, "hold_sec": 0.3, "until_total": 3},
                tool_call_id=f"c{i}",
                agent_id=f"agent-{i % 2}",
                run_id=f"r{i}",
            )
            for i in range(12)
        ]
        finished = [await asyncio.wait_for(manager.wait_for_completion(t.id), 120) for t in tasks]
    finally:
        await manager.shutdown()
        remote.close()
    assert [t.status for t in finished] == ["completed"] * 12
    with psycopg.connect(workers.url) as conn:
        total, of_agent, samples = conn.execute(
            "SELECT max(total), max(of_agent), count(*) FROM observed"
        ).fetchone()
        executors = conn.execute(
            "SELECT count(DISTINCT executor_id) FROM dbos.workflow_status WHERE status = 'SUCCESS'"
        ).fetchone()
    assert samples == 12
    assert total == 3 and of_agent <= 2  # 3 at once: both workers ran tasks together, never more
    assert executors is not None and executors[0] == 2  # both workers took tasks


async def test_task_suspended_on_a_worker_resumes_from_another_server_on_another_worker(
    workers: Workers, tmp_path: Path
) -> None:
    first_worker = workers.start()
    remote = DurableBackground(workers.url)
    first = await _manager(tmp_path, remote)
    try:
        task = await first.dispatch(
            "approval", {"question": "ship?"}, tool_call_id="c1", agent_id="a", run_id="r1"
        )
        status: list[str] = []

        async def poll() -> None:
            while not status or status[-1] != "suspended":
                status.append((await first.get_task(task.id)).status)
                await asyncio.sleep(0.05)

        await asyncio.wait_for(poll(), 60)
        suspended = await first.get_task(task.id)
    finally:
        await first.shutdown()
    assert suspended.status == "suspended"
    assert suspended.suspend_payload == {"ask": "ship?", "pid": first_worker.pid}
    first_worker.send_signal(signal.SIGTERM)
    first_worker.wait()
    second_worker = workers.start()
    second = await _manager(tmp_path, remote)  # a new manager on the same store: another server
    try:
        await second.resume(task.id, {"yes": True})
        done = await asyncio.wait_for(second.wait_for_completion(task.id), 60)
    finally:
        await second.shutdown()
        remote.close()
    assert done.status == "completed"
    assert done.result == {"answer": {"yes": True}, "pid": second_worker.pid}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["tests.durable._app:tools"], "no database: pass --database-url"),
        (["nowhere:tools", "--database-url", "sqlite:///x.db"], "no module named 'nowhere'"),
        (["tests.durable._app:echo", "--database-url", "sqlite:///x.db"], "expected a dict of name"),
        (
            ["tests.durable._app:tools", "--database-url", "x", "--global-concurrency", "0"],
            "expected a positive integer",
        ),
    ],
)
def test_worker_command_line_mistakes(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentstream.cli import main

    monkeypatch.delenv("AGENTSTREAM_DURABLE_DB", raising=False)
    with pytest.raises(SystemExit) if "--global-concurrency" in argv else _no_raise():
        code = main(["worker", *argv])
        assert code == 2
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err


class _no_raise:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return False

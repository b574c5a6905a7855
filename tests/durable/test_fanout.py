"""The manager's ``remote`` setting and tasks followed from any server, with real processes: a worker
(`agentstream worker`), server A (`tests/durable/_server.py`, its agent dispatches the task) and
server B (this test's manager on the same task storage and Redis)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentstream.background import BackgroundTaskContext, BackgroundTaskManager
from agentstream.chunks import chunk_to_dict
from agentstream.durable import DurableBackground
from agentstream.resumable import RedisStreamStore
from agentstream.storage import SQLiteStore

from ._server import LEASE
from .conftest import PYTHONPATH, ROOT, Workers, read_lines


async def _until(predicate: Callable[[], bool], what: str, limit: float = 90.0) -> None:
    """Polls; the limit only turns a hang into a failure naming what never happened."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"never happened: {what}")
        await asyncio.sleep(0.05)


def _summary(chunks: list[dict[str, Any]]) -> list[Any]:
    out: list[Any] = []
    for chunk in chunks:
        if chunk["type"] == "background-task-output":
            out.append(("output", chunk["payload"]["payload"]["payload"]["output"]))
        elif chunk["type"] == "background-task-completed":
            out.append(("completed", chunk["payload"]["result"]))
        else:
            out.append(chunk["type"].removeprefix("background-task-"))
    return out


async def test_agent_task_on_a_worker_is_followed_by_another_server_which_finishes_it_after_a_kill(
    workers: Workers, tmp_path: Path, redis_url: str
) -> None:
    log, release, markers, db = (
        tmp_path / "steps.log",
        tmp_path / "release",
        tmp_path / "m",
        tmp_path / "tasks.db",
    )
    markers.mkdir()
    prefix = f"test-{uuid.uuid4().hex}"
    worker = workers.start()
    argv = [workers.url, str(db), redis_url, prefix, str(markers), str(log), str(release)]
    with open(tmp_path / "server-a.log", "wb") as out:  # the child keeps its own copy of the file
        server_a = subprocess.Popen(
            [sys.executable, "-m", "tests.durable._server", *argv],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": PYTHONPATH},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    remote = DurableBackground(workers.url)
    shared = RedisStreamStore.from_url(redis_url, prefix=prefix, block_ms=50)
    server_b = BackgroundTaskManager(SQLiteStore(db), LEASE, remote=remote, stream_store=shared)
    seen: list[dict[str, Any]] = []

    async def read() -> None:
        async for chunk in server_b.stream(agent_id="researcher"):
            seen.append(chunk_to_dict(chunk))

    await server_b.start()
    reader = asyncio.create_task(read())
    try:
        await _until(lambda: (markers / "task").exists() or server_a.poll() is not None, "A dispatched")
        assert server_a.poll() is None, (tmp_path / "server-a.log").read_text()
        task_id = (markers / "task").read_text()
        # B sees the worker's first progress live, while A (which relays it) is alive.
        await _until(lambda: ("output", {"done": "one"}) in _summary(seen), "B sees step one's progress")
        assert server_a.poll() is None
        held = await server_b.get_task(task_id)
        assert (held.status, held.owner_id) == ("running", (markers / "owner").read_text())
        await _until(lambda: any(line.startswith("two-started") for line in read_lines(log)), "step two runs")
        os.kill(server_a.pid, signal.SIGKILL)
        server_a.wait()

        async def owner() -> str | None:
            return (await server_b.get_task(task_id)).owner_id

        while await owner() != server_b.owner_id:  # A's lease lapses; B attaches to the worker's run
            await asyncio.sleep(0.05)
        release.touch()
        done = await asyncio.wait_for(server_b.wait_for_completion(task_id), 90)
        await _until(
            lambda: any(c["type"] == "background-task-completed" for c in seen), "B delivers the end"
        )
    finally:
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reader
        await server_b.shutdown()
        await shared.aclose()
        remote.close()
        if server_a.poll() is None:
            server_a.kill()
            server_a.wait()
    assert done.status == "completed" and done.retry_count == 0
    assert done.result == {"steps": ["one", "two", "three"]}
    # Every step ran once, on the one worker: the takeover attached to its run, it did not restart it.
    assert [line.split() for line in read_lines(log)] == [
        ["one", str(worker.pid)],
        ["two-started", str(worker.pid)],
        ["two", str(worker.pid)],
        ["three", str(worker.pid)],
    ]
    # What B's stream carried: A's part (through Redis) then B's own, nothing twice.
    assert _summary(seen) == ["running", ("output", {"done": "one"}), ("completed", done.result)]


async def test_remote_setting_runs_every_tool_on_a_worker_except_local_ones(
    workers: Workers, tmp_path: Path
) -> None:
    worker = workers.start()

    async def echo(args: dict[str, Any], context: BackgroundTaskContext) -> Any:
        return {"echo": args["text"], "pid": os.getpid()}

    remote = DurableBackground(workers.url, local=["agent-local:echo"])
    manager = BackgroundTaskManager(
        SQLiteStore(tmp_path / "tasks.db"), {}, tools={"echo": echo}, remote=remote
    )
    try:
        far = await manager.dispatch("echo", {"text": "a"}, tool_call_id="c1", agent_id="a", run_id="r1")
        near = await manager.dispatch(
            "echo", {"text": "b"}, tool_call_id="c2", agent_id="agent-local", run_id="r2"
        )
        far_done = await asyncio.wait_for(manager.wait_for_completion(far.id), 60)
        near_done = await asyncio.wait_for(manager.wait_for_completion(near.id), 60)
    finally:
        await manager.shutdown()
        remote.close()
    # The worker's `echo` (tests/durable/_app.py) answers with the agent id; the local one with our pid.
    assert far_done.result == {"echo": "a", "agent": "a"}
    assert near_done.result == {"echo": "b", "pid": os.getpid()}
    assert worker.pid != os.getpid()

"""A checkpointed agent run on real worker processes: kill -9 during the second model call."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentstream.background import BackgroundTaskManager
from agentstream.chunks import Chunk
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


def _relayed(seen: list[Chunk], task_id: str) -> list[dict[str, Any]]:
    """The agent chunks a task relayed (its ``background-task-output``), with the run and message
    ids (made from the task's workflow id) named generically, so two tasks' runs compare."""
    chunks = [
        c.payload.payload["payload"]["output"]
        for c in seen
        if c.type == "background-task-output" and c.payload.task_id == task_id
    ]
    text = json.dumps(chunks)
    if chunks:
        start = chunks[0]
        text = text.replace(start["runId"], "<run>").replace(start["payload"]["messageId"], "<message>")
    relayed: list[dict[str, Any]] = json.loads(text)
    return relayed


async def test_killed_worker_replays_completed_model_and_tool_calls_and_redoes_the_one_in_flight(
    workers: Workers, tmp_path: Path
) -> None:
    log, release = tmp_path / "calls.log", tmp_path / "release"
    first = workers.start("--lease-sec", "1.5")
    remote = DurableBackground(workers.url)
    store = SQLiteStore(tmp_path / "tasks.db")
    await store.init()
    manager = BackgroundTaskManager(store, {"enabled": True}, tools=remote.manager_tools(["agent_task"]))
    await manager.start()
    seen: list[Chunk] = []
    manager.subscribe(seen.append)
    try:
        args = {"log": str(log), "release": str(release)}
        task = await manager.dispatch("agent_task", args, tool_call_id="c1", agent_id="a", run_id="r1")
        await _until(lambda: any(x.startswith("model-2-started") for x in read_lines(log)), "model call 2")
        os.kill(first.pid, signal.SIGKILL)
        first.wait()
        second = workers.start("--lease-sec", "1.5")
        release.touch()
        done = await asyncio.wait_for(manager.wait_for_completion(task.id), 90)
        # The same run, never interrupted, for comparison.
        reference_log = tmp_path / "reference.log"
        args = {"log": str(reference_log), "release": str(release)}
        reference = await manager.dispatch("agent_task", args, tool_call_id="c2", agent_id="a", run_id="r2")
        reference_done = await asyncio.wait_for(manager.wait_for_completion(reference.id), 90)
    finally:
        await manager.shutdown()
        remote.close()
    assert done.status == "completed" and reference_done.status == "completed"
    assert done.result == {"text": "It is sunny in Oslo."} == reference_done.result
    # Model call 1 and the tool completed on the killed worker: recorded, not made again. Model call
    # 2 was in flight: made again by the second worker, which replayed everything before it.
    assert [line.split() for line in read_lines(log)] == [
        ["model-1", str(first.pid)],
        ["tool", str(first.pid)],
        ["model-2-started", str(first.pid)],
        ["model-2-started", str(second.pid)],
        ["model-2", str(second.pid)],
    ]
    assert [line.split()[0] for line in read_lines(reference_log)] == [
        "model-1",
        "tool",
        "model-2-started",
        "model-2",
    ]
    crashed, uncrashed = _relayed(seen, task.id), _relayed(seen, reference.id)
    assert [c["type"] for c in crashed][:3] == ["start", "step-start", "tool-call"]
    assert crashed[-1]["type"] == "finish"
    assert crashed == uncrashed

"""How fast a worker's progress chunks reach the servers: the dispatching one and another one.

    .venv/bin/python bench/bench_task_fanout.py [TASKS]     # TASKS tasks of 20 chunks (default 5)

Needs scripts/postgres.sh and scripts/redis.sh (a fresh database and Redis key prefix are made).
One `agentstream worker`; each chunk carries the worker's wall clock when written; latency = the
time it is received (same host). Rows, same run:

* reference: a manager running the tool in its own process (no worker), its subscriber.
* dispatcher: the manager with ``remote=DurableBackground`` (the chunk comes through the DBOS stream,
  which the manager polls every 50 ms).
* DBOS stream read directly: a second DBOS client reading the task's workflow stream, as any other
  server could instead of a shared stream store (the alternative design).
* other server via Redis: a second manager following the task through the stream store (the
  dispatcher relays each chunk to Redis Streams; the follower blocks in ``XREAD``).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_durable import PG, _start_workers, _stop

REDIS = os.environ.get("AGENTSTREAM_TEST_REDIS_URL", "redis://127.0.0.1:56379/0")
TICKS = {"count": 20, "gap_sec": 0.03}
IDS = {"agent_id": "bench", "run_id": "r"}


def _row(name: str, samples: list[float], ref: float | None) -> float:
    p50 = statistics.median(samples) * 1e3
    p90 = statistics.quantiles(samples, n=10)[-1] * 1e3
    ratio = f"  {p50 / ref:7.1f}x reference p50" if ref else ""
    print(f"{name:<36} p50 {p50:8.2f} ms  p90 {p90:8.2f} ms  ({len(samples)} chunks){ratio}")
    return p50


def _stamp(chunk: Any, into: list[float]) -> None:
    if chunk.type == "background-task-output":
        into.append(time.time() - chunk.payload.payload["payload"]["output"]["t"])


async def _reference(tasks: int) -> float:
    from agentstream.background import BackgroundTaskManager
    from agentstream.storage import InMemoryStore

    async def ticks(args: dict[str, Any], context: Any) -> int:
        for _ in range(args["count"]):
            context.writer.write({"t": time.time()})
            await asyncio.sleep(args["gap_sec"])
        return int(args["count"])

    seen: list[float] = []
    async with BackgroundTaskManager(InMemoryStore(), {}, tools={"ticks": ticks}) as manager:
        manager.subscribe(lambda c: _stamp(c, seen))
        for i in range(tasks):
            task = await manager.dispatch("ticks", TICKS, tool_call_id=f"c{i}", **IDS)
            await manager.wait_for_completion(task.id)
    return _row("reference: in-process tool", seen, None)


async def _remote(url: str, tmp: Path, tasks: int, ref: float) -> None:
    from dbos import DBOSClient

    from agentstream.background import BackgroundTaskManager
    from agentstream.durable import DurableBackground, attempt_id
    from agentstream.durable._protocol import CHUNKS_STREAM
    from agentstream.resumable import RedisStreamStore
    from agentstream.storage import SQLiteStore

    prefix = f"bench-{uuid.uuid4().hex}"
    remote = DurableBackground(url)
    stores = [RedisStreamStore.from_url(REDIS, prefix=prefix) for _ in range(2)]
    config = {"follow_interval_ms": 50}
    a = BackgroundTaskManager(SQLiteStore(tmp / "t.db"), config, remote=remote, stream_store=stores[0])
    b = BackgroundTaskManager(SQLiteStore(tmp / "t.db"), config, remote=remote, stream_store=stores[1])
    direct = DBOSClient(system_database_url=url, application_name="bench")
    at_a: list[float] = []
    at_b: list[float] = []
    at_dbos: list[float] = []

    async def read_dbos(task_id: str) -> None:
        from dbos._error import DBOSNonExistentWorkflowError

        spec: Any = {"task_id": task_id, "retry_count": 0, "resume_data": None}
        while True:  # until the dispatcher has enqueued the workflow
            try:
                stream = direct.read_stream_async(attempt_id(spec), CHUNKS_STREAM, polling_interval_sec=0.05)
                async for item in stream:
                    at_dbos.append(time.time() - item["payload"]["output"]["t"])
                return
            except DBOSNonExistentWorkflowError:
                await asyncio.sleep(0.01)

    await a.start()
    await b.start()
    a.subscribe(lambda c: _stamp(c, at_a))
    b.subscribe(lambda c: _stamp(c, at_b))
    try:
        for i in range(tasks):
            task = await a.dispatch("ticks", TICKS, tool_call_id=f"c{i}", **IDS)
            reader = asyncio.create_task(read_dbos(task.id))
            await a.wait_for_completion(task.id)
            await asyncio.wait_for(reader, 30)
            for _ in range(1000):  # the follower's last chunks may still be on their way
                if len(at_b) >= len(at_a):
                    break
                await asyncio.sleep(0.01)
            else:
                raise SystemExit(f"the other server got {len(at_b)} of {len(at_a)} chunks")
    finally:
        await a.shutdown()
        await b.shutdown()
        for store in stores:
            await store.aclose()
        direct.destroy()
        remote.close()
    _row("dispatcher (DBOS stream relay)", at_a, ref)
    _row("DBOS stream read directly", at_dbos, ref)
    _row("other server via Redis stream store", at_b, ref)


async def main(tasks: int) -> None:
    import psycopg

    name = f"bench_fanout_{uuid.uuid4().hex[:8]}"
    base = PG.rpartition("/")[0]
    with psycopg.connect(PG, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        with tempfile.TemporaryDirectory() as tmp:
            ref = await _reference(tasks)
            workers = _start_workers(f"{base}/{name}", 1, Path(tmp))
            try:
                await _remote(f"{base}/{name}", Path(tmp), tasks, ref)
            finally:
                _stop(workers)
    finally:
        with psycopg.connect(PG, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 5))

"""Background-task manager bench: dispatch-to-start latency, completed tasks/s, memory per suspended task.

    .venv/bin/python bench/bench_background.py [N]        # N short tasks per backend (default 1000)

Per backend (in-memory = the same-run reference, SQLite file, PostgreSQL when AGENTSTREAM_TEST_PG_DSN
or scripts/postgres.sh's cluster is reachable):

* dispatch->start: time from ``dispatch()`` being called to the tool's ``execute`` starting, for N
  tasks dispatched one after another with free slots (p50 / p99), which includes the create + the
  pending->running CAS.
* throughput: N trivial tasks dispatched at once (default limits 10 global / 5 per agent, spread over
  two agents), wall time until the last one is ``completed`` (create + 2 CAS per task).
* memory per idle suspended task: tracemalloc growth of the process after 1,000 tasks were
  dispatched and suspended (storage included: the in-memory store holds the records itself).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
import tracemalloc
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentstream.background import BackgroundTaskContext, BackgroundTaskManager
from agentstream.storage import BaseStore, InMemoryStore, SQLiteStore

DEFAULT_PG_DSN = "postgresql://postgres@127.0.0.1:54329/postgres"


async def latency(store_factory: Callable[[], BaseStore], n: int) -> tuple[float, float]:
    started: dict[str, float] = {}
    done = asyncio.Event()

    async def tool(args: dict[str, Any], ctx: BackgroundTaskContext) -> Any:
        started[args["i"]] = time.perf_counter()
        if len(started) == n:
            done.set()
        return None

    samples: list[float] = []
    store = store_factory()
    async with BackgroundTaskManager(store, tools={"t": tool}) as m:
        for i in range(n):
            t0 = time.perf_counter()
            task = await m.dispatch("t", {"i": i}, tool_call_id=f"c{i}", agent_id="a", run_id="r")
            while i not in started:
                await asyncio.sleep(0)
            samples.append(started[i] - t0)
            await m.wait_for_completion(task.id)
    await store.close()
    samples.sort()
    return statistics.median(samples), samples[int(len(samples) * 0.99) - 1]


async def throughput(store_factory: Callable[[], BaseStore], n: int) -> float:
    async def tool(args: dict[str, Any], ctx: BackgroundTaskContext) -> Any:
        return args["i"]

    completed = asyncio.Event()
    count = 0

    def on_complete(_task: Any) -> None:
        nonlocal count
        count += 1
        if count == n:
            completed.set()

    store = store_factory()
    async with BackgroundTaskManager(store, {"on_task_complete": on_complete}, tools={"t": tool}) as m:
        t0 = time.perf_counter()
        await asyncio.gather(
            *(
                m.dispatch("t", {"i": i}, tool_call_id=f"c{i}", agent_id=f"a{i % 2}", run_id="r")
                for i in range(n)
            )
        )
        await completed.wait()
        wall = time.perf_counter() - t0
    await store.close()
    return wall


async def suspended_memory(store_factory: Callable[[], BaseStore], n: int = 1000) -> float:
    async def tool(args: dict[str, Any], ctx: BackgroundTaskContext) -> Any:
        await ctx.suspend({"question": "approve?", "i": args["i"]})

    store = store_factory()
    async with BackgroundTaskManager(
        store, {"global_concurrency": 100, "per_agent_concurrency": 100}, tools={"t": tool}
    ) as m:
        await m.dispatch("t", {"i": -1}, tool_call_id="warm", agent_id="a", run_id="r")
        await asyncio.sleep(0.05)
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        await asyncio.gather(
            *(m.dispatch("t", {"i": i}, tool_call_id=f"c{i}", agent_id="a", run_id="r") for i in range(n))
        )
        while m.running_count or (await m.list_tasks(status="suspended", per_page=1)).total < n + 1:
            await asyncio.sleep(0.01)
        after = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
    await store.close()
    return (after - before) / n


async def bench(
    name: str, factory: Callable[[], BaseStore], n: int, ref: dict[str, float] | None
) -> dict[str, float]:
    p50, p99 = await latency(factory, min(n, 300))
    wall = await throughput(factory, n)
    mem = await suspended_memory(factory)
    rate = n / wall
    ratio = f"  ({rate / ref['rate']:.2f}x in-memory)" if ref else ""
    print(
        f"{name:<10} dispatch->start p50 {p50 * 1e3:7.3f} ms  p99 {p99 * 1e3:7.3f} ms | "
        f"{n} tasks: {wall:6.2f} s = {rate:8,.0f} completed/s{ratio} | "
        f"{mem / 1024:6.2f} KiB per idle suspended task"
    )
    return {"rate": rate}


def pg_dsn() -> str | None:
    dsn = os.environ.get("AGENTSTREAM_TEST_PG_DSN", DEFAULT_PG_DSN)
    try:
        import psycopg

        with psycopg.connect(dsn, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
        return dsn
    except Exception as exc:
        print(f"postgres: skipped ({type(exc).__name__}: {' '.join(str(exc).split())[:120]})")
        return None


async def main(n: int) -> None:
    print(f"background-task manager, {n} short tasks per backend, Python {sys.version.split()[0]}")
    ref = await bench("memory", InMemoryStore, n, None)
    with tempfile.TemporaryDirectory() as tmp:
        counter = iter(range(10**6))
        await bench("sqlite", lambda: SQLiteStore(Path(tmp) / f"bg{next(counter)}.db"), n, ref)
    dsn = pg_dsn()
    if dsn is not None:
        from agentstream.storage import PostgresStore

        schemas: list[str] = []

        def make_pg() -> BaseStore:
            schema = f"bench_bg_{uuid.uuid4().hex[:10]}"
            schemas.append(schema)
            return PostgresStore(dsn, schema=schema, max_size=20)

        try:
            await bench("postgres", make_pg, n, ref)
        finally:
            import psycopg

            async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
                for schema in schemas:
                    await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000))

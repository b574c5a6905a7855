"""Storage bench: create + CAS update (pending->running) + get of N background-task records per backend.

    .venv/bin/python bench/bench_storage.py [N]

Operations are awaited one after another (the manager's pattern: one task's lifecycle at a time), so
figures are per-operation latency bound. The in-memory backend is the reference (ratio 1.00) of the
same run. PostgreSQL is included when AGENTSTREAM_TEST_PG_DSN (default: scripts/postgres.sh's cluster)
is reachable.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from agentstream.storage import BackgroundTask, BaseStore, InMemoryStore, SQLiteStore, TaskUpdate, utc_now

DEFAULT_PG_DSN = "postgresql://postgres@127.0.0.1:54329/postgres"


def make_task(i: int) -> BackgroundTask:
    return BackgroundTask(
        id=f"task-{i}",
        tool_name="search",
        tool_call_id=f"call-{i}",
        agent_id="agent-1",
        run_id="run-1",
        thread_id="thread-1",
        resource_id="user-1",
        args={"query": f"how do rainbows form #{i}", "limit": 10, "filters": {"lang": "en"}},
        max_retries=1,
        timeout_ms=60_000,
    )


async def run_backend(store: BaseStore, n: int) -> dict[str, float]:
    await store.init()
    tasks = [make_task(i) for i in range(n)]
    timings: dict[str, float] = {}

    t0 = time.perf_counter()
    for t in tasks:
        await store.create_task(t)
    timings["create"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    for t in tasks:
        if not await store.update_task(
            t.id, TaskUpdate(status="running", started_at=utc_now()), expected_status="pending"
        ):
            raise AssertionError(f"CAS failed for {t.id}")
    timings["cas_update"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    for t in tasks:
        got = await store.get_task(t.id)
        if got.status != "running":
            raise AssertionError(f"unexpected status {got.status}")
    timings["get"] = time.perf_counter() - t0
    timings["total"] = timings["create"] + timings["cas_update"] + timings["get"]
    return timings


def pg_reachable(dsn: str) -> str | None:
    try:
        import psycopg

        with psycopg.connect(dsn, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
        return None
    except Exception as exc:
        return " ".join(str(exc).split())[:120]


async def main(n: int) -> None:
    dsn = os.environ.get("AGENTSTREAM_TEST_PG_DSN", DEFAULT_PG_DSN)
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        backends: list[tuple[str, Callable[[], BaseStore]]] = [
            ("memory", InMemoryStore),
            ("sqlite :memory:", lambda: SQLiteStore(":memory:")),
            ("sqlite file (WAL)", lambda: SQLiteStore(Path(tmp) / "bench.db")),
        ]
        pg_error = pg_reachable(dsn)
        schema = f"bench_{uuid.uuid4().hex[:12]}"
        if pg_error is None:
            from agentstream.storage import PostgresStore

            backends.append(("postgres", lambda: PostgresStore(dsn, schema=schema)))
        for name, factory in backends:
            store = factory()
            try:
                results[name] = await run_backend(store, n)
            finally:
                if name == "postgres":
                    await drop_schema(store, schema)
                await store.close()

    ref = results["memory"]["total"]
    print(f"storage bench: {n} records x (create + CAS update + get) = {3 * n} ops per backend")
    print(
        f"{'backend':<20}{'create/s':>11}{'cas/s':>11}{'get/s':>11}{'total ops/s':>13}{'x memory time':>15}"
    )
    for name, t in results.items():
        print(
            f"{name:<20}{n / t['create']:>11,.0f}{n / t['cas_update']:>11,.0f}{n / t['get']:>11,.0f}"
            f"{3 * n / t['total']:>13,.0f}{t['total'] / ref:>15.1f}"
        )
    if pg_error is not None:
        print(f"postgres: skipped (unreachable at {dsn}: {pg_error}); run scripts/postgres.sh")


async def drop_schema(store: BaseStore, schema: str) -> None:
    pool = getattr(store, "pool", None)
    if pool is None:
        return
    async with pool.connection() as conn:
        await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000))

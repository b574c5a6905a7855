"""Durable-engine spike: enqueue->start latency and throughput of background tasks on worker processes.

    .venv/bin/python bench/bench_durable.py [N]     # N tasks per throughput row (default 200)

Needs scripts/postgres.sh's cluster (or AGENTSTREAM_TEST_PG_DSN); a fresh database is made and dropped.
Rows:

* reference: the in-process ``BackgroundTaskManager`` (in-memory store), same run.
* DBOS (PostgreSQL), 1 and 2 ``agentstream worker`` processes: ``DurableBackground.run`` from this
  process; latency = tool start (worker clock) - enqueue call (same host), 30 tasks one by one (p50,
  p90); throughput = N tasks enqueued at once until the last result is read back here.
* Taskiq over Redis (when ``taskiq-redis`` is installed and ``redis-server`` is on PATH): the same
  two measurements with one ``taskiq worker`` process, as the queue alternative.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PG = os.environ.get("AGENTSTREAM_TEST_PG_DSN", "postgresql://postgres@127.0.0.1:54329/postgres")


def _context(task_id: str) -> Any:
    from agentstream._abort import AbortController
    from agentstream.background import BackgroundTaskContext
    from agentstream.tools import ToolWriter

    writer = ToolWriter(lambda _c: None, run_id="r", tool_call_id=task_id, tool_name="started_at")
    return BackgroundTaskContext(
        task_id=task_id,
        run_id="r",
        tool_call_id=task_id,
        tool_name="started_at",
        agent_id=f"agent-{hash(task_id) % 4}",
        abort_signal=AbortController().signal,
        writer=writer,
    )


def _report(name: str, latencies: list[float], count: int, seconds: float, ref_rate: float | None) -> float:
    rate = count / seconds
    p50 = statistics.median(latencies) * 1e3
    p90 = statistics.quantiles(latencies, n=10)[-1] * 1e3
    ratio = f"  {rate / ref_rate:8.4f}x reference" if ref_rate else ""
    print(f"{name:<40} start p50 {p50:8.2f} ms  p90 {p90:8.2f} ms  {rate:9.1f} tasks/s{ratio}")
    return rate


async def _reference(n: int) -> float:
    from agentstream.background import BackgroundTaskManager
    from agentstream.storage import InMemoryStore

    async def started_at(args: dict[str, Any], context: Any) -> float:
        return time.time()

    store = InMemoryStore()
    await store.init()
    async with BackgroundTaskManager(
        store, {"enabled": True, "global_concurrency": 50}, tools={"t": started_at}
    ) as m:
        latencies = []
        for i in range(30):
            t0 = time.time()
            task = await m.dispatch("t", {}, tool_call_id=f"c{i}", agent_id="a", run_id="r")
            done = await m.wait_for_completion(task.id)
            latencies.append(float(done.result) - t0)  # type: ignore[arg-type]
        t0 = time.perf_counter()
        tasks = [await m.dispatch("t", {}, tool_call_id=f"d{i}", agent_id="a", run_id="r") for i in range(n)]
        for task in tasks:
            await m.wait_for_completion(task.id)
        return _report("in-process manager (reference)", latencies, n, time.perf_counter() - t0, None)


def _start_workers(url: str, count: int, logdir: Path) -> list[subprocess.Popen[bytes]]:
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'bench'}:{ROOT / 'src'}"}
    procs = []
    for i in range(count):
        log = open(logdir / f"worker-{i}.log", "wb")
        procs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "agentstream",
                    "worker",
                    "_durable_tools:tools",
                    "--database-url",
                    url,
                    "--poll-sec",
                    "0.05",
                    "--global-concurrency",
                    "50",
                ],
                cwd=ROOT / "bench",
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        )
    return procs


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        p.send_signal(signal.SIGTERM)
    for p in procs:
        p.wait(timeout=30)


async def _dbos(url: str, workers: int, n: int, ref: float, logdir: Path) -> None:
    from agentstream.durable import DurableBackground

    remote = DurableBackground(url)
    procs = _start_workers(url, workers, logdir)
    try:
        # Workers are up (a worker that failed to start fails the bench instead of hanging it).
        await asyncio.wait_for(remote.run("started_at", {}, _context(f"warm-{uuid.uuid4()}")), 60)
        latencies = []
        for _ in range(30):
            t0 = time.time()
            latencies.append(await remote.run("started_at", {}, _context(str(uuid.uuid4()))) - t0)
        t0 = time.perf_counter()
        await asyncio.gather(*(remote.run("started_at", {}, _context(str(uuid.uuid4()))) for _ in range(n)))
        _report(f"DBOS on PostgreSQL, {workers} worker(s)", latencies, n, time.perf_counter() - t0, ref)
    finally:
        _stop(procs)
        remote.close()


async def _taskiq(n: int, ref: float, logdir: Path) -> None:
    if shutil.which("redis-server") is None:
        print("taskiq/redis: skipped (no redis-server)")
        return
    try:
        import _taskiq_app  # type: ignore[import-not-found]
    except ImportError as exc:
        print(f"taskiq/redis: skipped ({exc})")
        return
    redis = subprocess.Popen(
        ["redis-server", "--port", "56390", "--bind", "127.0.0.1", "--save", ""], stdout=subprocess.DEVNULL
    )
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'bench'}:{ROOT / 'src'}"}
    log = open(logdir / "taskiq.log", "wb")
    worker = subprocess.Popen(
        [sys.executable, "-m", "taskiq", "worker", "_taskiq_app:broker", "--workers", "1"],
        cwd=ROOT / "bench",
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        await asyncio.sleep(1.0)
        await _taskiq_app.broker.startup()
        first = await _taskiq_app.started_at.kiq()
        await first.wait_result(timeout=60)
        latencies = []
        for _ in range(30):
            t0 = time.time()
            res = await (await _taskiq_app.started_at.kiq()).wait_result(check_interval=0.005, timeout=60)
            latencies.append(res.return_value - t0)
        t0 = time.perf_counter()
        handles = [await _taskiq_app.started_at.kiq() for _ in range(n)]
        for h in handles:
            await h.wait_result(check_interval=0.005, timeout=120)
        _report("Taskiq on Redis, 1 worker", latencies, n, time.perf_counter() - t0, ref)
        await _taskiq_app.broker.shutdown()
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=30)
        redis.terminate()
        redis.wait()


async def main(n: int) -> None:
    import psycopg

    name = f"bench_durable_{uuid.uuid4().hex[:8]}"
    base = PG.rpartition("/")[0]
    with psycopg.connect(PG, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        with tempfile.TemporaryDirectory() as tmp:
            ref = await _reference(n)
            for workers in (1, 2):
                await _dbos(f"{base}/{name}", workers, n, ref, Path(tmp))
            sys.path.insert(0, str(ROOT / "bench"))
            await _taskiq(n, ref, Path(tmp))
    finally:
        with psycopg.connect(PG, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 200))

"""Chats through real `agentstream cluster` processes: throughput with 1 vs 2 workers, and the
first-token latency each hop adds, all measured in the same run.

    .venv/bin/python bench/bench_cluster.py [K]     # K concurrent chats per throughput row (200)

Needs scripts/postgres.sh's and scripts/redis.sh's servers (or AGENTSTREAM_TEST_PG_DSN /
AGENTSTREAM_TEST_REDIS_URL); a fresh database is made and dropped. The app is
`bench/_cluster_app.py` (a model that answers at once, 30 deltas); smoothing is off everywhere.

* Throughput: K chats POSTed at once, round robin over two servers; turns/s = K / wall time until
  the last answer finished (every answer's text checked). Reference: the two servers answering
  the chats themselves (Redis store, no workers).
* The 1-worker rows pause the second worker (SIGSTOP) so both counts share one cluster; all modes
  are interleaved round by round (`ROUNDS`), the shared machine's load drifting.
* First token: one chat at a time (`LATENCY_N` per path, interleaved), request sent → first ``text-delta`` line read by
  the client (httpx, loopback), p50 / p90. Reference: one server answering in-process with the
  in-memory store; then the Redis store in-process; then turns on a worker (handed over on
  PostgreSQL, a worker woken by LISTEN/NOTIFY runs it and writes to Redis, the server follows).
* Cost (closing rows, same run): CPU per turn over `COST_N` chats (10 at a time) of the worker
  cluster's servers and workers, and with their PostgreSQL backends (`/proc/<pid>/stat`), against
  the in-process memory-store server; an idle worker's PostgreSQL transactions per second
  (`pg_stat_database` deltas over 10 s: only the workers use the bench database while idle, and
  autovacuum is turned off on its tables first, its runs after the bursts being no worker's, and
  the window starts 65 s after the bursts, once PostgreSQL has flushed their statistics); the
  connections left open after the bursts.

* Pooled Redis connections: after the last burst of K chats, the connections each server process
  holds (Redis's ``CLIENT LIST``, by the ``agentstream-<pid>`` name every pooled connection
  carries), right away and once idle connections above the pool's floor were closed.

Figures are printed, never asserted. A failed run keeps the clusters' logs (their directory is
printed); a run that succeeds removes them.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _cluster_app import answer

ROOT = Path(__file__).resolve().parents[1]
PG = os.environ.get("AGENTSTREAM_TEST_PG_DSN", "postgresql://postgres@127.0.0.1:54329/postgres")
REDIS = os.environ.get("AGENTSTREAM_TEST_REDIS_URL", "redis://127.0.0.1:56379/0")
LATENCY_N = 40
_SERVER = re.compile(r"agentstream cluster: server \d+ (http://\S+)/ \(pid \d+\)")
_WORKER = re.compile(r"agentstream cluster: worker \d+ \(pid (\d+)\)")
_SERVER_PID = re.compile(r"agentstream cluster: server \d+ http://\S+/ \(pid (\d+)\)")
ROUNDS = 3


@dataclass
class Cluster:
    urls: list[str]
    workers: list[int]  # pids
    servers: list[int] = field(default_factory=list)  # pids


@contextmanager
def cluster(database: str, servers: int, workers: int, *extra: str) -> Iterator[Cluster]:
    """``agentstream cluster`` with the bench app on free ports; its logs are kept if the run fails."""
    tmp = tempfile.mkdtemp(prefix="bench-cluster-")
    ok = False
    try:
        with _cluster_in(Path(tmp), database, servers, workers, *extra) as started:
            yield started
        ok = True
    finally:
        if ok:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print(f"bench_cluster: the run failed; the cluster's logs are kept in {tmp}", file=sys.stderr)


@contextmanager
def _cluster_in(tmp: Path, database: str, servers: int, workers: int, *extra: str) -> Iterator[Cluster]:
    out = tmp / "out"
    args = ["--port", "0", "--servers", str(servers), "--workers", str(workers), "--logs", str(tmp)]
    args += ["--app", "bench._cluster_app:mastra", "--database-url", database, "--redis-url", REDIS]
    # A worker paused for a 1-worker round must not look dead to the other (lease takeover).
    args += [
        "--serve-arg=--no-smooth",
        "--worker-arg=--no-smooth",
        "--worker-arg=--lease-sec=600",
        *extra,
    ]
    with out.open("wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "agentstream", "cluster", *args], cwd=ROOT, stdout=sink, stderr=sink
        )
    try:
        while "Ctrl-C stops" not in out.read_text():
            if proc.poll() is not None:
                raise SystemExit(f"agentstream cluster failed:\n{out.read_text()}")
            time.sleep(0.1)
        said = out.read_text()
        yield Cluster(
            _SERVER.findall(said),
            [int(pid) for pid in _WORKER.findall(said)],
            [int(pid) for pid in _SERVER_PID.findall(said)],
        )
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)


@contextmanager
def paused(pid: int) -> Iterator[None]:
    """The worker ``pid`` stopped (SIGSTOP): it takes no turn until resumed."""
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


def _body(question: str) -> dict[str, object]:
    chat = uuid.uuid4().hex
    return {
        "id": chat,
        "trigger": "submit-message",
        "messages": [{"id": f"u-{chat}", "role": "user", "parts": [{"type": "text", "text": question}]}],
    }


async def _chat(client: httpx.AsyncClient, url: str, question: str) -> tuple[float, str]:
    """(seconds to the first text-delta, the answer's text)."""
    start = time.perf_counter()
    first = 0.0
    text = []
    async with client.stream("POST", f"{url}/api/chat", json=_body(question)) as response:
        response.raise_for_status()
        async for line in response.aiter_lines():
            if line.startswith('data: {"type":"text-delta"'):
                first = first or time.perf_counter() - start
                text.append(line.split('"delta":"', 1)[1].rsplit('"', 1)[0])
    return first, "".join(text)


def _client() -> httpx.AsyncClient:
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
    return httpx.AsyncClient(timeout=httpx.Timeout(300, connect=60), limits=limits)


async def throughput(urls: list[str], k: int) -> float:
    """Turns per second for ``k`` chats at once, round robin over ``urls``."""
    async with _client() as client:
        await _chat(client, urls[0], "warm-up")
        questions = [f"throughput {i} {uuid.uuid4().hex[:6]}" for i in range(k)]
        start = time.perf_counter()
        answers = await asyncio.gather(
            *(_chat(client, urls[i % len(urls)], q) for i, q in enumerate(questions))
        )
        wall = time.perf_counter() - start
    wrong = sum(text != answer(q) for q, (_, text) in zip(questions, answers, strict=True))
    if wrong:
        raise SystemExit(f"{wrong} of {k} answers were wrong")
    return k / wall


async def first_token(url: str) -> float:
    """Milliseconds from sending a chat to reading its first text-delta."""
    async with _client() as client:
        question = f"latency {uuid.uuid4().hex[:8]}"
        first, text = await _chat(client, url, question)
    if text != answer(question):
        raise SystemExit(f"wrong answer to {question!r}")
    return first * 1000


def _row(name: str, value: str, ratio: str = "") -> None:
    print(f"{name:<52} {value:>22}  {ratio}", flush=True)


async def main(k: int) -> None:
    name = f"bench_cluster_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(PG, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    database = f"{PG.rpartition('/')[0]}/{name}"
    try:
        # All three up at once and the modes interleaved: the shared machine's load drifts.
        with (
            cluster(database, 1, 0, "--serve-arg=--stream-store=memory") as memory,
            cluster(database, 2, 0) as redis,
            cluster(database, 2, 2) as workers,
        ):
            try:
                await _measure(k, memory, redis, workers)
            finally:  # the worker path's costs even when a burst above failed
                await _worker_costs(name, memory, workers)
    finally:
        with psycopg.connect(PG, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


async def _measure(k: int, memory: Cluster, redis: Cluster, workers: Cluster) -> None:
    paths = {"in-process, memory store (reference)": memory, "in-process, Redis store": redis}
    paths["worker (DBOS queue) + Redis store"] = workers
    firsts: dict[str, list[float]] = {name: [] for name in paths}
    for where in paths.values():
        await first_token(where.urls[0])  # warm-up
    for _ in range(LATENCY_N):
        for name, where in paths.items():
            firsts[name].append(await first_token(where.urls[0]))
    print(f"first token, {LATENCY_N} chats per path one at a time, interleaved (p50 / p90):")
    ref = statistics.median(firsts["in-process, memory store (reference)"])
    for name, times in firsts.items():
        p50, p90 = statistics.median(times), statistics.quantiles(times, n=10)[8]
        _row(f"  {name}", f"{p50:.1f} / {p90:.1f} ms", f"+{p50 - ref:.1f} ms p50" if p50 != ref else "")
    await pooled_connections(k, {"in-process": redis, "worker path": workers})
    rates: dict[str, list[float]] = {"in-process": [], "1 worker": [], "2 workers": []}
    for _ in range(ROUNDS):
        rates["in-process"].append(await throughput(redis.urls, k))
        rates["2 workers"].append(await throughput(workers.urls, k))
        with paused(workers.workers[1]):
            rates["1 worker"].append(await throughput(workers.urls, k))
    rate = {mode: statistics.median(values) for mode, values in rates.items()}
    print(f"throughput, {k} chats at once over 2 servers, median of {ROUNDS} interleaved rounds:")
    _row("  2 servers answering in-process (reference)", f"{rate['in-process']:.1f} turns/s")
    for mode in ("1 worker", "2 workers"):
        _row(
            f"  2 servers, {mode}",
            f"{rate[mode]:.1f} turns/s",
            f"{rate[mode] / rate['in-process']:.2f}x reference",
        )
    _row("  2 workers vs 1", f"{rate['2 workers'] / rate['1 worker']:.2f}x")


POOL_FLOOR = 2
"""`RedisStreamStore.from_url`'s ``min_idle``: the idle connections a server keeps after a burst."""


def _named_connections(pids: list[int]) -> list[int]:
    """How many Redis connections each process of ``pids`` holds (by the pool's connection names)."""
    import redis

    with redis.Redis.from_url(REDIS) as client:
        names = [entry.get("name", "") for entry in client.client_list()]
    return [names.count(f"agentstream-{pid}") for pid in pids]


async def pooled_connections(k: int, clusters: dict[str, Cluster]) -> None:
    """Each server's pooled Redis connections during a burst of ``k`` chats (peak), right after it,
    and once back at the floor (or after 60 s)."""
    print(f"pooled Redis connections per server, a burst of {k} chats (floor {POOL_FLOOR}):")
    for name, where in clusters.items():
        peak = [0] * len(where.servers)
        burst = asyncio.ensure_future(throughput(where.urls, k))
        while not burst.done():
            sampled = await asyncio.to_thread(_named_connections, where.servers)
            peak = [max(a, b) for a, b in zip(peak, sampled, strict=True)]
            await asyncio.wait({burst}, timeout=0.2)
        await burst
        after = _named_connections(where.servers)
        start = time.monotonic()
        now = after
        while max(now) > POOL_FLOOR and time.monotonic() - start < 60:
            await asyncio.sleep(0.5)
            now = _named_connections(where.servers)
        waited = time.monotonic() - start
        _row(f"  {name}: peak / right after / {waited:.0f} s later", f"{peak} / {after} / {now}")


COST_N = 100
_TICK = os.sysconf("SC_CLK_TCK")


def _cpu_sec(pid: int) -> float:
    """User + system CPU seconds of ``pid`` so far (0 if it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _TICK


def _backends(database: str) -> list[int]:
    with psycopg.connect(PG, autocommit=True) as conn:
        rows = conn.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s", (database,)).fetchall()
    return [row[0] for row in rows]


def _transactions(database: str) -> int:
    with psycopg.connect(PG, autocommit=True) as conn:
        row = conn.execute(
            "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = %s", (database,)
        ).fetchone()
    return int(row[0]) if row else 0


def _no_autovacuum(database: str) -> None:
    """Autovacuum off on the bench database's tables: after the bursts it vacuums and analyzes
    DBOS's tables for tens of seconds, transactions `pg_stat_database` counts as the database's
    though no worker sent them (measured: 13 runs in a 20 s idle window, +0.7 /s a worker)."""
    with psycopg.connect(f"{PG.rpartition('/')[0]}/{database}", autocommit=True) as conn:
        tables = conn.execute(
            "SELECT format('%I.%I', schemaname, relname) FROM pg_stat_user_tables"
        ).fetchall()
        for (table,) in tables:
            conn.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = false)")


async def _turn_cpu(where: Cluster, database: str | None) -> tuple[float, float]:
    """CPU ms per turn over ``COST_N`` chats (10 at a time): (this cluster's processes, its
    database backends)."""
    pids = where.servers + where.workers
    backends = _backends(database) if database else []
    before = {pid: _cpu_sec(pid) for pid in pids + backends}
    async with _client() as client:
        for start in range(0, COST_N, 10):
            questions = [f"cost {i} {uuid.uuid4().hex[:6]}" for i in range(start, start + 10)]
            await asyncio.gather(
                *(_chat(client, where.urls[i % len(where.urls)], q) for i, q in enumerate(questions))
            )
    if database:
        backends = sorted(set(backends) | set(_backends(database)))
    spent = {pid: _cpu_sec(pid) - before.get(pid, 0.0) for pid in pids + backends}
    own = sum(spent[pid] for pid in pids) * 1000 / COST_N
    return own, sum(spent[pid] for pid in backends) * 1000 / COST_N


async def _worker_costs(database: str, memory: Cluster, workers: Cluster) -> None:
    """The worker path's cost, same run: CPU per turn, an idle worker's PostgreSQL transactions
    per second (``pg_stat_database.xact_commit`` deltas; only the workers use this database while
    idle), and the connections left open after the bursts above."""
    print(
        f"cost per turn, {COST_N} chats 10 at a time (CPU of the cluster's own processes; Redis not counted):"
    )
    try:
        reference, _ = await _turn_cpu(memory, None)
        own, backends = await _turn_cpu(workers, database)
    except (httpx.HTTPError, SystemExit) as exc:
        print(f"  failed: {type(exc).__name__}: {exc}")
    else:
        _row("  one server in-process, memory store (reference)", f"{reference:.1f} ms")
        _row("  worker path: servers + workers", f"{own:.1f} ms", f"{own / reference:.2f}x reference")
        total = own + backends
        _row("  worker path: + PostgreSQL backends", f"{total:.1f} ms", f"{total / reference:.2f}x reference")
    _no_autovacuum(database)
    # PostgreSQL flushes a backend's statistics lazily (PGSTAT_MAX_INTERVAL, 60 s, under
    # contention): 5 s after the bursts the counter still took in their transactions (25 /s a
    # worker in pg_stat_database while the statement log showed 4.8).
    await asyncio.sleep(65)
    first, window = _transactions(database), 10.0
    await asyncio.sleep(window)
    idle = (_transactions(database) - first - 1) / window / len(workers.workers)
    _row("  an idle worker: PostgreSQL transactions per second", f"{idle:.1f} /s")
    _row("  PostgreSQL connections open after the bursts (all processes)", f"{len(_backends(database))}")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 200))

"""Chats through real `agentstream cluster` processes: throughput with 1 vs 2 workers, and the
first-token latency each hop adds, all measured in the same run.

    .venv/bin/python bench/bench_cluster.py [K]     # K concurrent chats per throughput row (200)

Needs scripts/postgres.sh's and scripts/redis.sh's servers (or AGENTSTREAM_TEST_PG_DSN /
AGENTSTREAM_TEST_REDIS_URL); a fresh database is made and dropped. The app is
`bench/_cluster_app.py` (a model that answers at once, 30 deltas); smoothing is off everywhere.

* Throughput: K chats POSTed at once, round robin over two servers; turns/s = K / wall time until
  the last answer finished (every answer's text checked). Reference: the two servers answering
  the chats themselves (Redis store, no workers).
* First token: one chat at a time (`LATENCY_N`), request sent → first ``text-delta`` line read by
  the client (httpx, loopback), p50 / p90. Reference: one server answering in-process with the
  in-memory store; then the Redis store in-process; then turns on a worker (DBOS queue on
  PostgreSQL, the worker writes to Redis, the server follows). Workers poll the queue every 0.1 s
  (`agentstream worker --poll-sec`'s default), which is most of that row's figure.

Figures are printed, never asserted.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
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


@contextmanager
def cluster(database: str, servers: int, workers: int, *extra: str) -> Iterator[list[str]]:
    """``agentstream cluster`` with the bench app on free ports; yields the servers' URLs."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        args = ["--port", "0", "--servers", str(servers), "--workers", str(workers), "--logs", tmp]
        args += ["--app", "bench._cluster_app:mastra", "--database-url", database, "--redis-url", REDIS]
        args += ["--serve-arg=--no-smooth", "--worker-arg=--no-smooth", *extra]
        with out.open("wb") as sink:
            proc = subprocess.Popen(
                [sys.executable, "-m", "agentstream", "cluster", *args], cwd=ROOT, stdout=sink, stderr=sink
            )
        try:
            while "Ctrl-C stops" not in out.read_text():
                if proc.poll() is not None:
                    raise SystemExit(f"agentstream cluster failed:\n{out.read_text()}")
                time.sleep(0.1)
            yield _SERVER.findall(out.read_text())
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(60)


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


async def first_token(url: str) -> tuple[float, float]:
    """p50 and p90 (ms) of request → first text-delta, one chat at a time."""
    async with _client() as client:
        await _chat(client, url, "warm-up")
        times = []
        for i in range(LATENCY_N):
            question = f"latency {i} {uuid.uuid4().hex[:6]}"
            first, text = await _chat(client, url, question)
            if text != answer(question):
                raise SystemExit(f"wrong answer to {question!r}")
            times.append(first * 1000)
    cuts = statistics.quantiles(times, n=10)
    return statistics.median(times), cuts[8]


def _row(name: str, value: str, ratio: str = "") -> None:
    print(f"{name:<52} {value:>22}  {ratio}", flush=True)


async def main(k: int) -> None:
    name = f"bench_cluster_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(PG, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    database = f"{PG.rpartition('/')[0]}/{name}"
    try:
        print(f"first token, {LATENCY_N} chats one at a time (p50 / p90):")
        with cluster(database, 1, 0, "--serve-arg=--stream-store=memory") as urls:
            ref50, ref90 = await first_token(urls[0])
        _row("  in-process, memory store (reference)", f"{ref50:.1f} / {ref90:.1f} ms")
        with cluster(database, 2, 0) as urls:
            p50, p90 = await first_token(urls[0])
            _row("  in-process, Redis store", f"{p50:.1f} / {p90:.1f} ms", f"+{p50 - ref50:.1f} ms p50")
            ref_rate = await throughput(urls, k)
        rates = {}
        for workers in (1, 2):
            with cluster(database, 2, workers) as urls:
                if workers == 1:
                    p50, p90 = await first_token(urls[0])
                    _row(
                        "  worker (DBOS queue) + Redis store",
                        f"{p50:.1f} / {p90:.1f} ms",
                        f"+{p50 - ref50:.1f} ms p50",
                    )
                rates[workers] = await throughput(urls, k)
        print(f"throughput, {k} chats at once over 2 servers:")
        _row("  2 servers answering in-process (reference)", f"{ref_rate:.1f} turns/s")
        for workers, rate in rates.items():
            _row(
                f"  2 servers, {workers} worker{'s' if workers > 1 else ''}",
                f"{rate:.1f} turns/s",
                f"{rate / ref_rate:.2f}x reference",
            )
        _row("  2 workers vs 1", f"{rates[2] / rates[1]:.2f}x", "")
    finally:
        with psycopg.connect(PG, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 200))

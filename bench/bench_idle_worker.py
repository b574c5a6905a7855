"""What an idle `agentstream worker` sends PostgreSQL, transaction by transaction, by origin.

    PYTHONPATH=src .venv/bin/python bench/bench_idle_worker.py [--compare OTHER/src] [--cluster]
        [--chats N] [--warm 70] [--window 20] [--worker-arg=--lease-sec=600] [--raw]

A PostgreSQL of its own (`tests/faults/_postgres.OwnPostgres`, here with ``log_statement = all``
so each statement's parameters say which DBOS queue a poll is for); one worker per source tree
(``--app bench._cluster_app:mastra``, Redis stream store, as `bench_cluster` starts them), or with
``--cluster`` bench_cluster's worker cluster (2 servers, 2 workers), each tree on a database of its
own, all started together. ``--chats N`` sends each cluster a burst first. After ``--warm``
seconds (past DBOS's scheduler's first minute of 1-second polls) the statement log is read over
``--window`` seconds: per worker, transactions a second (``pg_stat_database``, which also counts
autovacuum and late-flushed statistics, and the log's own count), then transactions and statements
a second by origin (a transaction is named by its most specific statement). Figures are printed,
never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import calendar
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from tests.faults._postgres import OwnPostgres  # noqa: E402

REDIS = os.environ.get("AGENTSTREAM_TEST_REDIS_URL", "redis://127.0.0.1:56379/0")

# (origin, pattern over the statement and its logged parameters); the first match names it.
ORIGINS: list[tuple[str, str]] = [
    ("ours: lease renew / sweep", r"agentstream_durable_executors"),
    ("ours: inbox claim", r"agentstream_durable_inbox"),
    ("ours: DBOS queue agentstream-chat", r"'agentstream-chat'"),
    ("ours: DBOS queue agentstream-workflows", r"'agentstream-workflows'"),
    ("ours: DBOS queue agentstream-tasks", r"'agentstream-tasks'|'agentstream\.tasks'"),
    ("DBOS: internal queue", r"'_dbos_internal_queue'"),
    ("DBOS: queue list", r"SELECT dbos\.queues\.queue_id"),
    ("DBOS: background jobs (advisory lock)", r"advisory"),
    ("DBOS: background jobs (delayed workflows)", r"\$1 = 'ENQUEUED', \$2 = 'DELAYED'"),
    ("DBOS: background jobs (timeouts)", r"\$1 = 'CANCELLED'"),
    ("DBOS: scheduler", r"workflow_schedules"),
    ("DBOS: other", r"dbos\."),
]
_LINE = re.compile(r"^\S+ \S+ \S+ \[(\d+)\] (\S*) (\S*): (LOG|DETAIL):\s+(.*)$")


def _rank(origin: str) -> int:
    """The more specific origin names a transaction (a dequeue starts with DBOS's version check)."""
    names = [name for name, _ in ORIGINS]
    return names.index(origin) if origin in names else len(names)


def _origin(text: str) -> str:
    for name, pattern in ORIGINS:
        if re.search(pattern, text, re.IGNORECASE):
            return name
    return "other / transaction control"


def _events(log: Path) -> dict[str, list[tuple[float, str, str]]]:
    """Each backend's statements, in order: (when, database, statement and its parameters)."""
    events: dict[str, list[tuple[float, str, str]]] = {}
    for line in log.read_text(errors="replace").splitlines():
        m = _LINE.match(line)
        if m is None:
            continue
        pid, app, db, kind, text = m.groups()
        if app.startswith("agentstream_server"):
            db = f"{db} (servers)"
        if kind == "LOG" and text.startswith(("statement:", "execute ")):
            stamp = line[:23]
            when = calendar.timegm(time.strptime(stamp[:19], "%Y-%m-%d %H:%M:%S")) + float("0" + stamp[19:23])
            events.setdefault(pid, []).append((when, db, text))
        elif kind == "DETAIL" and events.get(pid):
            when, db0, statement = events[pid][-1]
            events[pid][-1] = (when, db0, f"{statement} || {text}")
    return events


_CONTROL = re.compile(r"^statement: (BEGIN|COMMIT|ROLLBACK|;|DEALLOCATE ALL)", re.IGNORECASE)


def _transactions(
    log: Path, start: float, end: float, raw: Counter[str] | None = None
) -> dict[str, tuple[Counter[str], Counter[str]]]:
    """Per database, in [start, end): (transactions by origin, statements by origin). A
    transaction's origin is its first statement's; a statement outside BEGIN … COMMIT is one."""
    out: dict[str, tuple[Counter[str], Counter[str]]] = {}
    for events in _events(log).values():
        open_at: float | None = None
        origin: str | None = None
        for when, db, text in events:
            txs, statements = out.setdefault(db, (Counter(), Counter()))
            inside = start <= when < end
            control = _CONTROL.match(text)
            if control and control.group(1).upper() == "BEGIN":
                open_at, origin = when, None
                continue
            if control and control.group(1).upper() in ("COMMIT", "ROLLBACK"):
                if open_at is not None and start <= open_at < end:
                    txs[origin or "other / transaction control"] += 1
                open_at = None
                continue
            if control:
                continue
            name = _origin(text)
            if inside:
                statements[name] += 1
                if raw is not None:
                    raw[f"{db} {text[:230]}"] += 1
            if open_at is None:
                if inside:
                    txs[name] += 1
            elif origin is None or _rank(name) < _rank(origin):
                origin = name
    return out


def _worker(
    pg: OwnPostgres, src: str, database: str, tmp: Path, extra: list[str], cluster: bool
) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": f"{src}:{ROOT}"}
    if cluster:  # bench_cluster's worker cluster: 2 servers, 2 workers
        command = [sys.executable, "-m", "agentstream", "cluster", "--port", "0", "--servers", "2"]
        command += ["--workers", "2", "--logs", str(tmp / database), "--app", "bench._cluster_app:mastra"]
        command += ["--database-url", pg.dsn(database), "--redis-url", REDIS, "--serve-arg=--no-smooth"]
        command += ["--worker-arg=--no-smooth", *(f"--worker-arg={arg}" for arg in extra)]
    else:
        command = [sys.executable, "-m", "agentstream", "worker", "--app", "bench._cluster_app:mastra"]
        command += ["--stream-store", REDIS, "--database-url", pg.dsn(database), "--no-smooth", *extra]
    log = (tmp / f"{database}.log").open("wb")
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)


async def _traffic(out: Path, chats: int) -> None:
    """``chats`` chats at once over the cluster's servers (the bench's burst), before idling."""
    import bench_cluster

    deadline = time.monotonic() + 90
    while len(urls := bench_cluster._SERVER.findall(out.read_text(errors="replace"))) < 2:
        if time.monotonic() > deadline:
            raise SystemExit(f"the cluster did not start: {out}")
        time.sleep(0.2)
    print(f"{await bench_cluster.throughput(urls, chats):.1f} turns/s over {urls}")


def _xacts(pg: OwnPostgres) -> dict[str, int]:
    with psycopg.connect(pg.dsn(), autocommit=True) as conn:
        rows = conn.execute("SELECT datname, xact_commit + xact_rollback FROM pg_stat_database").fetchall()
    return {str(name): int(count) for name, count in rows if name}


def _autovacuums(pg: OwnPostgres, database: str) -> int:
    """Autovacuum and autoanalyze runs on ``database``'s tables so far (each is a transaction
    `pg_stat_database` counts, though no client sent it)."""
    with psycopg.connect(pg.dsn(database), autocommit=True) as conn:
        row = conn.execute(
            "SELECT coalesce(sum(autovacuum_count + autoanalyze_count), 0) FROM pg_stat_all_tables"
        ).fetchone()
    return int(row[0]) if row else 0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--compare", action="append", default=[], metavar="SRC", help="another tree's src")
    parser.add_argument("--warm", type=float, default=70.0)
    parser.add_argument("--window", type=float, default=20.0)
    parser.add_argument("--worker-arg", action="append", default=[])
    parser.add_argument(
        "--chats", type=int, default=0, help="with --cluster: this many chats first (a burst)"
    )
    parser.add_argument("--cluster", action="store_true", help="2 servers and 2 workers, as bench_cluster")
    parser.add_argument("--raw", action="store_true", help="print each statement (and parameters) counted")
    args = parser.parse_args()
    trees = {"this tree": str(ROOT / "src"), **{f"compare {i}": s for i, s in enumerate(args.compare)}}
    pg = OwnPostgres()
    with (pg.data / "postgresql.conf").open("a") as conf:
        conf.write("log_statement = 'all'\nlog_line_prefix = '%m [%p] %a %d: '\nlog_timezone = 'UTC'\n")
    pg.start()
    tmp = Path(tempfile.mkdtemp(prefix="bench-idle-"))
    procs: list[subprocess.Popen[bytes]] = []
    try:
        databases = {}
        for i, (name, src) in enumerate(trees.items()):
            databases[name] = f"idle_{i}"
            pg.create_database(databases[name])
            procs.append(_worker(pg, src, databases[name], tmp, args.worker_arg, args.cluster))
        if args.chats:
            time.sleep(5)
            for database in databases.values():
                asyncio.run(_traffic(tmp / f"{database}.log", args.chats))
        time.sleep(args.warm)
        for proc in procs:
            if proc.poll() is not None:
                raise SystemExit(f"a worker exited; logs in {tmp}")
        vacuums = {name: _autovacuums(pg, database) for name, database in databases.items()}
        before, start = _xacts(pg), time.time()
        time.sleep(args.window)
        after, end = _xacts(pg), time.time()
        vacuums = {name: _autovacuums(pg, database) - vacuums[name] for name, database in databases.items()}
        raw: Counter[str] = Counter()
        found = _transactions(pg.log, start, end, raw if args.raw else None)
        for text, count in raw.most_common(40):
            print(f"{count:5d} {text}")
        print(
            f"an idle {'cluster (2 servers, 2 workers)' if args.cluster else 'worker'} "
            f"({' '.join(args.worker_arg) or 'default options'}), {args.window:.0f} s "
            f"from {args.warm:.0f} s after start{f' and a burst of {args.chats} chats' if args.chats else ''}:"
        )
        workers = 2 if args.cluster else 1
        seconds = (end - start) * workers
        for name, database in databases.items():
            tx = (after[database] - before[database]) / seconds
            print(
                f"  {name} ({trees[name]}): {tx:.2f} transactions/s per worker in pg_stat_database "
                f"({vacuums[name]} autovacuum / autoanalyze runs in the window)"
            )
            for key in sorted(k for k in found if k.split(" ")[0] == database):
                txs, statements = found[key]
                print(
                    f"    {key}: {sum(txs.values()) / seconds:.2f} transactions/s, "
                    f"{sum(statements.values()) / seconds:.2f} statements/s per worker"
                )
                for origin in sorted(set(txs) | set(statements), key=lambda o: (-txs[o], o)):
                    print(
                        f"      {origin:<44} {txs[origin] / seconds:6.2f} tx/s {statements[origin] / seconds:6.2f} st/s"
                    )
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
        if args.raw:
            shutil.copy(pg.log, tmp / "postgres.log")
            print(f"logs kept in {tmp}")
        pg.remove()


if __name__ == "__main__":
    main()

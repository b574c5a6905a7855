"""The inbox: chat turns and workflow legs a server hands to whichever worker is free, the workers
woken by PostgreSQL ``LISTEN/NOTIFY`` instead of polling a queue.

A server inserts the job (its stream id the key) and notifies in one statement; that is the
durable hand-over. A worker listening on the channel claims jobs in a transaction
(``DELETE … FOR UPDATE SKIP LOCKED … RETURNING``: each job to one worker) and, still inside it,
starts the job's DBOS workflow with the stream id as its workflow id, then commits. A worker that
dies before committing leaves the job in the inbox for the next; one that dies after has a
PENDING workflow that the lease takeover recovers, and a second claim of the same job attaches to
that workflow instead of running it again (DBOS starts one workflow per id). A job waiting while
no worker listens is claimed by the first worker to start listening (docs/decisions/durable.md,
"Waking workers").
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import psycopg
import sqlalchemy as sa

__all__ = ["CHANNEL", "PUT", "TABLE", "TAKE_BACK", "InboxListener", "create_inbox", "put_job", "take_back"]

_log = logging.getLogger("agentstream.durable")

TABLE = "agentstream_durable_inbox"
CHANNEL = "agentstream_durable_inbox"
_BATCH = 64
"""At most this many jobs per claim (a kind with no limit on this worker)."""
_BACKLOG_SEC = 0.2
"""How soon a worker that was full looks again for the jobs it left in the inbox."""
_IDLE_SEC = 30.0
"""A listening worker looks at the inbox at least this often even without a notification (a
belt to the braces: a notification is lost only when nobody listens, and listening starts with a claim)."""

_DDL = f"""
CREATE TABLE IF NOT EXISTS {TABLE} (
    stream_id text PRIMARY KEY,
    kind text NOT NULL,
    job jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS {TABLE}_kind_created ON {TABLE} (kind, created_at)
"""
_PUT = sa.text(
    f"WITH put AS (INSERT INTO {TABLE} (stream_id, kind, job) VALUES (:stream_id, :kind, CAST(:job AS jsonb)) "
    "ON CONFLICT (stream_id) DO NOTHING RETURNING kind) "
    f"SELECT pg_notify('{CHANNEL}', kind) FROM put"
)
_TAKE_BACK = sa.text(f"DELETE FROM {TABLE} WHERE stream_id = :stream_id")
PUT = (
    f"WITH put AS (INSERT INTO {TABLE} (stream_id, kind, job) VALUES (%s, %s, CAST(%s AS jsonb)) "
    "ON CONFLICT (stream_id) DO NOTHING RETURNING kind) "
    f"SELECT pg_notify('{CHANNEL}', kind) FROM put"
)
TAKE_BACK = f"DELETE FROM {TABLE} WHERE stream_id = %s"
_CLAIM = (
    f"DELETE FROM {TABLE} WHERE stream_id IN (SELECT stream_id FROM {TABLE} WHERE kind = %s "
    "ORDER BY created_at LIMIT %s FOR UPDATE SKIP LOCKED) RETURNING stream_id, job"
)


_WAITING = f"SELECT DISTINCT kind FROM {TABLE}"
_LOCK = f"SELECT pg_advisory_xact_lock(hashtext('{TABLE}'))"


def create_inbox(engine: sa.Engine) -> None:
    """Create the inbox table once, however many processes start together (an advisory lock)."""
    with engine.begin() as conn:
        for statement in (_LOCK, *_DDL.split(";")):
            conn.execute(sa.text(statement))


def _create_inbox(conn: psycopg.Connection[Any]) -> None:
    """`create_inbox` on the listener's own connection (a worker may start before any server)."""
    with conn.transaction():
        for statement in (_LOCK, *_DDL.split(";")):
            conn.execute(statement.encode())


def put_job(engine: sa.Engine, kind: str, job: Mapping[str, Any]) -> None:
    """Hand ``job`` over (one round trip, autocommit); a job already waiting is not added twice."""
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(_PUT, {"stream_id": job["stream_id"], "kind": kind, "job": json.dumps(job)})


def take_back(engine: sa.Engine, stream_id: str) -> bool:
    """Remove a job no worker has claimed yet; whether it was still waiting (then it never runs).
    A job being claimed right now is waited for, and then is no longer there."""
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        return bool(conn.execute(_TAKE_BACK, {"stream_id": stream_id}).rowcount)


Starter = Callable[[str, dict[str, Any]], None]
"""Starts (or enqueues) the DBOS workflow of one claimed job: ``(stream_id, job)``."""


class InboxListener:
    """A worker's thread: listens on the channel and claims what this worker has room for.

    ``starters`` maps each job kind this worker runs to its `Starter`; ``limits`` the kinds' most
    jobs at once on this worker (``None``: no limit of its own). `finished` gives a slot back."""

    def __init__(
        self, database_url: str, starters: Mapping[str, Starter], limits: Mapping[str, int | None]
    ) -> None:
        self._url = database_url
        self._starters = dict(starters)
        self._limits = dict(limits)
        self._running = dict.fromkeys(self._starters, 0)
        self._claimed: set[str] = set()
        self._lock = threading.Lock()
        self._backlog = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.connected = threading.Event()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="agentstream-durable-inbox", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def finished(self, kind: str, stream_id: str) -> None:
        """A job this listener claimed ended here (completed, failed or cancelled)."""
        with self._lock:
            if stream_id in self._claimed:
                self._claimed.discard(stream_id)
                self._running[kind] -= 1

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                with psycopg.connect(self._url, autocommit=True, connect_timeout=5) as conn:
                    _create_inbox(conn)
                    conn.execute(f"LISTEN {CHANNEL}")
                    self.connected.set()
                    self._listen(conn)
            except Exception as exc:  # the database went away (or a start failed): listen again
                self.connected.clear()
                _log.warning("the inbox listener stopped (%s: %s); listening again", type(exc).__name__, exc)
                self._stop.wait(1.0)

    def _listen(self, conn: psycopg.Connection[Any]) -> None:
        self._claim_all(conn, self._starters)  # what waited while this worker was not listening
        last = time.monotonic()
        while not self._stop.is_set():
            # At most 1 s per wait, so a stop is seen; a wait costs no round trip.
            timeout = _BACKLOG_SEC if self._backlog else 1.0
            kinds = {n.payload for n in conn.notifies(timeout=timeout, stop_after=1)}
            if kinds:  # a burst's other notifications: one claim for all
                kinds.update(n.payload for n in conn.notifies(timeout=0))
            if self._backlog:
                kinds = set(self._starters)
            elif time.monotonic() - last >= _IDLE_SEC:
                # One statement says which kinds wait; an idle inbox costs no claim per kind.
                kinds.update(row[0] for row in conn.execute(_WAITING).fetchall())
                last = time.monotonic()
            if kinds:
                self._claim_all(conn, kinds)
                last = time.monotonic()

    def _take_slots(self, kind: str) -> int:
        """Reserve this worker's room for ``kind`` (given back by `_release` or `finished`)."""
        limit = self._limits.get(kind)
        if limit is None:
            return _BATCH
        with self._lock:
            room = max(0, min(_BATCH, limit - self._running[kind]))
            self._running[kind] += room
            return room

    def _release(self, kind: str, count: int) -> None:
        if self._limits.get(kind) is not None and count:
            with self._lock:
                self._running[kind] -= count

    def _claim_all(self, conn: psycopg.Connection[Any], kinds: Iterable[str]) -> None:
        """Claim jobs of ``kinds`` (each notification names its kind; others are not asked for)."""
        kinds = set(kinds)
        backlog = self._backlog and not kinds >= self._starters.keys()  # kinds not asked keep theirs
        for kind in kinds:
            starter = self._starters.get(kind)
            if starter is None:  # a kind this worker does not run
                continue
            room = self._take_slots(kind)
            if room == 0:
                backlog = True
                continue
            started: list[str] = []
            try:
                # A pipeline: BEGIN goes with the claim, one round trip less before the start.
                with conn.pipeline(), conn.transaction():
                    rows = conn.execute(_CLAIM, (kind, room)).fetchall()
                    for stream_id, job in rows:
                        self._mark(kind, stream_id)
                        started.append(stream_id)
                        starter(stream_id, job)
            except BaseException:
                # The claim rolled back: the jobs are in the inbox again. One whose start failed is
                # not running here; the ones started before it are, and end through `finished`.
                if started:
                    with self._lock:
                        self._claimed.discard(started.pop())
                raise
            finally:
                self._release(kind, room - len(started))
            backlog = backlog or len(rows) == room
        self._backlog = backlog

    def _mark(self, kind: str, stream_id: str) -> None:
        if self._limits.get(kind) is not None:
            with self._lock:
                self._claimed.add(stream_id)

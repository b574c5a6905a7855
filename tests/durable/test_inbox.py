"""The inbox: jobs handed over by a server are claimed by listening workers, each by exactly one;
a job taken back before any claim never starts; a full worker leaves jobs to the others."""

from __future__ import annotations

import threading
import time
from typing import Any

import sqlalchemy as sa

from agentstream.durable._inbox import InboxListener, create_inbox, put_job, take_back
from agentstream.durable._protocol import to_sqlalchemy_url


def _wait(check: Any, what: str) -> None:
    deadline = time.monotonic() + 60  # the limit only turns a hang into a failure
    while not check():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.02)


def test_each_job_is_started_by_exactly_one_of_two_listening_workers(durable_db: str) -> None:
    engine = sa.create_engine(to_sqlalchemy_url(durable_db))
    create_inbox(engine)
    started: list[tuple[str, str]] = []
    lock = threading.Lock()

    def starter(name: str) -> Any:
        def start(stream_id: str, job: dict[str, Any]) -> None:
            assert job["stream_id"] == stream_id
            with lock:
                started.append((name, stream_id))

        return start

    ids = [f"s{i}" for i in range(40)]
    for stream_id in ids:
        put_job(engine, "chat", {"stream_id": stream_id, "n": 1})
    put_job(engine, "chat", {"stream_id": "s0", "n": 1})  # handed over twice while waiting: one job
    listeners = [InboxListener(durable_db, {"chat": starter(n)}, {"chat": None}) for n in ("a", "b")]
    for listener in listeners:
        listener.start()
    try:
        _wait(lambda: len(started) >= len(ids), "every job started")
        more = [f"t{i}" for i in range(20)]  # and jobs handed over while both listen
        for stream_id in more:
            put_job(engine, "chat", {"stream_id": stream_id, "n": 2})
        _wait(lambda: len(started) >= len(ids) + len(more), "every later job started")
        time.sleep(0.3)  # a second start of any job would show by now
        assert sorted(stream_id for _, stream_id in started) == sorted(ids + more)
    finally:
        for listener in listeners:
            listener.stop()
        engine.dispose()


def test_a_job_taken_back_before_a_claim_never_starts(durable_db: str) -> None:
    engine = sa.create_engine(to_sqlalchemy_url(durable_db))
    create_inbox(engine)
    put_job(engine, "chat", {"stream_id": "gone"})
    assert take_back(engine, "gone") is True
    assert take_back(engine, "gone") is False  # nothing waits any more
    started: list[str] = []
    listener = InboxListener(
        durable_db, {"chat": lambda stream_id, job: started.append(stream_id)}, {"chat": None}
    )
    listener.start()
    try:
        _wait(listener.connected.is_set, "listening")
        put_job(engine, "chat", {"stream_id": "kept"})
        _wait(lambda: started == ["kept"], "the other job started")
    finally:
        listener.stop()
        engine.dispose()


def test_a_full_worker_claims_again_once_a_slot_is_free(durable_db: str) -> None:
    engine = sa.create_engine(to_sqlalchemy_url(durable_db))
    create_inbox(engine)
    started: list[str] = []
    listener = InboxListener(
        durable_db, {"chat": lambda stream_id, job: started.append(stream_id)}, {"chat": 1}
    )
    listener.start()
    try:
        _wait(listener.connected.is_set, "listening")
        put_job(engine, "chat", {"stream_id": "one"})
        put_job(engine, "chat", {"stream_id": "two"})
        _wait(lambda: started == ["one"], "the first job started")
        time.sleep(0.5)
        assert started == ["one"]  # one slot: the second job waits in the inbox
        listener.finished("chat", "one")
        _wait(lambda: started == ["one", "two"], "the second job started after the first ended")
    finally:
        listener.stop()
        engine.dispose()


async def test_a_server_hands_over_on_a_connection_that_went_stale_once_and_once_only(
    durable_db: str,
) -> None:
    import psycopg

    from agentstream.durable._inbox_writer import InboxWriter

    create_inbox(sa.create_engine(to_sqlalchemy_url(durable_db)))
    writer = InboxWriter(durable_db, pool_size=2, timeout_sec=3)
    await writer.put("chat", {"stream_id": "s1"})
    # As after a PostgreSQL restart: the idle connection's backend is gone.
    with psycopg.connect(durable_db, autocommit=True) as admin:
        ended = admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE application_name = 'agentstream_server' AND datname = current_database()"
        ).fetchall()
        assert ended == [(True,)]
        await writer.put("chat", {"stream_id": "s2"})
        assert await writer.take_back("s1") and not await writer.take_back("s1")
        rows = admin.execute("SELECT stream_id FROM agentstream_durable_inbox ORDER BY stream_id").fetchall()
    assert rows == [("s2",)]
    writer.close()

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

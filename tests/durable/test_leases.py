"""`ExecutorLeases`: workers starting together on a new database all get the lease table."""

from __future__ import annotations

import threading

import psycopg

from agentstream.durable._leases import ExecutorLeases


def _start_together(url: str, count: int) -> list[BaseException]:
    barrier = threading.Barrier(count)
    errors: list[BaseException] = []

    def start(n: int) -> None:
        barrier.wait()
        try:
            ExecutorLeases(url, f"worker-{n}", 30, recover=lambda _: 0).stop(release=False)
        except BaseException as exc:  # collected: the assertion names it
            errors.append(exc)

    threads = [threading.Thread(target=start, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


def test_workers_starting_at_once_all_create_or_find_the_lease_table(durable_db: str) -> None:
    # Without the advisory lock, PostgreSQL refused one of six concurrent creations in 21 of 30 rounds.
    for _ in range(5):
        assert _start_together(durable_db, 6) == []
        with psycopg.connect(durable_db, autocommit=True) as conn:
            assert conn.execute("SELECT count(*) FROM agentstream_durable_executors").fetchone() == (0,)
            conn.execute("DROP TABLE agentstream_durable_executors")


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _expire(url: str, executor_id: str) -> None:
    """The worker went silent: its lease ended a minute ago on the database's clock."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "UPDATE agentstream_durable_executors SET expires_at = extract(epoch FROM now()) - 60 "
            "WHERE executor_id = %s",
            (executor_id,),
        )


def test_a_sweeper_takes_over_an_expired_worker_only_after_a_lease_of_its_own_health(durable_db: str) -> None:
    recovered: list[str] = []
    clock = _Clock()
    silent = ExecutorLeases(durable_db, "silent", 5, recover=lambda _: 0)
    sweeper = ExecutorLeases(
        durable_db, "sweeper", 5, recover=lambda dead: recovered.append(dead) or 1, monotonic=clock
    )
    try:
        silent.renew()
        _expire(durable_db, "silent")
        assert sweeper.beat()
        assert sweeper.sweep() == []  # renewed just now: it does not know yet whether it is the one cut off
        clock.now += 4.9
        assert sweeper.sweep() == []
        # Its own database errors start the count again (an outage expires everyone's lease at once).
        sweeper.renew = lambda: (_ for _ in ()).throw(OSError("database away"))  # type: ignore[method-assign]
        assert not sweeper.beat()
        del sweeper.renew
        clock.now += 10
        assert sweeper.sweep() == []
        assert sweeper.beat()
        clock.now += 5
        assert sweeper.sweep() == ["silent"] and recovered == ["silent"]
        assert sweeper.sweep() == []  # taken over once: the row is gone
        with psycopg.connect(durable_db) as conn:
            rows = conn.execute("SELECT executor_id FROM agentstream_durable_executors").fetchall()
        assert rows == [("sweeper",)]
    finally:
        silent.stop(release=False)
        sweeper.stop(release=False)

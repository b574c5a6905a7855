"""Versioned migrations: recorded in `schema_migrations`, applied once, idempotent on restart."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from agentstream.storage import BackgroundTask, BaseStore, Migration, SQLiteStore
from agentstream.storage._sql import POSTGRES_MIGRATIONS, SQLITE_MIGRATIONS

from .conftest import StoreFactory


@pytest.fixture(params=["sqlite-file", "postgres"])
def backend(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


LATEST = list(range(1, len(SQLITE_MIGRATIONS) + 1))
NEXT = len(SQLITE_MIGRATIONS) + 1


def with_next(store: BaseStore, backend: str) -> None:
    if backend == "postgres":
        extra = Migration(NEXT, "add note column", ("ALTER TABLE {s}.mastra_threads ADD COLUMN note TEXT",))
        store._migrations = (*POSTGRES_MIGRATIONS, extra)  # type: ignore[attr-defined]
    else:
        extra = Migration(NEXT, "add note column", ("ALTER TABLE mastra_threads ADD COLUMN note TEXT",))
        store._migrations = (*SQLITE_MIGRATIONS, extra)  # type: ignore[attr-defined]


def test_dialects_have_the_same_versions() -> None:
    assert [(m.version, m.name) for m in SQLITE_MIGRATIONS] == [
        (m.version, m.name) for m in POSTGRES_MIGRATIONS
    ]
    assert [m.version for m in SQLITE_MIGRATIONS] == list(range(1, len(SQLITE_MIGRATIONS) + 1))


async def test_restart_is_idempotent_and_keeps_data(backend: str, store_factory: StoreFactory) -> None:
    first = store_factory()
    await first.create_task(
        BackgroundTask(id="t1", tool_name="x", tool_call_id="c", agent_id="a", run_id="r")
    )
    assert await first.applied_migrations() == LATEST  # type: ignore[attr-defined]
    await first.close()
    second = store_factory()
    await second.init()
    assert await second.applied_migrations() == LATEST  # type: ignore[attr-defined]
    assert (await second.get_task("t1")).id == "t1"


async def test_new_version_applied_once(backend: str, store_factory: StoreFactory) -> None:
    first = store_factory()
    await first.init()
    await first.close()
    upgraded = store_factory()
    with_next(upgraded, backend)
    await upgraded.init()
    assert await upgraded.applied_migrations() == [*LATEST, NEXT]  # type: ignore[attr-defined]
    await upgraded.close()
    again = store_factory()
    with_next(again, backend)
    await again.init()  # would fail ("duplicate column") if the new version ran twice
    assert await again.applied_migrations() == [*LATEST, NEXT]  # type: ignore[attr-defined]


async def test_concurrent_first_start(backend: str, store_factory: StoreFactory) -> None:
    stores = [store_factory() for _ in range(4)]
    await asyncio.gather(*(s.init() for s in stores))
    for s in stores:
        assert await s.applied_migrations() == LATEST  # type: ignore[attr-defined]


def test_versions_must_be_consecutive(tmp_path: Path) -> None:
    from agentstream.storage.sqlite import apply_migrations

    conn = sqlite3.connect(tmp_path / "x.db", isolation_level=None)
    with pytest.raises(ValueError, match=r"1\.\.n in order"):
        apply_migrations(conn, [Migration(2, "skip one", ())])
    conn.close()


def test_failed_migration_rolls_back(tmp_path: Path) -> None:
    from agentstream.storage.sqlite import apply_migrations

    conn = sqlite3.connect(tmp_path / "x.db", isolation_level=None)
    bad = Migration(NEXT, "broken", ("CREATE TABLE half_done (x INT)", "THIS IS NOT SQL"))
    with pytest.raises(sqlite3.OperationalError):
        apply_migrations(conn, [*SQLITE_MIGRATIONS, bad])
    assert [r[0] for r in conn.execute("SELECT version FROM schema_migrations")] == LATEST
    assert conn.execute("SELECT name FROM sqlite_master WHERE name = 'half_done'").fetchone() is None
    assert apply_migrations(conn, SQLITE_MIGRATIONS) == []
    conn.close()


async def test_sqlite_file_uses_wal(tmp_path: Path) -> None:
    async with SQLiteStore(tmp_path / "w.db") as s:
        assert s.path.endswith("w.db")
    conn = sqlite3.connect(tmp_path / "w.db")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()


async def test_v1_database_with_running_task_upgrades(tmp_path: Path) -> None:
    """A database written before leases existed: its tasks get no owner and no lease (reclaimable)."""
    from agentstream.storage.sqlite import apply_migrations

    conn = sqlite3.connect(tmp_path / "old.db", isolation_level=None)
    apply_migrations(conn, SQLITE_MIGRATIONS[:1])
    conn.execute(
        "INSERT INTO mastra_background_tasks (id, status, tool_name, tool_call_id, agent_id, run_id, args, "
        "retry_count, max_retries, timeout_ms, created_at) VALUES "
        "('old', 'running', 'x', 'c', 'a', 'r', '{}', 0, 0, 1000, '2026-01-01T00:00:00.000000Z')"
    )
    conn.close()
    async with SQLiteStore(tmp_path / "old.db") as store:
        assert await store.applied_migrations() == LATEST
        old = await store.get_task("old")
    assert (old.status, old.owner_id, old.lease_expires_at, old.abandoned_thread) == (
        "running",
        None,
        None,
        False,
    )


async def test_sqlite_init_does_not_take_the_write_lock_when_migrated(tmp_path: Path) -> None:
    """Opening a migrated file while another process holds the write lock succeeds at once."""
    path = tmp_path / "busy.db"
    async with SQLiteStore(path):
        pass
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # the write lock, held for the whole test
    try:
        # busy_timeout 0: any attempt to take the write lock would fail at once with StorageBusyError.
        async with SQLiteStore(path, busy_timeout_ms=0) as store:
            assert await store.applied_migrations() == LATEST
            assert (await store.list_tasks()).total == 0  # reads still work under a writer (WAL)
    finally:
        holder.execute("ROLLBACK")
        holder.close()


async def test_sqlite_migration_under_a_held_lock_names_the_problem(tmp_path: Path) -> None:
    from agentstream.storage import StorageBusyError

    path = tmp_path / "fresh.db"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("PRAGMA journal_mode = WAL")
    holder.execute("BEGIN IMMEDIATE")
    try:
        store = SQLiteStore(path, busy_timeout_ms=0)
        with pytest.raises(StorageBusyError) as caught:
            await store.init()
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    message = str(caught.value)
    assert message.startswith(f"SQLiteStore.init on SQLite database {str(path)!r}: still locked")
    assert "busy_timeout_ms=0" in message and "raise SQLiteStore(path, busy_timeout_ms=...)" in message
    assert isinstance(caught.value.__cause__, sqlite3.OperationalError)

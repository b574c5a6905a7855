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


def with_v2(store: BaseStore, backend: str) -> None:
    if backend == "postgres":
        v2 = Migration(2, "add note column", ("ALTER TABLE {s}.mastra_threads ADD COLUMN note TEXT",))
        store._migrations = (*POSTGRES_MIGRATIONS, v2)  # type: ignore[attr-defined]
    else:
        v2 = Migration(2, "add note column", ("ALTER TABLE mastra_threads ADD COLUMN note TEXT",))
        store._migrations = (*SQLITE_MIGRATIONS, v2)  # type: ignore[attr-defined]


def test_dialects_have_the_same_versions() -> None:
    assert [(m.version, m.name) for m in SQLITE_MIGRATIONS] == [(m.version, m.name) for m in POSTGRES_MIGRATIONS]
    assert [m.version for m in SQLITE_MIGRATIONS] == list(range(1, len(SQLITE_MIGRATIONS) + 1))


async def test_restart_is_idempotent_and_keeps_data(backend: str, store_factory: StoreFactory) -> None:
    first = store_factory()
    await first.create_task(BackgroundTask(id="t1", tool_name="x", tool_call_id="c", agent_id="a", run_id="r"))
    assert await first.applied_migrations() == [1]  # type: ignore[attr-defined]
    await first.close()
    second = store_factory()
    await second.init()
    assert await second.applied_migrations() == [1]  # type: ignore[attr-defined]
    assert (await second.get_task("t1")).id == "t1"


async def test_new_version_applied_once(backend: str, store_factory: StoreFactory) -> None:
    first = store_factory()
    await first.init()
    await first.close()
    upgraded = store_factory()
    with_v2(upgraded, backend)
    await upgraded.init()
    assert await upgraded.applied_migrations() == [1, 2]  # type: ignore[attr-defined]
    await upgraded.close()
    again = store_factory()
    with_v2(again, backend)
    await again.init()  # would fail ("duplicate column") if v2 ran twice
    assert await again.applied_migrations() == [1, 2]  # type: ignore[attr-defined]


async def test_concurrent_first_start(backend: str, store_factory: StoreFactory) -> None:
    stores = [store_factory() for _ in range(4)]
    await asyncio.gather(*(s.init() for s in stores))
    for s in stores:
        assert await s.applied_migrations() == [1]  # type: ignore[attr-defined]


def test_versions_must_be_consecutive(tmp_path: Path) -> None:
    from agentstream.storage.sqlite import apply_migrations

    conn = sqlite3.connect(tmp_path / "x.db", isolation_level=None)
    with pytest.raises(ValueError, match=r"1\.\.n in order"):
        apply_migrations(conn, [Migration(2, "skip one", ())])
    conn.close()


def test_failed_migration_rolls_back(tmp_path: Path) -> None:
    from agentstream.storage.sqlite import apply_migrations

    conn = sqlite3.connect(tmp_path / "x.db", isolation_level=None)
    bad = Migration(2, "broken", ("CREATE TABLE half_done (x INT)", "THIS IS NOT SQL"))
    with pytest.raises(sqlite3.OperationalError):
        apply_migrations(conn, [*SQLITE_MIGRATIONS, bad])
    assert [r[0] for r in conn.execute("SELECT version FROM schema_migrations")] == [1]
    assert conn.execute("SELECT name FROM sqlite_master WHERE name = 'half_done'").fetchone() is None
    assert apply_migrations(conn, SQLITE_MIGRATIONS) == []
    conn.close()


async def test_sqlite_file_uses_wal(tmp_path: Path) -> None:
    async with SQLiteStore(tmp_path / "w.db") as s:
        assert s.path.endswith("w.db")
    conn = sqlite3.connect(tmp_path / "w.db")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()

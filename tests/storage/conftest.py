"""Backends for the storage contract suite: memory, SQLite (`:memory:` and a file), PostgreSQL.

PostgreSQL: `AGENTSTREAM_TEST_PG_DSN` (default: the cluster `scripts/postgres.sh` starts). If it is
unreachable the run ends with one line saying so (`tests/_services.py`); nothing is skipped.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from agentstream.storage import BaseStore, InMemoryStore, SQLiteStore

BACKENDS = [
    "memory",
    "sqlite-memory",
    "sqlite-file",
    pytest.param("postgres", marks=pytest.mark.services("postgres")),
]


StoreFactory = Callable[[], BaseStore]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


@pytest.fixture
async def store_factory(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> AsyncIterator[StoreFactory]:
    """Makes stores that share one underlying database (where the backend allows it)."""
    made: list[BaseStore] = []
    schema = f"t_{uuid.uuid4().hex[:16]}"
    shared_memory = InMemoryStore()
    dsn = request.getfixturevalue("pg_dsn") if backend == "postgres" else ""

    def make() -> BaseStore:
        store: BaseStore
        if backend == "memory":
            store = shared_memory
        elif backend == "sqlite-memory":
            store = SQLiteStore(":memory:")
        elif backend == "sqlite-file":
            store = SQLiteStore(tmp_path / "store.db")
        else:
            from agentstream.storage import PostgresStore

            store = PostgresStore(dsn, schema=schema, max_size=20)
        made.append(store)
        return store

    yield make
    for store in made:
        await store.close()
    if backend == "postgres":
        import psycopg

        async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
            await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture
async def store(store_factory: StoreFactory) -> AsyncIterator[BaseStore]:
    s = store_factory()
    await s.init()
    yield s

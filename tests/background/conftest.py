"""Backends for the background-task tests: in-memory, SQLite (file) and PostgreSQL.

PostgreSQL: `AGENTSTREAM_TEST_PG_DSN` (default: the cluster `scripts/postgres.sh` starts on 54329). If it
is unreachable the run ends with one line saying so (`tests/_services.py`); nothing is skipped.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agentstream.storage import BaseStore, InMemoryStore, SQLiteStore
from tests.conftest import pg_dsn

# Defined once in tests/conftest.py; re-exported for test modules that import it from here.
__all__ = ["pg_dsn"]

BACKENDS = ["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.services("postgres"))]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


async def _drop_schema(dsn: str, schema: str) -> None:
    import psycopg

    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture
async def store(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[BaseStore]:
    schema = f"bg_{uuid.uuid4().hex[:16]}"
    dsn = request.getfixturevalue("pg_dsn") if backend == "postgres" else ""
    s: BaseStore
    if backend == "memory":
        s = InMemoryStore()
    elif backend == "sqlite":
        s = SQLiteStore(tmp_path / "bg.db")
    else:
        from agentstream.storage import PostgresStore

        s = PostgresStore(dsn, schema=schema, max_size=20)
    await s.init()
    yield s
    await s.close()
    if backend == "postgres":
        await _drop_schema(dsn, schema)

"""Backends for the storage contract suite: memory, SQLite (`:memory:` and a file), PostgreSQL.

PostgreSQL: `AGENTSTREAM_TEST_PG_DSN` (default: the cluster `scripts/postgres.sh` starts). If it is
unreachable the postgres cases are skipped (reason printed at the end of the run), unless `CI` is set,
in which case they fail.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from agentstream.storage import BaseStore, InMemoryStore, SQLiteStore

DEFAULT_PG_DSN = "postgresql://postgres@127.0.0.1:54329/postgres"
BACKENDS = ["memory", "sqlite-memory", "sqlite-file", "postgres"]

_pg_skip_reason: list[str] = []


@pytest.fixture(scope="session")
def pg_dsn() -> str:
    dsn = os.environ.get("AGENTSTREAM_TEST_PG_DSN", DEFAULT_PG_DSN)
    try:
        import psycopg
    except ImportError as exc:  # pragma: no cover
        reason = f"psycopg not installed ({exc}); pip install -e '.[dev]'"
    else:
        try:
            with psycopg.connect(dsn, connect_timeout=3) as conn:
                conn.execute("SELECT 1")
            return dsn
        except Exception as exc:
            reason = f"PostgreSQL unreachable at {dsn} ({type(exc).__name__}: {' '.join(str(exc).split())[:160]}); run scripts/postgres.sh"
    if os.environ.get("CI"):
        pytest.fail(f"CI is set but {reason}", pytrace=False)
    _pg_skip_reason.append(reason)
    pytest.skip(reason)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _pg_skip_reason:
        terminalreporter.write_line(
            f"storage: postgres contract tests SKIPPED: {_pg_skip_reason[0]}", yellow=True
        )


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

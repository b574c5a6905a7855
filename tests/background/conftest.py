"""Backends for the background-task tests: in-memory, SQLite (file) and PostgreSQL.

PostgreSQL: `AGENTSTREAM_TEST_PG_DSN` (default: the cluster `scripts/postgres.sh` starts on 54329). If it
is unreachable those cases are skipped with the reason printed at the end, unless `CI` is set (then they fail).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agentstream.storage import BaseStore, InMemoryStore, SQLiteStore

DEFAULT_PG_DSN = "postgresql://postgres@127.0.0.1:54329/postgres"
BACKENDS = ["memory", "sqlite", "postgres"]

_pg_skip_reason: list[str] = []


def pg_reachable() -> tuple[str | None, str]:
    dsn = os.environ.get("AGENTSTREAM_TEST_PG_DSN", DEFAULT_PG_DSN)
    try:
        import psycopg
    except ImportError as exc:  # pragma: no cover
        return None, f"psycopg not installed ({exc})"
    try:
        with psycopg.connect(dsn, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
        return dsn, ""
    except Exception as exc:
        detail = " ".join(str(exc).split())[:160]
        return (
            None,
            f"PostgreSQL unreachable at {dsn} ({type(exc).__name__}: {detail}); run scripts/postgres.sh",
        )


@pytest.fixture(scope="session")
def pg_dsn() -> str:
    dsn, reason = pg_reachable()
    if dsn is not None:
        return dsn
    if os.environ.get("CI"):
        pytest.fail(f"CI is set but {reason}", pytrace=False)
    _pg_skip_reason.append(reason)
    pytest.skip(reason)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _pg_skip_reason:
        terminalreporter.write_line(f"background: postgres cases SKIPPED: {_pg_skip_reason[0]}", yellow=True)


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

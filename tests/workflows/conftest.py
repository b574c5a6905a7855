"""Stores for the workflow snapshot tests: in-memory, SQLite (file) and PostgreSQL (a run without it ends
with one line saying so, ``tests/_services.py``), as in the background-task tests."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agentstream.storage import BaseStore, InMemoryStore, SQLiteStore
from tests.background.conftest import _drop_schema

BACKENDS = ["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.services("postgres"))]


@pytest.fixture(params=BACKENDS)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[BaseStore]:
    backend: str = request.param
    schema = f"wf_{uuid.uuid4().hex[:16]}"
    dsn: Any = request.getfixturevalue("pg_dsn") if backend == "postgres" else ""
    s: BaseStore
    if backend == "memory":
        s = InMemoryStore()
    elif backend == "sqlite":
        s = SQLiteStore(tmp_path / "wf.db")
    else:
        from agentstream.storage import PostgresStore

        s = PostgresStore(dsn, schema=schema, max_size=10)
    await s.init()
    yield s
    await s.close()
    if backend == "postgres":
        await _drop_schema(dsn, schema)

"""PostgreSQL for the memory tests: the shared cluster, and a pgvector database."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

DEFAULT_PG_DSN = "postgresql://postgres@127.0.0.1:54329/postgres"


def pg_dsn() -> str:
    dsn = os.environ.get("AGENTSTREAM_TEST_PG_DSN", DEFAULT_PG_DSN)
    try:
        import psycopg

        with psycopg.connect(dsn, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except Exception:
        pytest.fail(
            f"PostgreSQL unreachable at {dsn}", pytrace=False
        )  # a missing service fails the run, never skips
    return dsn


@pytest.fixture(scope="session")
def pgvector_dsn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A PostgreSQL with pgvector: ``AGENTSTREAM_TEST_PGVECTOR_DSN``, else a private server from
    the ``pgserver`` wheel (PostgreSQL 16 + pgvector, PyPI), started for this session and stopped
    after it. The shared test cluster (Debian PostgreSQL 15) has no pgvector package in the
    configured Debian repositories (docs/decisions/issue-27-vector.md)."""
    dsn = os.environ.get("AGENTSTREAM_TEST_PGVECTOR_DSN")
    if dsn:
        yield dsn
        return
    try:
        import pgserver
    except ImportError:
        pytest.fail(
            "no PostgreSQL with pgvector (set AGENTSTREAM_TEST_PGVECTOR_DSN or pip install pgserver)",
            pytrace=False,
        )  # a missing service fails the run, never skips
    server = pgserver.get_server(str(tmp_path_factory.mktemp("pgvector")), cleanup_mode="stop")
    yield server.get_uri()
    server.cleanup()

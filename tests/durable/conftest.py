"""Real worker processes on a fresh PostgreSQL database per test (scripts/postgres.sh's server).

DBOS and PostgreSQL are required (``tests/conftest.py`` checks them before collecting this directory)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PYTHONPATH = os.pathsep.join(p for p in (str(ROOT / "src"), str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
"""What the servers and workers these tests start import from: the repository, then the caller's
path (a worktree's ``src/`` given there must win over an installed copy, in every process alike)."""


@pytest.fixture
def durable_db(pg_dsn: str) -> Iterator[str]:
    """A database of its own: the DBOS system tables, the queue and the worker leases of one test."""
    import psycopg

    name = f"durable_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    base, _, _ = pg_dsn.rpartition("/")
    yield f"{base}/{name}"
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


class Workers:
    """Starts `agentstream worker` processes; each is stopped (SIGTERM, then SIGKILL) at teardown."""

    def __init__(self, url: str, tmp: Path) -> None:
        self.url = url
        self.tmp = tmp
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self, *extra: str, tools: str | None = "tests.durable._app:tools") -> subprocess.Popen[bytes]:
        """An `agentstream worker` running ``tools`` (``None``: only what ``extra`` names)."""
        log = open(self.tmp / f"worker-{len(self.procs)}.log", "wb")
        env = {**os.environ, "PYTHONPATH": PYTHONPATH, "AGENTSTREAM_TEST_GATE": str(self.tmp / "gate")}
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "agentstream",
                "worker",
                *([tools] if tools else []),
                "--database-url",
                self.url,
                "--poll-sec",
                "0.05",
                *extra,
            ],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        self.procs.append(proc)
        return proc

    def stop_all(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.fixture
def workers(durable_db: str, tmp_path: Path) -> Iterator[Workers]:
    pool = Workers(durable_db, tmp_path)
    yield pool
    pool.stop_all()


def read_lines(path: Path) -> list[str]:
    return path.read_text().split("\n")[:-1] if path.exists() else []


WaitFor = Callable[[Callable[[], bool]], None]

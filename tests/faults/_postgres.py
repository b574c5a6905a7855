"""A PostgreSQL server of the fault tests' own, which they stop and start (never the shared one).

Made from the binaries ``scripts/postgres.sh`` uses, on a free port, in a temporary directory the
cluster's OS user owns (``postgres`` when the tests run as root: initdb refuses root). Loads
``pg_stat_statements`` so a test or a measurement can count the statements a process sends.

``synchronous_commit`` stays on (PostgreSQL's default): `stop` is a crash (``-m immediate``), and with
it off a crash loses the transactions committed in the last few hundred milliseconds (the WAL
writer had not written them yet). The fault tests once lost that way a worker's claim of a turn
and its DBOS workflow row, so the other worker claimed the turn again and ran its tool a second
time: a database that forgets acknowledged commits, not a takeover. ``fsync`` can stay off: the
operating system, which keeps what PostgreSQL wrote, does not crash here.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import psycopg

__all__ = ["OwnPostgres", "bindir"]


def bindir() -> Path | None:
    """The newest ``/usr/lib/postgresql/<version>/bin`` with initdb, pg_ctl and postgres."""
    candidates = sorted(
        Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: int(p.parent.name), reverse=True
    )
    for path in candidates:
        if all((path / name).exists() for name in ("initdb", "pg_ctl", "postgres")):
            return path
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class OwnPostgres:
    """``start()`` / ``stop()`` / ``dsn(database)`` for one throwaway cluster; ``remove()`` at the end."""

    def __init__(self) -> None:
        found = bindir()
        if found is None:
            raise RuntimeError(
                "no PostgreSQL server binaries under /usr/lib/postgresql/*/bin; run scripts/postgres.sh"
            )
        self.bin = found
        self.root = os.geteuid() == 0
        self.base = Path(tempfile.mkdtemp(prefix="agentstream-faults-pg-", dir="/tmp"))
        self.data = self.base / "data"
        self.log = self.base / "server.log"
        self.port = _free_port()
        if self.root:
            shutil.chown(self.base, "postgres", "postgres")
        self._owner(
            [
                str(self.bin / "initdb"),
                "-D",
                str(self.data),
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-locale",
            ]
        )
        with (self.data / "postgresql.conf").open("a") as conf:
            conf.write(
                f"port = {self.port}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '{self.base}'\n"
                "fsync = off\nsynchronous_commit = on\nfull_page_writes = off\nmax_connections = 200\n"
                "shared_preload_libraries = 'pg_stat_statements'\npg_stat_statements.track = all\n"
            )

    def _owner(self, command: list[str]) -> None:
        if self.root:
            command = ["runuser", "-u", "postgres", "--", *command]
        subprocess.run(command, check=True, capture_output=True, cwd="/")

    def dsn(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def start(self) -> None:
        self._owner(
            [str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60", "start"]
        )
        with psycopg.connect(self.dsn(), autocommit=True, connect_timeout=5) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")

    def stop(self) -> None:
        """Stop at once (``-m immediate``: what a crash or a pulled cable looks like to clients)."""
        self._owner([str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop"])

    def running(self) -> bool:
        try:
            with psycopg.connect(self.dsn(), connect_timeout=2) as conn:
                conn.execute("SELECT 1")
        except psycopg.OperationalError:
            return False
        return True

    def create_database(self, name: str) -> str:
        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.dsn(name)

    def remove(self) -> None:
        if self.running():
            self.stop()
        shutil.rmtree(self.base, ignore_errors=True)


def wait_until(check: object, timeout: float, what: str) -> None:
    """Poll ``check()`` until true; an `AssertionError` naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.05)

"""A Redis server of the test's own (never the shared one on 56379): started on a free port in the
test's directory, stopped and started again on the same port, with or without an append-only file."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import redis


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RedisServer:
    """``redis-server`` on 127.0.0.1:``port`` keeping its files in ``directory``.

    ``aof``: with an append-only file (``appendfsync always``), a restart keeps every stream; without,
    nothing is kept (no RDB either): a restart loses them all."""

    def __init__(self, directory: Path, *, aof: bool) -> None:
        self.directory = directory
        self.aof = aof
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[bytes] | None = None
        self.log = directory / f"redis-{self.port}.log"

    def start(self) -> None:
        persistence = (
            ["--appendonly", "yes", "--appendfsync", "always"] if self.aof else ["--appendonly", "no"]
        )
        command = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", ""]
        command += ["--dir", str(self.directory), "--logfile", str(self.log), *persistence]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while True:
            try:
                with redis.Redis(port=self.port, socket_connect_timeout=1) as client:
                    client.ping()
                return
            except redis.ConnectionError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"redis-server did not start: {self.log.read_text()}") from None
                time.sleep(0.05)

    def stop(self) -> None:
        """Stop it as an operator's restart does (SIGTERM: the append-only file is flushed)."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(30)
        self.process = None

    def restart(self, down_s: float = 1.0) -> None:
        """Stop, stay down ``down_s`` seconds (a Redis blip), start again on the same port."""
        self.stop()
        time.sleep(down_s)
        self.start()

    def client_connections(self, name: str) -> int:
        """How many of the server's clients carry the connection name ``name``."""
        with redis.Redis(port=self.port) as client:
            return sum(1 for entry in client.client_list() if entry.get("name") == name)


@contextlib.contextmanager
def redis_server(directory: Path, *, aof: bool) -> Iterator[RedisServer]:
    server = RedisServer(directory, aof=aof)
    server.start()
    try:
        yield server
    finally:
        server.stop()

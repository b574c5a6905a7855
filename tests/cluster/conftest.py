"""`agentstream cluster` as the tests start it: a real process tree on loopback, a fresh database."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.durable.conftest import durable_db

__all__ = ["Cluster", "durable_db", "start_cluster"]

ROOT = Path(__file__).resolve().parents[2]
_SERVER = re.compile(r"agentstream cluster: (server \d+) (http://\S+)/ \(pid (\d+)\)")
_WORKER = re.compile(r"agentstream cluster: (worker \d+) \(pid (\d+)\)")


@dataclass
class Cluster:
    """A running ``agentstream cluster``: its process, its servers' URLs and its children's pids."""

    process: subprocess.Popen[bytes]
    output: Path
    logs: Path
    servers: dict[str, tuple[str, int]] = field(default_factory=dict)  # name -> (url, pid)
    workers: dict[str, int] = field(default_factory=dict)  # name -> pid

    def said(self) -> str:
        return self.output.read_text(errors="replace")

    def stop(self, signum: int = signal.SIGTERM) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signum)
        try:
            return self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait()


def cluster_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "agentstream", "cluster", *args]


def start_cluster(tmp: Path, *args: str, env: dict[str, str] | None = None) -> Cluster:
    """Start ``agentstream cluster ARGS --port 0`` and wait until it prints its servers and workers."""
    output, logs = tmp / "cluster.out", tmp / "logs"
    with output.open("wb") as out:
        process = subprocess.Popen(
            cluster_command("--port", "0", "--logs", str(logs), *args),
            cwd=ROOT,
            env={**os.environ, **(env or {})},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    cluster = Cluster(process, output, logs)
    deadline = time.monotonic() + 180  # not an assertion: a hang guard for a broken start
    while "Ctrl-C stops" not in cluster.said():
        if process.poll() is not None or time.monotonic() > deadline:
            cluster.stop()
            raise AssertionError(f"agentstream cluster did not start:\n{cluster.said()}")
        time.sleep(0.1)
    for name, url, pid in _SERVER.findall(cluster.said()):
        cluster.servers[name] = (url, int(pid))
    for name, pid in _WORKER.findall(cluster.said()):
        cluster.workers[name] = int(pid)
    return cluster


@pytest.fixture
def cluster_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    """What the load-test app's processes share: the gate file and the turn log."""
    yield {"AGENTSTREAM_TEST_GATE": str(tmp_path / "gate"), "AGENTSTREAM_TEST_TURNS": str(tmp_path / "turns")}

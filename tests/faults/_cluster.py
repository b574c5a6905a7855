"""Real `agentstream serve --durable-db` and `agentstream worker --app` processes for the fault tests,
on a database of the tests' own PostgreSQL (`OwnPostgres`) and the shared Redis."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]
APP = "tests.faults._pg_app:mastra"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Processes:
    """Servers and workers of one test; all stopped at teardown (SIGTERM, then SIGKILL)."""

    def __init__(self, database_url: str, redis_url: str, tmp: Path) -> None:
        self.url = database_url
        self.redis = redis_url
        self.tmp = tmp
        self.procs: list[subprocess.Popen[bytes]] = []
        self.env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}:{ROOT}", "AGENTSTREAM_TEST_DIR": str(tmp)}

    def _spawn(self, name: str, command: list[str]) -> subprocess.Popen[bytes]:
        log = (self.tmp / f"{name}-{len(self.procs)}.log").open("wb")
        proc = subprocess.Popen(command, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT)
        self.procs.append(proc)
        return proc

    def worker(self, *extra: str) -> subprocess.Popen[bytes]:
        """A worker, returned once DBOS has launched: a fault injected while it still connects would
        kill its launch, not test its survival."""
        command = [sys.executable, "-m", "agentstream", "worker", "--app", APP, "--stream-store", self.redis]
        proc = self._spawn("worker", [*command, "--database-url", self.url, "--no-smooth", *extra])
        log = self.tmp / f"worker-{len(self.procs) - 1}.log"
        deadline = time.monotonic() + 90
        while "DBOS launched" not in (log.read_text(errors="replace") if log.exists() else ""):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"agentstream worker did not launch:\n{self.logs()}")
            time.sleep(0.1)
        return proc

    def server(self) -> str:
        port = _free_port()
        command = [sys.executable, "-m", "agentstream", "serve", "--app", APP, "--port", str(port)]
        proc = self._spawn(
            "server", [*command, "--durable-db", self.url, "--stream-store", self.redis, "--no-smooth"]
        )
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(f"{base}/api/agents", timeout=5)
                return base
            except httpx.TransportError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"agentstream serve did not start:\n{self.logs()}") from None
                time.sleep(0.1)

    def logs(self) -> str:
        return "\n".join(
            f"--- {p.name}\n{p.read_text(errors='replace')[-4000:]}" for p in sorted(self.tmp.glob("*.log"))
        )

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


def chat_body(chat_id: str, text: str = "Pay the bill.") -> dict[str, Any]:
    return {
        "id": chat_id,
        "trigger": "submit-message",
        "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": text}]}],
    }


def payloads(lines: Iterator[str]) -> list[str]:
    """The SSE ``data:`` payloads up to and including ``[DONE]``."""
    out: list[str] = []
    for line in lines:
        if line.startswith("data: "):
            out.append(line.removeprefix("data: "))
            if line == "data: [DONE]":
                break
    return out


def chunk_types(found: list[str]) -> list[str]:
    return [json.loads(p)["type"] for p in found if p != "[DONE]"]


def text_of(found: list[str]) -> str:
    chunks = [json.loads(p) for p in found if p != "[DONE]"]
    return "".join(c["delta"] for c in chunks if c["type"] == "text-delta")


def lines(path: Path) -> list[str]:
    return path.read_text().split("\n")[:-1] if path.exists() else []

"""Real `agentstream serve` processes on the fault tests' own Redis, and the client's view of an answer."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from ._redis import free_port

ROOT = Path(__file__).resolve().parents[2]
APP = "tests.faults._app:mastra"
ASGI_CRASH = "Exception in ASGI application"


@dataclass
class Server:
    base: str
    process: subprocess.Popen[bytes]
    log: Path

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


def fault_env(tmp: Path) -> dict[str, str]:
    """The environment of the app's processes: the gate and counter files of this test."""
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)]),
        "AGENTSTREAM_TEST_GATE": str(tmp / "gate"),
        "AGENTSTREAM_TEST_COUNTER": str(tmp / "counter"),
    }


def wait_until_serving(process: subprocess.Popen[bytes], base: str, log: Path) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            httpx.get(f"{base}/api/agents", timeout=5)
            return
        except httpx.TransportError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"agentstream serve did not start: {log.read_text()}") from None
            time.sleep(0.1)


@contextlib.contextmanager
def servers(tmp: Path, redis_url: str, count: int = 1, *extra: str) -> Iterator[list[Server]]:
    """``count`` `agentstream serve` processes (answering in-process unless ``extra`` says otherwise)."""
    started: list[Server] = []
    try:
        for _ in range(count):
            port = free_port()
            command = [sys.executable, "-m", "agentstream", "serve", "--app", APP, "--port", str(port)]
            command += ["--no-smooth", "--stream-store", redis_url, *extra]
            log = tmp / f"server-{port}.log"
            process = subprocess.Popen(
                command, cwd=ROOT, env=fault_env(tmp), stdout=log.open("wb"), stderr=subprocess.STDOUT
            )
            started.append(Server(f"http://127.0.0.1:{port}", process, log))
        for server in started:
            wait_until_serving(server.process, server.base, server.log)
        yield started
    finally:
        for server in started:
            if server.process.poll() is None:
                server.process.terminate()
        for server in started:
            server.process.wait(30)


def body(chat_id: str | None = None) -> dict[str, Any]:
    return {
        "id": chat_id or f"chat-{uuid.uuid4().hex}",
        "trigger": "submit-message",
        "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Count once."}]}],
    }


def client() -> httpx.Client:
    """A client whose every read gives up after 60 s: a stream that never ends fails the test."""
    return httpx.Client(timeout=httpx.Timeout(60, connect=10))


STREAM_WITHIN_S = 90.0
"""How long any one answer may take to end in these tests: far above what it needs (a few seconds
after the store returns), but an answer that never ends (heartbeats keep the read alive) fails."""


def payloads(lines: Iterator[str], within_s: float = STREAM_WITHIN_S) -> Iterator[str]:
    """The SSE ``data:`` payloads, up to and including ``[DONE]``; fails if the stream has not
    ended within ``within_s`` (checked at each line: the server's heartbeats come every 15 s)."""
    deadline = time.monotonic() + within_s
    for line in lines:
        assert time.monotonic() < deadline, f"the stream did not end within {within_s} s"
        if line.startswith("data: "):
            yield line.removeprefix("data: ")
            if line == "data: [DONE]":
                return


def chunks_of(received: list[str]) -> list[dict[str, Any]]:
    """The UI chunks of a complete SSE answer (it must end with ``[DONE]``)."""
    assert received and received[-1] == "[DONE]", f"the stream did not end: {received[-3:]}"
    return [json.loads(p) for p in received[:-1]]


def text_of(chunks: list[dict[str, Any]]) -> str:
    return "".join(c["delta"] for c in chunks if c["type"] == "text-delta")


def deltas(received: list[str]) -> list[str]:
    return [d for p in received if p != "[DONE]" and (d := json.loads(p).get("delta"))]


def counted(tmp: Path) -> int:
    """How many times the app's counting tool ran (in every process)."""
    path = tmp / "counter"
    return len(path.read_text().splitlines()) if path.exists() else 0


@contextlib.contextmanager
def worker(tmp: Path, redis_url: str, database_url: str) -> Iterator[subprocess.Popen[bytes]]:
    """An `agentstream worker` answering the app's chat turns from ``database_url``'s queue."""
    command = [sys.executable, "-m", "agentstream", "worker", "--app", APP, "--stream-store", redis_url]
    command += ["--database-url", database_url, "--poll-sec", "0.05", "--lease-sec", "1.5", "--no-smooth"]
    log = tmp / f"worker-{len(list(tmp.glob('worker-*.log')))}.log"
    process = subprocess.Popen(
        command, cwd=ROOT, env=fault_env(tmp), stdout=log.open("wb"), stderr=subprocess.STDOUT
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(30)

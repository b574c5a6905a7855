"""Two ``agentstream serve`` processes sharing Redis: a client that started a chat on the first
resumes it on the second, which serves the rest of the answer the first one is still producing."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ._gated_app import FIRST, REST

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def server(store: str, gate: Path) -> Iterator[str]:
    port = _free_port()
    command = [sys.executable, "-m", "agentstream", "serve", "--app", "tests.resumable._gated_app:mastra"]
    command += ["--port", str(port), "--no-smooth", "--stream-store", store]
    env = {**os.environ, "AGENTSTREAM_TEST_GATE": str(gate)}
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"{base}/api/agents", timeout=5)
                break
            except httpx.TransportError:
                if process.poll() is not None or time.monotonic() > deadline:
                    err = process.stderr.read() if process.stderr else b""
                    raise AssertionError(f"agentstream serve did not start: {err!r}") from None
                time.sleep(0.1)
        yield base
    finally:
        process.terminate()
        process.wait(30)


def test_a_second_server_process_finishes_the_stream_the_first_started(
    redis_url: str, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    chat_id = f"chat-{uuid.uuid4().hex}"
    body = {
        "id": chat_id,
        "trigger": "submit-message",
        "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Weather?"}]}],
    }
    with (
        server(redis_url, gate) as first,
        server(redis_url, gate) as second,
        httpx.Client(timeout=60) as client,
    ):
        with client.stream("POST", f"{first}/api/chat", json=body) as answer:
            for line in answer.iter_lines():
                if FIRST[0] in line:
                    break  # the page reloads mid-answer
        assert client.get(f"{second}/api/chat/other-{chat_id}/stream").status_code == 204
        deltas: list[str] = []
        frames: list[str] = []
        with client.stream("GET", f"{second}/api/chat/{chat_id}/stream") as resumed:
            assert resumed.status_code == 200
            for line in resumed.iter_lines():
                if not line.startswith("data: "):
                    continue
                frames.append(line.removeprefix("data: "))
                if frames[-1] == "[DONE]":
                    break
                chunk = json.loads(frames[-1])
                if chunk["type"] == "text-delta":
                    deltas.append(chunk["delta"])
                    if deltas == FIRST:
                        gate.touch()  # the replay reached the live end: now the first server goes on
        assert "".join(deltas) == "".join(FIRST + REST)
        assert json.loads(frames[0])["type"] == "start"
        assert json.loads(frames[-2])["type"] == "finish" and frames[-1] == "[DONE]"
        # Finished: neither process has anything to resume.
        assert client.get(f"{first}/api/chat/{chat_id}/stream").status_code == 204
        assert client.get(f"{second}/api/chat/{chat_id}/stream").status_code == 204


def test_serve_refuses_an_unreachable_redis(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "agentstream", "serve", "--stream-store", "redis://127.0.0.1:1/0"]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert result.stderr.startswith(
        "agentstream serve: --stream-store: cannot reach Redis at redis://127.0.0.1:1/0"
    )
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("value", ["postgres://x", "redis:/nope"])
def test_serve_refuses_a_bad_stream_store(value: str) -> None:
    command = [sys.executable, "-m", "agentstream", "serve", "--stream-store", value]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "--stream-store: expected 'memory' or a redis://host:port/db URL" in result.stderr
    assert "Traceback" not in result.stderr and result.stderr.count("\n") == 1

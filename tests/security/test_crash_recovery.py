"""A server killed with SIGKILL mid-answer or mid-run, then started again on the same SQLite file
(issue 22 items 6 and 7). Real subprocesses (`_crash_app`); each test is bounded (about 10 s)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from agentstream.storage import SQLiteStore

ROOT = Path(__file__).resolve().parents[2]
STORY = "Tell me a long story about rainbows"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def _server(db: Path) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    port = _free_port()
    command = [sys.executable, "-m", "tests.security._crash_app", str(db), str(port)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, process.stderr.read() if process.stderr else b""
            try:
                httpx.get(base + "/", timeout=1)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "the server did not start"
                time.sleep(0.05)
        yield process, base
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(10)


def _kill(process: subprocess.Popen[bytes]) -> None:
    os.kill(process.pid, signal.SIGKILL)
    assert process.wait(10) == -signal.SIGKILL


def _frames(response: httpx.Response, count: int) -> list[dict[str, Any]]:
    frames: list[dict[str, Any]] = []
    for line in response.iter_lines():
        if line.startswith("data: ") and line != "data: [DONE]":
            frames.append(json.loads(line.removeprefix("data: ")))
            if len(frames) == count:
                return frames
    raise AssertionError(f"the answer ended after {len(frames)} frames")


async def _thread(db: Path) -> list[tuple[str, str]]:
    store = SQLiteStore(db)
    await store.init()
    try:
        page = await store.list_messages("t1")
        return [(m.role, str(m.content.get("content", ""))) for m in page.messages]
    finally:
        await store.close()


async def test_a_user_message_answered_then_killed_mid_answer_is_kept(tmp_path: Path) -> None:
    db = tmp_path / "crash.db"
    user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": STORY}]}
    body = {"id": "chat-1", "messages": [user], "trigger": "submit-message"}
    with _server(db) as (process, base):
        with httpx.stream("POST", base + "/api/chat", json=body, timeout=10) as response:
            assert response.status_code == 200
            frames = _frames(response, 7)  # mid-answer: the demo model streams its story for seconds
            assert "text-delta" in [f["type"] for f in frames]
            _kill(process)
    # The input of an answered request survives; the partial answer is not stored (Mastra's
    # default: persistPartialOnAbort is off, and a killed process writes nothing more).
    assert await _thread(db) == [("user", STORY)]
    # The next process serves the same thread with that message in its history.
    with _server(db) as (_process, base):
        # (with a memory thread a client sends only its new message: the history is the server's)
        follow_up = {"id": "u2", "role": "user", "parts": [{"type": "text", "text": "Weather in Berlin?"}]}
        again = {"id": "chat-1", "messages": [follow_up], "trigger": "submit-message"}
        answer = httpx.post(base + "/api/chat", json=again, timeout=30)
        assert answer.status_code == 200 and answer.text.rstrip().endswith("data: [DONE]")
    roles = [role for role, _text in await _thread(db)]
    assert roles == ["user", "user", "assistant"]


async def _snapshot(db: Path, workflow_id: str, run_id: str) -> Any:
    store = SQLiteStore(db)
    await store.init()
    try:
        return await store.load_workflow_snapshot(workflow_id, run_id)
    finally:
        await store.close()


async def test_a_workflow_run_killed_with_its_process_is_reported_lost_by_the_next_one(
    tmp_path: Path,
) -> None:
    db = tmp_path / "crash.db"
    with _server(db) as (process, base):
        body = {"runId": "run-1", "inputData": {}}
        with httpx.stream("POST", base + "/api/workflows/slow/stream", json=body, timeout=10) as response:
            assert response.status_code == 200
            _frames(response, 2)  # the run has started its minute-long step
            deadline = time.monotonic() + 20  # (its running snapshot may land just after the frames)
            while (await _snapshot(db, "slow", "run-1")) is None:
                assert time.monotonic() < deadline, "the running run was never stored"
                await asyncio.sleep(0.05)
            _kill(process)
    stored = await _snapshot(db, "slow", "run-1")
    assert stored["status"] == "running" and stored["owner"]["id"].split(":")[1] == str(process.pid)
    with _server(db) as (_process, base):
        cancel = httpx.post(base + "/api/workflows/slow/runs/run-1/cancel", timeout=10)
        resume = httpx.post(
            base + "/api/workflows/slow/stream", json={"runId": "run-1", "resumeData": {}}, timeout=10
        )
    # Neither says "running in another server process": the run is lost, and each answer says so.
    assert cancel.status_code == 409, cancel.text
    message = cancel.json()["error"]["message"]
    assert "stopped while running" in message and f"pid {process.pid}" in message and "is gone" in message
    assert "another server process" not in message
    assert resume.status_code == 409, resume.text
    resumed = resume.json()["error"]["message"]
    assert "is failed, not suspended" in resumed and "stopped while running" in resumed
    stored = await _snapshot(db, "slow", "run-1")
    assert stored["status"] == "failed" and stored["error"]["name"] == "WorkflowRunLost"
    assert "owner" not in stored


APPROVAL_CHAT = {
    "id": "chat-approve",
    "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Deploy it"}]}],
    "trigger": "submit-message",
}


def _approve(base: str, run_id: str) -> httpx.Response:
    body = {**APPROVAL_CHAT, "runId": run_id, "toolCallId": "call-1", "resumeData": {"approved": True}}
    return httpx.post(base + "/api/agents-chat/approver", json=body, timeout=10)


def _suspend(base: str) -> str:
    """A turn whose tool call waits for approval; the run id (kept in the SQLite file)."""
    answer = httpx.post(base + "/api/agents-chat/approver", json=APPROVAL_CHAT, timeout=30)
    assert answer.status_code == 200, answer.text
    frames = [json.loads(line[6:]) for line in answer.text.split("\n\n") if line.startswith("data: {")]
    approval = [
        f for f in frames if f["type"] == "tool-approval-request" or f["type"] == "data-tool-call-approval"
    ]
    assert approval, frames
    run_ids = {f.get("data", {}).get("runId") for f in frames if isinstance(f.get("data"), dict)}
    run_ids.discard(None)
    assert len(run_ids) == 1, frames
    return str(run_ids.pop())


async def test_an_agent_run_killed_in_its_approved_leg_is_reported_lost_by_the_next_process(
    tmp_path: Path,
) -> None:
    db = tmp_path / "crash.db"
    started = Path(str(db) + ".tool-started")
    with _server(db) as (process, base):
        run_id = _suspend(base)
    # A waiting run outlives its process: the next one answers its approval...
    with _server(db) as (process, base):
        with httpx.stream(
            "POST",
            base + "/api/agents-chat/approver",
            json={**APPROVAL_CHAT, "runId": run_id, "toolCallId": "call-1", "resumeData": {"approved": True}},
            timeout=10,
        ) as response:
            assert response.status_code == 200, response.read()
            deadline = time.monotonic() + 20
            while not started.exists():  # ...and is killed while the approved tool runs
                assert time.monotonic() < deadline, "the approved tool never started"
                time.sleep(0.02)
            _kill(process)
    stored = await _snapshot(db, "agentstream:agent-run", run_id)
    assert stored["status"] == "running" and stored["owner"]["id"].split(":")[1] == str(process.pid)
    with _server(db) as (_process, base):
        again = _approve(base, run_id)
        twice = _approve(base, run_id)
    # Not "already being resumed" for good: the run is lost, and the answer says why.
    for answer in (again, twice):
        assert answer.status_code == 409, answer.text
        message = answer.json()["error"]["message"]
        assert "stopped while a resumed leg was running" in message and f"pid {process.pid}" in message
        assert "is gone" in message and "being resumed" not in message
    stored = await _snapshot(db, "agentstream:agent-run", run_id)
    assert (
        stored["status"] == "failed" and stored["error"]["name"] == "AgentRunLost" and "owner" not in stored
    )

"""300 concurrent until-idle chats for 60 s over real HTTP: every stream ends with ``finish`` or an
``error`` part that says why (issue 22, "Done when").

A real uvicorn process (`_idle_load_app`: the demo as ``agentstream serve`` runs it, smoothing on,
a 5 s idle window) and 300 clients, each asking for research again and again for 60 s, so that
300 answers are always open. Every chat starts a background task of about 2.4 s; five run at a
time, so the queue grows to hundreds and most tasks wait far longer than the idle window: those
answers must end with a ``data-until-idle-closed`` part (the window, the running and queued task)
and ``finish``, the others after their continuation turn. Bounded: 60 s of load, then each open
answer's window; the figures (chats, endings, p95 answer time) are printed, never asserted.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
CLIENTS = 300
LOAD_S = 60.0
WINDOW_MS = 5_000


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(port: int) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "tests.background._idle_load_app", str(port), str(WINDOW_MS)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while True:
        assert process.poll() is None, process.stderr.read() if process.stderr else b""
        try:
            httpx.get(f"http://127.0.0.1:{port}/api/agents", timeout=2)
            return process
        except httpx.TransportError:
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.1)


def _ending(text: str) -> str:
    """How one answer ended: ``idle``, ``cut short``, ``answered`` (no background task) or ``error``;
    fails on anything else."""
    payloads = [line.removeprefix("data: ") for line in text.splitlines() if line.startswith("data: ")]
    assert payloads and payloads[-1] == "[DONE]", text[-400:]
    parts = [json.loads(p) for p in payloads[:-1]]
    kinds = [p["type"] for p in parts]
    last = parts[-1]
    if last["type"] == "error":
        assert isinstance(last.get("errorText"), str) and last["errorText"].strip(), last
        return "error"
    assert last["type"] == "finish", kinds[-5:]
    if "data-background-task-started" not in kinds:
        return "answered"  # the model answered without the background tool: a plain finished turn
    closed = [p for p in parts if p["type"] == "data-until-idle-closed"]
    if not closed:
        return "idle"
    assert len(closed) == 1 and parts[-2] is closed[0], kinds[-5:]
    data = closed[0]["data"]
    assert data["maxIdleMs"] == WINDOW_MS and data["reason"] == "idle-timeout", data
    assert len(data["running"]) + len(data["queued"]) == 1, data
    return "cut short"


async def _client(client: httpx.AsyncClient, n: int, until: float, out: list[tuple[str, float]]) -> None:
    turn = 0
    while time.monotonic() < until:
        turn += 1
        user = {
            "id": f"u{n}-{turn}",
            "role": "user",
            "parts": [{"type": "text", "text": f"Please research topic {n}-{turn}."}],
        }
        body = {"id": f"chat-{n}-{turn}", "messages": [user], "trigger": "submit-message"}
        began = time.monotonic()
        answer = await client.post("/api/chat", json=body)
        assert answer.status_code == 200, (answer.status_code, answer.text[:300])
        out.append((_ending(answer.text), time.monotonic() - began))


async def test_300_concurrent_until_idle_chats_for_60_s_all_end_with_finish_or_error() -> None:
    port = _free_port()
    process = _start(port)
    endings: list[tuple[str, float]] = []
    try:
        # A pooled connection is dropped before the server's 5 s keep-alive closes it (as browsers
        # do), so a request never races the server's close of an idle connection.
        limits = httpx.Limits(
            max_connections=CLIENTS + 20, max_keepalive_connections=CLIENTS + 20, keepalive_expiry=1.0
        )
        timeout = httpx.Timeout(LOAD_S + 120, connect=30)
        async with httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{port}", limits=limits, timeout=timeout
        ) as client:
            until = time.monotonic() + LOAD_S
            async with asyncio.timeout(LOAD_S + 180):
                await asyncio.gather(*(_client(client, n, until, endings) for n in range(CLIENTS)))
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
    counts = Counter(kind for kind, _ in endings)
    times = sorted(seconds for _, seconds in endings)
    p95 = times[int(len(times) * 0.95) - 1]
    print(
        f"\n{len(endings)} until-idle chats by {CLIENTS} clients in {LOAD_S:g} s: {dict(counts)}, p95 {p95:.1f} s"
    )
    assert len(endings) >= CLIENTS  # every client finished at least one chat, each checked above
    # Both endings happen: the queue outlasts the window, yet some tasks run and answer in time.
    assert counts["idle"] >= 1 and counts["cut short"] >= 1, counts
    assert counts["error"] == 0, counts

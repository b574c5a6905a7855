"""Under load, every until-idle chat answer ends with ``finish`` or an ``error`` part (issue 22 item 5).

100 concurrent chats through the app's chat route with the demo model and agent: each asks for
research, a background task of about 2.4 s that writes progress every 0.8 s. Five run at a time
(the per-agent limit), the rest wait in the queue longer than the 1 s idle window. Before, such an
answer ended with a ``data-background-task-*`` part and ``[DONE]``; now the answers whose task ran
end idle after the continuation turn, the others with a ``data-until-idle-closed`` part (the
window and the queue) then ``finish``. Bounded: 100 chats, about 5 s of tasks, 120 s at most.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx

from agentstream._app import create_app
from agentstream._demo import demo_agent
from agentstream._mastra import Mastra

CHATS = 100
WINDOW_MS = 1000


def _parts(text: str) -> list[dict[str, Any]]:
    payloads = [line.removeprefix("data: ") for line in text.splitlines() if line.startswith("data: ")]
    assert payloads and payloads[-1] == "[DONE]", text[-500:]
    return [json.loads(p) for p in payloads[:-1]]


async def test_a_hundred_concurrent_until_idle_chats_all_end_with_finish_or_error() -> None:
    agent = demo_agent("demo", default_options={"until_idle": {"max_idle_ms": WINDOW_MS}})
    mastra = Mastra(agents={"demo": agent}, background_tasks={"enabled": True, "shutdown_grace_ms": 0})
    application = create_app(mastra, smooth=False, stream_store=None)
    transport = httpx.ASGITransport(app=application)

    def request(i: int) -> dict[str, Any]:
        text = f"Please research topic {i}."
        user = {"id": f"u{i}", "role": "user", "parts": [{"type": "text", "text": text}]}
        return {"id": f"chat-{i}", "messages": [user], "trigger": "submit-message"}

    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1", timeout=120) as c:
            async with asyncio.timeout(120):
                answers = await asyncio.gather(*(c.post("/api/chat", json=request(i)) for i in range(CHATS)))
    finally:
        await mastra.aclose()

    assert [a.status_code for a in answers] == [200] * CHATS
    endings: dict[str, int] = {}
    for answer in answers:
        parts = _parts(answer.text)
        last = parts[-1]
        assert last["type"] in ("finish", "error"), [p["type"] for p in parts[-4:]]
        assert "data-background-task-started" in [p["type"] for p in parts]
        closed = [p for p in parts if p["type"] == "data-until-idle-closed"]
        if closed:
            assert parts[-2] is closed[-1] and len(closed) == 1
            data = closed[0]["data"]
            assert data["maxIdleMs"] == WINDOW_MS and data["reason"] == "idle-timeout"
            assert len(data["running"]) + len(data["queued"]) == 1
        kind = "error" if last["type"] == "error" else "cut short" if closed else "idle"
        endings[kind] = endings.get(kind, 0) + 1
    # Both endings happen: the window is shorter than the queue, not than a running task's news.
    assert endings.get("idle", 0) >= 1 and endings.get("cut short", 0) >= 1, endings
    assert "error" not in endings, endings

"""Two users of one agent at once: neither sees the other's background tasks or continuation turn."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest

from agentstream._app import create_app, demo_mastra


def _body(chat_id: str, text: str) -> dict[str, Any]:
    return {
        "id": chat_id,
        "messages": [{"id": f"{chat_id}-u1", "role": "user", "parts": [{"type": "text", "text": text}]}],
        "trigger": "submit-message",
    }


def _events(response: httpx.Response) -> list[dict[str, Any]]:
    frames = [f[len("data: ") :] for f in response.text.split("\n\n") if f.startswith("data: ")]
    return [json.loads(f) for f in frames if f != "[DONE]"]


@pytest.mark.looptime  # the demo model and its research tool pace themselves with asyncio.sleep
async def test_concurrent_users_only_see_their_own_background_tasks() -> None:
    mastra = demo_mastra()
    app = create_app(mastra, delay_in_ms=None, heartbeat_ms=0)
    transport = httpx.ASGITransport(app=app)
    headers = {"content-type": "application/json"}
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            alice, bob = await asyncio.gather(
                client.post(
                    "/api/chat/demo", json=_body("alice", "research ALICE"), headers=headers, timeout=60
                ),
                client.post("/api/chat/demo", json=_body("bob", "research bob"), headers=headers, timeout=60),
            )
    finally:
        await mastra.aclose()

    for response, own, other in ((alice, "ALICE", "bob"), (bob, "bob", "ALICE")):
        assert response.status_code == 200, response.text
        events = _events(response)
        task_parts = [e for e in events if e["type"].startswith("data-background-task-")]
        assert {e["type"] for e in task_parts} >= {
            "data-background-task-started",
            "data-background-task-completed",
        }
        task_ids = {e["data"].get("taskId") for e in task_parts}
        assert len(task_ids) == 1, f"{own}'s stream carries tasks {task_ids}"
        assert other not in json.dumps(events), f"{own}'s stream carries {other}'s data"
        completed = [e for e in task_parts if e["type"] == "data-background-task-completed"]
        assert [e["data"]["result"]["topic"] for e in completed] == [own]
        text = "".join(e.get("delta", "") for e in events if e["type"] == "text-delta")
        assert text.count("Here is what I found about") == 1, text

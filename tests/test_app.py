from __future__ import annotations

import json

import httpx
import pytest

from agentstream._app import create_app, load_mastra


def _events(body: str) -> list[dict[str, object]]:
    frames = [f[len("data: ") :] for f in body.split("\n\n") if f.startswith("data: ")]
    assert frames[-1] == "[DONE]"
    return [json.loads(f) for f in frames[:-1]]


async def _client() -> httpx.AsyncClient:
    app = create_app(delay_in_ms=None, heartbeat_ms=0)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")


async def test_page_and_agent_list() -> None:
    async with await _client() as client:
        page = await client.get("/")
        assert page.status_code == 200 and "<title>agentstream chat</title>" in page.text
        assert (await client.get("/api/agents")).json() == {"agents": [{"id": "demo", "name": "Demo Agent"}]}


@pytest.mark.looptime  # the demo model paces its tokens with asyncio.sleep
async def test_chat_streams_a_tool_call_and_the_answer_smoothed_by_word() -> None:
    body = {
        "id": "c1",
        "messages": [
            {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "What is the weather in Paris?"}]}
        ],
        "trigger": "submit-message",
    }
    async with await _client() as client:
        response = await client.post("/api/chat/demo", json=body)
    assert response.status_code == 200
    assert response.headers["x-vercel-ai-ui-message-stream"] == "v1"
    events = _events(response.text)
    types = [e["type"] for e in events]
    assert types[0] == "start" and types[-1] == "finish"
    assert "tool-input-available" in types and "tool-output-available" in types
    deltas = [str(e["delta"]) for e in events if e["type"] == "text-delta"]
    assert "Paris" in "".join(deltas)
    # word smoothing: every piece but the last ends in whitespace
    assert all(d[-1].isspace() for d in deltas[:-1])


async def test_unknown_agent_and_bad_body_are_client_errors() -> None:
    async with await _client() as client:
        missing = await client.post(
            "/api/chat/nope", json={"id": "c", "messages": [], "trigger": "submit-message"}
        )
        assert missing.status_code in (400, 404)
        bad = await client.post("/api/chat", content=b"{not json")
        assert bad.status_code == 400 and "error" in bad.json()


def test_load_mastra_names_what_is_wrong() -> None:
    with pytest.raises(ValueError, match="module:attr"):
        load_mastra("nocolon")
    with pytest.raises(TypeError, match="expected a Mastra instance"):
        load_mastra("json:__doc__")

from __future__ import annotations

import json
import sys
from pathlib import Path

import httpx
import pytest

from agentstream import Agent, Mastra
from agentstream._app import AppLoadError, check_models, create_app, load_app


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
        listed = (await client.get("/api/chat/info")).json()
        assert listed == {"agents": [{"id": "demo", "name": "Demo Agent"}], "resumable": True}


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
        bad = await client.post(
            "/api/chat", content=b"{not json", headers={"content-type": "application/json"}
        )
        assert bad.status_code == 400 and "error" in bad.json()


def test_load_app_names_what_is_wrong() -> None:
    with pytest.raises(AppLoadError, match="module:attr") as info:
        load_app("nocolon")
    assert info.value.usage
    with pytest.raises(AppLoadError, match="expected a Mastra, an Agent, an ASGI app"):
        load_app("json:__doc__")
    with pytest.raises(AppLoadError, match="no module named 'no_such_module_here'"):
        load_app("no_such_module_here:app")
    with pytest.raises(AppLoadError, match="has no attribute 'nope'"):
        load_app("json:nope")


def test_load_app_takes_a_mastra_an_agent_an_asgi_app_or_a_factory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "served_here.py").write_text(
        "from agentstream import Agent, Mastra\n"
        "agent = Agent(id='helper', name='Helper', instructions='Be brief.', model='demo')\n"
        "mastra = Mastra(agents={'a': agent})\n"
        "def factory():\n    return mastra\n"
        "async def asgi(scope, receive, send):\n    pass\n"
        "def broken():\n    raise RuntimeError('boom')\n"
    )
    monkeypatch.chdir(tmp_path)  # found in the current directory, as uvicorn finds it
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    from_agent = load_app("served_here:agent")
    assert isinstance(from_agent, Mastra) and list(from_agent.get_agents()) == ["helper"]
    assert isinstance(load_app("served_here:mastra"), Mastra)
    assert load_app("served_here:factory") is load_app("served_here:mastra")
    assert callable(load_app("served_here:asgi"))
    with pytest.raises(
        AppLoadError, match="calling served_here:broken\\(\\) failed: RuntimeError: boom"
    ) as info:
        load_app("served_here:broken")
    assert not info.value.usage


def test_check_models_names_the_agent_and_the_missing_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    mastra = Mastra(agents={"writer": Agent(id="w", name="W", instructions="", model="openai/gpt-4o-mini")})
    with pytest.raises(AppLoadError, match=r"agent 'writer' cannot use its model: .*OPENAI_API_KEY"):
        check_models(mastra)
    check_models(Mastra(agents={"demo": Agent(id="d", name="D", instructions="", model="demo")}))

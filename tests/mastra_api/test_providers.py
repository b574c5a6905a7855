"""``GET /api/agents/providers`` (Studio's model picker) from the providers `agentstream.models`
routes to and the app's agents' models; a request naming another model than the agent's is
refused, naming the field."""

from __future__ import annotations

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from agentstream import Agent, Mastra
from agentstream._demo import demo_mastra
from agentstream.mastra_api import mastra_api_routes
from agentstream.models import provider_keys


def _client(mastra: Mastra) -> TestClient:
    return TestClient(Starlette(routes=mastra_api_routes(mastra)), base_url="http://127.0.0.1")


def test_the_providers_are_ours_with_the_agents_models_and_mastras_connected_rule(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    monkeypatch.delenv("GROQ_API_KEY", raising=False)
    mastra = demo_mastra()
    mastra.register_agent(
        "writer", Agent(id="writer", instructions="Write.", model="anthropic/claude-test-1")
    )
    with _client(mastra) as client:
        answer = client.get("/api/agents/providers")
    assert answer.status_code == 200, answer.text
    providers = {p["id"]: p for p in answer.json()["providers"]}
    assert set(providers) == {key.id for key in provider_keys()}  # "openai.chat" is openai's
    assert providers["demo"]["models"] == ["demo"] and providers["demo"]["connected"] is True
    anthropic = providers["anthropic"]
    assert anthropic == {
        "id": "anthropic",
        "name": "Anthropic",
        "label": "Anthropic",
        "description": "",
        "envVar": "ANTHROPIC_API_KEY",
        "connected": True,
        "models": ["claude-test-1"],
    }
    assert providers["groq"]["connected"] is False and providers["groq"]["models"] == []
    assert providers["google"]["envVar"] == ["GOOGLE_GENERATIVE_AI_API_KEY", "GEMINI_API_KEY"]
    assert providers["ollama"]["connected"] is True  # a local server needs no key


def test_a_request_may_name_the_agents_own_model_only() -> None:
    body = {"messages": [{"role": "user", "content": "hello"}]}
    with _client(demo_mastra()) as client:
        same = client.post("/api/agents/demo/stream", json={**body, "model": "demo/demo"})
        assert same.status_code == 200 and '"type":"finish"' in same.text
        other = client.post("/api/agents/demo/generate", json={**body, "model": "openai/gpt-4o"})
        assert other.status_code == 400
        assert other.json()["error"] == (
            "model: this agent's model is demo/demo; a request cannot choose another (got 'openai/gpt-4o')"
        )
        thread = {"resourceId": "demo-agent", "threadId": "t-model"}
        sent = client.post(
            "/api/agents/demo-agent/send-message",
            json={"message": {"contents": "hi"}, **thread, "ifIdle": {"streamOptions": {"model": "groq/x"}}},
        )
        assert sent.status_code == 400 and sent.json()["error"].startswith("model: this agent's model is")

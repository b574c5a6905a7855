"""Provider-defined tools in an agent: sent as the provider's own tool, run by the provider.

Each case is a recorded provider response to a request that carried the tool (the recording's
request shows the wire form), replayed on a loopback server to an agent whose tools hold the
provider tool: the request must carry it as recorded, and the agent must not execute the call.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentstream import Agent
from agentstream.models import AnthropicModel, GoogleModel, OpenAIResponsesModel
from agentstream.tools import (
    ProviderTool,
    anthropic_web_search,
    google_search,
    openai_web_search,
)

from ..models.conftest import API_KEY, ReplayServer, Reply, load
from ..models.conftest import server as server  # the loopback replay server fixture


def _reply(name: str) -> tuple[dict[str, Any], Reply]:
    interaction = load(name)["interactions"][0]
    response = interaction["response"]
    return interaction["request"]["body"], Reply(content_type=response["contentType"], body=response["body"])


CASES = [
    (
        "anthropic/web-search-citations.json",
        lambda url: AnthropicModel("claude-sonnet-4-5", base_url=url + "/v1", api_key=API_KEY, max_retries=0),
        anthropic_web_search,
    ),
    (
        "openai-responses/web-search-builtin-tool.json",
        lambda url: OpenAIResponsesModel("gpt-4o", base_url=url + "/v1", api_key=API_KEY, max_retries=0),
        lambda: openai_web_search(search_context_size="medium"),
    ),
    (
        "google/web-search-grounding-metadata.json",
        lambda url: GoogleModel("gemini-2.5-pro", base_url=url + "/v1beta", api_key=API_KEY, max_retries=0),
        google_search,
    ),
]


@pytest.mark.parametrize(("name", "make_model", "make_tool"), CASES, ids=[c[0] for c in CASES])
async def test_provider_tool_in_an_agent(
    server: ReplayServer, name: str, make_model: Any, make_tool: Any
) -> None:
    recorded, reply = _reply(name)
    server.replies.append(reply)
    agent = Agent(id="a", model=make_model(server.url), tools=[make_tool()])
    output = agent.stream("What is the weather in San Francisco today?")
    chunks = [c async for c in output.full_stream]
    sent = server.received[0].body["tools"]
    wanted = [{k: v for k, v in t.items() if v is not None} for t in recorded["tools"]]
    assert [{k: v for k, v in t.items() if v is not None} for t in sent] == wanted
    assert len(server.received) == 1  # the provider ran the tool: no second call for a client result
    assert await output.finish_reason != "tool-calls" or not (await output.tool_calls)
    calls = [c for c in chunks if c.type == "tool-call"]
    assert all(c.payload.provider_executed for c in calls)
    assert await output.text


def test_provider_tool_definition() -> None:
    tool = anthropic_web_search(max_uses=3)
    assert tool.definition() == {
        "type": "provider-defined",
        "id": "anthropic.web_search_20250305",
        "name": "web_search",
        "args": {"maxUses": 3},
    }
    with pytest.raises(ValueError, match="provider_id must be"):
        ProviderTool(id="x", description="", input_schema={"type": "object"}, execute=print, provider_id="x")
    assert json.dumps(google_search().definition())

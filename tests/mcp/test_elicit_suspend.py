"""``MCPClient(on_elicitation="suspend")``: an MCP server's question during a tool call suspends
the agent's run, and ``resume_stream(answer)`` answers it (real HTTP, our `MCPServer`)."""

from __future__ import annotations

from typing import Any

import pytest

from agentstream.agent import Agent
from agentstream.mcp import MCPClient
from agentstream.testing import ScriptedModel

from .test_server import serving

USAGE = {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}
CALL = [
    {
        "type": "tool-call",
        "toolCallId": "c1",
        "toolName": "c_test_elicitation",
        "input": '{"message": "Your name?"}',
    },
    {"type": "finish", "finishReason": "tool-calls", "usage": USAGE},
]
ANSWER = [
    {"type": "text-start", "id": "t"},
    {"type": "text-delta", "id": "t", "delta": "Thanks."},
    {"type": "text-end", "id": "t"},
    {"type": "finish", "finishReason": "stop", "usage": USAGE},
]


async def test_a_servers_question_suspends_the_run_and_the_answer_resumes_it() -> None:
    from .conformance_server import build

    async with (
        serving(build()) as url,
        MCPClient(servers={"c": {"url": url}}, on_elicitation="suspend") as mcp,
    ):
        tools = await mcp.list_tools()
        agent = Agent(
            id="a",
            model=ScriptedModel([CALL, ANSWER]),
            tools={"c_test_elicitation": tools["c_test_elicitation"]},
        )
        first = agent.stream("hi", run_id="r1")
        chunks = [c async for c in first.full_stream]
        assert first.status == "suspended", [c.type for c in chunks]
        (suspended,) = [c for c in chunks if c.type == "tool-call-suspended"]
        question: dict[str, Any] = suspended.payload.suspend_payload
        assert question["type"] == "mcp-elicitation" and question["serverName"] == "c"
        assert question["message"] == "Your name?"
        assert question["requestedSchema"]["required"] == ["username", "email"]

        answer = {"action": "accept", "content": {"username": "ada", "email": "ada@example.com"}}
        resumed = agent.resume_stream(answer, run_id="r1", tool_call_id="c1")
        chunks = [c async for c in resumed.full_stream]
        assert await resumed.text == "Thanks."
        (result,) = [c for c in chunks if c.type == "tool-result"]
        assert "ada@example.com" in str(result.payload.result) and "action=accept" in str(
            result.payload.result
        )


async def test_a_question_outside_an_agent_run_is_declined_and_bad_settings_are_named() -> None:
    from mcp.shared.exceptions import MCPError

    from .conformance_server import build

    async with (
        serving(build()) as url,
        MCPClient(servers={"c": {"url": url}}, on_elicitation="suspend") as mcp,
    ):
        tools = await mcp.list_tools()
        with pytest.raises(MCPError, match="did not come from a tool call in an agent run"):
            await tools["c_test_elicitation"].execute({"message": "x"}, None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"on_elicitation=...\) must be a function or 'suspend', got 'ask'"):
        MCPClient(servers={"c": {"url": "http://127.0.0.1:1/mcp"}}, on_elicitation="ask")

"""Mastra habits on `Agent`: an id derived from the name, approving with only the tool call id or
only the run id, and a malformed list of fallback models refused when the agent is built (``_identity.py``,
``_call_index.py``)."""

from __future__ import annotations

from typing import Any

import pytest

from agentstream import Mastra
from agentstream.agent import Agent
from agentstream.testing import ScriptedModel
from agentstream.tools import Tool, ToolContext

USAGE = {"inputTokens": 3, "outputTokens": 2, "totalTokens": 5}


def _call(call_id: str) -> list[dict[str, Any]]:
    return [
        {"type": "stream-start", "warnings": []},
        {"type": "tool-call", "toolCallId": call_id, "toolName": "book", "input": '{"name":"Luigi"}'},
        {"type": "finish", "finishReason": "tool-calls", "usage": USAGE},
    ]


def _text(text: str) -> list[dict[str, Any]]:
    return [
        {"type": "stream-start", "warnings": []},
        {"type": "text-start", "id": "t"},
        {"type": "text-delta", "id": "t", "delta": text},
        {"type": "text-end", "id": "t"},
        {"type": "finish", "finishReason": "stop", "usage": USAGE},
    ]


def _agent(*responses: list[dict[str, Any]]) -> tuple[Agent, list[Any]]:
    ran: list[Any] = []

    async def book(args: dict[str, Any], ctx: ToolContext) -> Any:
        ran.append(args)
        return {"booked": args["name"]}

    schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    tool = Tool(id="book", description="Book", input_schema=schema, execute=book, require_approval=True)
    return Agent(name="Booker", instructions="x", model=ScriptedModel(list(responses)), tools=[tool]), ran


def test_an_agent_with_only_a_name_takes_it_as_its_id() -> None:
    agent = Agent(name="weather agent", model="demo")
    assert (agent.id, agent.name) == ("weather agent", "weather agent")
    assert Mastra(agents={"w": agent}).get_agent("w") is agent
    assert Agent(id="a", name="A", model="demo").id == "a"
    with pytest.raises(ValueError, match=r"an agent needs a non-empty id \(or a name"):
        Agent(model="demo")


def test_a_malformed_list_of_models_is_refused_when_the_agent_is_built() -> None:
    Agent(id="ok", model=["openai/gpt-4o", {"model": "anthropic/claude-3-5-haiku", "max_retries": 1}])
    with pytest.raises(ValueError) as refused:
        Agent(id="a", model=["openai/gpt-4o", {"max_retries": 1}])
    assert str(refused.value) == (
        "agent 'a': model[1]: expected {'model': ..., 'max_retries'?: int}, got keys ['max_retries']"
    )
    with pytest.raises(
        TypeError, match=r"agent 'b': model\[0\].model: expected a model string or a LanguageModel"
    ):
        Agent(id="b", model=[42])
    with pytest.raises(ValueError, match="agent 'c': model: the fallback list has no enabled model"):
        Agent(id="c", model=[{"model": "demo", "enabled": False}])


async def test_approve_with_only_the_tool_call_id() -> None:
    agent, ran = _agent(_call("call-7"), _text("Booked."))
    first = agent.stream("book Luigi")
    chunks = [c async for c in first.full_stream]
    assert chunks[-1].type == "tool-call-approval"
    resumed = agent.approve_tool_call(tool_call_id="call-7")
    assert resumed.run_id == first.run_id
    assert await resumed.text == "Booked."
    assert ran == [{"name": "Luigi"}]
    # The run is over: the call is no longer known, and the error says what to pass.
    with pytest.raises(ValueError, match="no run suspended in this process waits for tool call 'call-7'"):
        agent.approve_tool_call(tool_call_id="call-7")


async def test_decline_with_only_the_run_id() -> None:
    agent, ran = _agent(_call("call-1"), _text("Not booked."))
    first = agent.stream("book Luigi")
    _ = [c async for c in first.full_stream]
    declined = agent.decline_tool_call(run_id=first.run_id, reason="too far")
    assert await declined.text == "Not booked."
    assert ran == []


async def test_two_runs_waiting_for_the_same_call_id_need_the_run_id() -> None:
    agent, ran = _agent(_call("call-1"), _call("call-1"), _text("Booked."))
    runs = []
    for _ in range(2):
        output = agent.stream("book Luigi")
        _ = [c async for c in output.full_stream]
        runs.append(output.run_id)
    with pytest.raises(ValueError, match="2 suspended runs wait for a tool call 'call-1'"):
        agent.approve_tool_call(tool_call_id="call-1")
    with pytest.raises(TypeError, match="give run_id="):
        agent.approve_tool_call()
    resumed = agent.approve_tool_call(run_id=runs[1], tool_call_id="call-1")
    assert await resumed.text == "Booked."
    assert ran == [{"name": "Luigi"}]


async def test_approve_with_only_the_memory_thread() -> None:
    from agentstream.memory import Memory
    from agentstream.storage import InMemoryStore

    agent, ran = _agent(_call("call-3"), _text("Booked."))
    agent.memory = Memory(InMemoryStore())
    thread = {"thread": "t1", "resource": "ada"}
    first = agent.stream("book Luigi", memory=thread)
    _ = [c async for c in first.full_stream]
    assert (await agent.suspended_run(thread_id="t1") or {}).get("runId") == first.run_id
    resumed = agent.approve_tool_call(memory=thread)
    assert resumed.run_id == first.run_id
    assert await resumed.text == "Booked."
    assert ran == [{"name": "Luigi"}]
    with pytest.raises(ValueError, match="memory thread 't1' has no run suspended in this process"):
        agent.approve_tool_call(memory=thread)


def test_the_index_forgets_the_oldest_runs_past_its_limit() -> None:
    from agentstream.agent._call_index import SuspendedCalls

    calls = SuspendedCalls(limit=2)
    calls.add("c1", "r1")
    calls.add("c2", "r2")
    calls.add_thread("t2", "r2")
    calls.add("c3", "r3")
    with pytest.raises(ValueError, match="no run suspended in this process waits for tool call 'c1'"):
        calls.run_for("a", None, "c1")
    assert (calls.run_for("a", None, "c2"), calls.run_for("a", None, "", "t2")) == ("r2", "r2")
    calls.add("c2", "r2")  # suspended again on the same call: one run, not two
    assert calls.run_for("a", None, "c2") == "r2"
    calls.discard("r2")
    with pytest.raises(ValueError, match="memory thread 't2' has no run"):
        calls.run_for("a", None, "", "t2")

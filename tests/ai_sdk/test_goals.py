"""``send_goals``: goal progress as ``data-goal`` parts (beyond Mastra, which drops goal chunks)."""

from __future__ import annotations

import json
from typing import Any

from agentstream import Mastra
from agentstream.agent import Agent
from agentstream.ai_sdk import handle_chat_stream, to_ai_sdk_stream
from agentstream.memory import Memory
from agentstream.models import StreamPart
from agentstream.storage import InMemoryStore
from agentstream.testing import ScriptedModel

MEMORY = {"thread": "t", "resource": "r"}


def _text(text: str) -> list[StreamPart]:
    return [
        {"type": "stream-start", "warnings": []},
        {"type": "text-delta", "id": "t", "delta": text},
        {"type": "finish", "finishReason": "stop", "usage": {"inputTokens": 1, "outputTokens": 1}},
    ]


def _verdict(decision: str, reason: str) -> list[StreamPart]:
    return _text(json.dumps({"decision": decision, "reason": reason}))


async def _agent() -> Agent:
    judge = ScriptedModel([_verdict("continue", "Longer."), _verdict("done", "Good.")])
    agent = Agent(
        id="writer",
        model=ScriptedModel([_text("a"), _text("a b")]),
        memory=Memory(InMemoryStore()),
        goal={"judge": judge},
    )
    await agent.set_objective("Write two words", thread_id="t")
    return agent


async def _parts(**options: Any) -> list[dict[str, Any]]:
    agent = await _agent()
    return [p async for p in to_ai_sdk_stream(agent.stream("go", memory=MEMORY), **options)]


async def test_goal_parts_update_in_place_per_attempt() -> None:
    parts = await _parts(send_goals=True)
    goals = [p for p in parts if p["type"] == "data-goal"]
    ids = list(dict.fromkeys(p["id"] for p in goals))
    assert len(ids) == 2  # one part per judged attempt
    finals = [p["data"] for p in goals if "shouldContinue" in p["data"]]
    assert [(g["iteration"], g["status"], g["shouldContinue"]) for g in finals] == [
        (1, "active", True),
        (2, "done", False),
    ]
    assert all(p["data"]["pending"] for p in goals if "shouldContinue" not in p["data"])
    signals = [p for p in parts if p["type"] == "data-signal"]
    assert signals and all(p.get("transient") is True for p in signals)


async def test_goal_chunks_are_dropped_by_default() -> None:
    parts = await _parts()
    assert not any(p["type"] == "data-goal" for p in parts)
    assert parts[-1]["type"] == "finish"


async def test_handle_chat_stream_forwards_goals() -> None:
    agent = await _agent()
    mastra = Mastra(agents={"writer": agent})
    body = {"messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "go"}]}]}
    stream = await handle_chat_stream(
        mastra=mastra, agent_id="writer", params=body, default_options={"memory": MEMORY}, send_goals=True
    )
    kinds = [p["type"] async for p in stream]
    assert kinds.count("data-goal") >= 4 and kinds[-1] == "finish"

"""History processors: what of the loaded history reaches the model."""

from __future__ import annotations

from typing import Any

import pytest

from agentstream.memory import HistoryTokenLimiter, ToolCallFilter


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def assistant_call(name: str, call_id: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "let me check"},
            {"type": "tool-call", "toolCallId": call_id, "toolName": name, "input": {}},
        ],
    }


def tool_result(name: str, call_id: str) -> dict[str, Any]:
    output = {"type": "json", "value": 1}
    return {
        "role": "tool",
        "content": [{"type": "tool-result", "toolCallId": call_id, "toolName": name, "output": output}],
    }


PROMPT = [
    {"role": "system", "content": "sys"},
    user("old question"),
    assistant_call("weather", "c1"),
    tool_result("weather", "c1"),
    assistant_call("time", "c2"),
    tool_result("time", "c2"),
    user("new question"),
    assistant_call("weather", "c3"),  # the running turn's own call stays
    tool_result("weather", "c3"),
]


async def test_tool_call_filter_drops_earlier_turns_calls() -> None:
    out = await ToolCallFilter().process_llm_request(prompt=PROMPT)
    kinds = [[p["type"] for p in m["content"]] if isinstance(m["content"], list) else m["role"] for m in out]
    assert kinds == ["system", ["text"], ["text"], ["text"], ["text"], ["text", "tool-call"], ["tool-result"]]


async def test_tool_call_filter_exclude_names_only_those_tools() -> None:
    out = await ToolCallFilter(exclude=["time"]).process_llm_request(prompt=PROMPT)
    names = [p.get("toolName") for m in out[:6] if isinstance(m["content"], list) for p in m["content"]]
    assert "weather" in names and "time" not in names
    with pytest.raises(TypeError, match="list of tool names"):
        ToolCallFilter(exclude="time")


async def test_token_limiter_drops_the_oldest_history_first() -> None:
    history = [user(f"message number {i} " + "word " * 20) for i in range(10)]
    limiter = HistoryTokenLimiter(100, counter=lambda s: len(s.split()))
    out = await limiter.process_input(messages=[*history, user("now")], system_messages=[])
    assert out[-1] == user("now")
    kept = [m["content"][0]["text"].split()[2] for m in out[:-1]]
    assert kept == ["6", "7", "8", "9"]  # 23 words each: the newest four fit in 100 - 1
    with pytest.raises(ValueError, match="limit must be an int >= 1"):
        HistoryTokenLimiter(0)


async def test_token_limiter_never_opens_with_an_orphaned_tool_result() -> None:
    messages = [user("q " * 50), assistant_call("weather", "c1"), tool_result("weather", "c1"), user("now")]
    limiter = HistoryTokenLimiter(30, counter=lambda s: len(s.split()))
    out = await limiter.process_input(messages=messages, system_messages=[])
    assert out[0]["role"] != "tool" and out[-1] == user("now")

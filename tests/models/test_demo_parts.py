"""The demo model's parts are what the ``StreamPart`` types say, for a text answer and a tool-call turn."""

from __future__ import annotations

from typing import Any

import pytest

from agentstream.models import CallOptions
from agentstream.models._demo import DemoModel

from ._typed_parts import assert_typed_parts

WEATHER_TOOL = {
    "type": "function",
    "name": "weather",
    "description": "Weather in a city",
    "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}},
}


async def _parts(options: CallOptions) -> list[dict[str, Any]]:
    return [dict(part) async for part in DemoModel(delay_ms=0, seed=1).do_stream(options)]


@pytest.mark.parametrize("tools", [[], [WEATHER_TOOL]], ids=["text", "tools"])
async def test_demo_parts_are_typed(tools: list[dict[str, Any]]) -> None:
    prompt = [{"role": "user", "content": [{"type": "text", "text": "What is the weather in Paris?"}]}]
    parts = await _parts({"prompt": prompt, "tools": tools})
    assert_typed_parts(parts)
    assert parts[0]["type"] == "stream-start"
    assert parts[-1]["type"] == "finish"
    assert ("tool-call" in {p["type"] for p in parts}) == bool(tools)

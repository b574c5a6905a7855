"""The demo agent used by ``agentstream run``: a ``weather`` tool and a slow ``research`` tool."""

from __future__ import annotations

import asyncio
import hashlib

from ..models._base import LanguageModel
from ..tools import ToolContext, tool
from ._agent import Agent

__all__ = ["demo_agent"]

_CONDITIONS = ("sunny", "partly cloudy", "overcast", "light rain", "windy", "clear")


@tool
async def weather(city: str) -> dict[str, object]:
    """Get the current weather for a city."""
    await asyncio.sleep(0.2)
    h = hashlib.sha256(city.lower().encode()).digest()
    return {"city": city, "temperatureC": 5 + h[0] % 25, "conditions": _CONDITIONS[h[1] % len(_CONDITIONS)]}


@tool
async def research(topic: str, context: ToolContext) -> dict[str, object]:
    """Research a topic in depth (slow)."""
    for step in ("searching", "reading", "summarising"):
        context.writer.write({"status": step, "topic": topic})
        waiter = asyncio.ensure_future(context.abort_signal.wait())
        try:
            await asyncio.wait({waiter}, timeout=0.8)
        finally:
            waiter.cancel()
        context.abort_signal.throw_if_aborted()
    return {"topic": topic, "summary": f"Three sources agree on the basics of {topic}; details vary."}


def demo_agent(model: LanguageModel | str = "demo") -> Agent:
    return Agent(
        id="demo-agent",
        name="Demo Agent",
        instructions="You are a helpful assistant. Use the tools when they help.",
        model=model,
        tools=[weather, research],
    )

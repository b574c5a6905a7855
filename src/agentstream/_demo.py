"""The demo agent used by ``agentstream run`` / ``serve`` (the application layer, not the library's): a ``weather`` tool, a slow ``research`` tool, ``book_table`` (needs the user's approval) and ``choose_time`` (suspends until the user picks a time).

``research`` is background-enabled: under ``Mastra(background_tasks=...)`` (see ``demo_mastra``)
it runs as a background task and the model gets a placeholder; elsewhere it runs inline.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from typing import TYPE_CHECKING, Any

from ._abort import until_aborted
from ._mastra import Mastra
from .agent import Agent
from .models import LanguageModel
from .processors import SecretRedactor, message_text
from .tools import ToolContext, tool

if TYPE_CHECKING:
    from .memory import Memory
    from .storage import Storage

__all__ = ["demo_agent", "demo_mastra"]

_CONDITIONS = ("sunny", "partly cloudy", "overcast", "light rain", "windy", "clear")


@tool
async def weather(city: str) -> dict[str, object]:
    """Get the current weather for a city."""
    await asyncio.sleep(0.2)
    h = hashlib.sha256(city.lower().encode()).digest()
    return {"city": city, "temperatureC": 5 + h[0] % 25, "conditions": _CONDITIONS[h[1] % len(_CONDITIONS)]}


@tool(background={"enabled": True, "timeout_ms": 60_000})
async def research(topic: str, context: ToolContext) -> dict[str, object]:
    """Research a topic in depth (slow)."""
    for step in ("searching", "reading", "summarising"):
        context.writer.write({"status": step, "topic": topic})
        await until_aborted(asyncio.sleep(0.8), context.abort_signal)
    return {"topic": topic, "summary": f"Three sources agree on the basics of {topic}; details vary."}


_TIMES = ("18:00", "19:30", "21:00")


@tool(require_approval=True)
async def book_table(restaurant: str, people: int = 2) -> dict[str, object]:
    """Book a table at a restaurant (asks the user to approve first)."""
    code = hashlib.sha256(f"{restaurant}:{people}".lower().encode()).hexdigest()[:6].upper()
    return {"restaurant": restaurant, "people": people, "confirmation": code}


@tool(
    suspend_schema={
        "type": "object",
        "properties": {
            "question": {"type": "string"},
            "options": {"type": "array", "items": {"type": "string"}},
        },
    },
    resume_schema={
        "type": "object",
        "properties": {"time": {"type": "string", "enum": list(_TIMES), "description": "The time to book"}},
        "required": ["time"],
    },
)
async def choose_time(restaurant: str, context: ToolContext) -> object:
    """Ask the user which of the free times at a restaurant suits them (suspends until answered)."""
    if context.resume_data is None:
        return await context.suspend({"question": f"Which time at {restaurant}?", "options": list(_TIMES)})
    return {"restaurant": restaurant, "time": context.resume_data["time"]}


_INJECTION = re.compile(
    r"\b(?:ignore|disregard|forget)\s+(?:all\s+|any\s+|the\s+)?(?:previous|prior|above|earlier)\s+"
    r"(?:instructions|prompts|rules)\b"
    r"|\b(?:print|reveal|show|repeat|output)\s+(?:me\s+)?(?:your|the)\s+(?:system\s+prompt|instructions)\b"
    r"|\bdeveloper\s+mode\b|\bjailbreak\b",
    re.IGNORECASE,
)


class PromptGuard:
    """The demo's input guardrail: blocks the usual prompt-injection phrasings without a judge
    model (an application with a model to spare would use ``PromptInjectionDetector``)."""

    id = "prompt-guard"
    name = "Prompt Guard"

    async def process_input(self, *, messages: list[dict[str, Any]], abort: Any, **_: Any) -> None:
        """Block the run when the newest user message reads like an attempt to override the
        instructions (a chat client sends the whole history each turn: older messages were judged
        when they were new, and a blocked one must not block every turn after it)."""
        users = [m for m in messages if m.get("role") == "user"]
        found = _INJECTION.search(message_text(users[-1])) if users else None
        if found is not None:
            abort(f'Possible prompt injection ("{found.group(0)}")', metadata={"matched": found.group(0)})


def demo_agent(
    model: LanguageModel | str = "demo",
    *,
    default_options: dict[str, Any] | None = None,
    goal: dict[str, Any] | None = None,
    memory: Memory | None = None,
) -> Agent:
    """The demo agent; ``goal`` / ``memory`` as `Agent`'s (``agentstream run --goal``)."""
    return Agent(
        id="demo-agent",
        name="Demo Agent",
        instructions="You are a helpful assistant. Use the tools when they help.",
        model=model,
        tools=[weather, research, book_table, choose_time],
        default_options=default_options,
        input_processors=[PromptGuard()],
        output_processors=[SecretRedactor()],
        goal=goal,
        memory=memory,
    )


def demo_mastra(
    model: LanguageModel | str = "demo",
    *,
    storage: Storage | None = None,
    until_idle: bool | dict[str, Any] = False,
) -> Mastra:
    """The demo agent (key ``demo``) and the demo workflow (``publish-article``) in a ``Mastra`` with
    background tasks enabled.

    ``until_idle`` becomes a default option of the agent, so that every ``stream()`` (e.g. the chat
    route's) is an until-idle stream carrying the background-task chunks and the continuation turn.
    """
    from ._demo_workflow import demo_workflow

    options: dict[str, Any] = {"until_idle": until_idle} if until_idle else {}
    return Mastra(
        agents={"demo": demo_agent(model, default_options=options)},
        workflows={"publish-article": demo_workflow(model)},
        storage=storage,
        background_tasks={"enabled": True},
    )

"""The chat page shows a goal's judged attempts (``data-goal`` parts), driven in headless Chromium."""

from __future__ import annotations

from pathlib import Path

from agentstream import Mastra
from agentstream._app import create_app
from agentstream._demo import demo_agent
from agentstream.memory import Memory
from agentstream.storage import InMemoryStore

from .test_chat_page import drive, serving


async def _mastra() -> Mastra:
    agent = demo_agent(
        "demo",
        goal={"judge": "demo"},
        memory=Memory(InMemoryStore()),
        default_options={"memory": {"thread": "page", "resource": "page"}},
    )
    await agent.set_objective("Explain rainbows and include a haiku", thread_id="page")
    return Mastra(agents={"demo": agent})


async def test_the_page_shows_each_judged_attempt(tmp_path: Path) -> None:
    mastra = await _mastra()
    with serving(create_app(mastra, delay_in_ms=1)) as url:
        out = drive(url, tmp_path, "Explain how rainbows form")
    assert out["consoleErrors"] == [], out["requests"]
    (turn,) = out["turns"]
    assert turn["goals"] == [
        "goal attempt 1/50not done yetExplain rainbows and include a haikuCover what is still missing: haiku.",
        "goal attempt 2/50doneExplain rainbows and include a haikuThe answer covers every part of the goal.",
    ]
    assert "On haiku:" in turn["text"]

"""A generated title holding half a surrogate pair (the title model's delta cut inside an emoji)
is stored on SQLite with U+FFFD in its place, as ``String.prototype.toWellFormed()`` gives, and
the turn still ends well (a title is a text column, which holds no lone surrogate)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from agentstream.agent import Agent
from agentstream.memory import Memory
from agentstream.memory._title import TitleConfig, generate_title
from agentstream.storage import MessageRecord, SQLiteStore
from agentstream.testing import ScriptedModel

from .test_features import text_step


async def test_a_title_with_a_lone_half_is_stored_well_formed(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "titles.db")
    await store.init()
    try:
        model = ScriptedModel([text_step("Rainbows"), text_step(" Tides \ud83d and \ud83c\udf08 ")])
        agent = Agent(id="a", instructions="x", model=model, memory=Memory(store, generate_title=True))
        out = agent.stream("Explain rainbows", memory={"thread": "t1", "resource": "r"})
        assert await out.text == "Rainbows"
        async with asyncio.timeout(10):  # the title is generated after the answer, off its path
            while (await store.get_thread("t1")).title is None:
                await asyncio.sleep(0.02)
        assert (await store.get_thread("t1")).title == "Tides \ufffd and \U0001f308"
    finally:
        await store.close()


async def test_generate_title_returns_well_formed_text() -> None:
    model = ScriptedModel([text_step("a\udc00b")])
    record = MessageRecord(
        id="m", thread_id="t", role="user", content={"format": 2, "parts": [{"type": "text", "text": "hi"}]}
    )
    title = await generate_title(model, TitleConfig(enabled=True), [record], now_ms=0)
    assert title == "a\ufffdb"

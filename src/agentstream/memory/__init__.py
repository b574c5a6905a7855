"""Memory: thread history over the storage's threads/messages domain (``agent.stream(..., memory=...)``).

agent = Agent(id="a", model="demo", memory=Memory())      # storage: the Mastra's
mastra = Mastra(agents={"a": agent}, storage=SQLiteStore("app.db"))
await agent.generate("hi", memory={"thread": "t1", "resource": "user-1"})
"""

from __future__ import annotations

from ._memory import (
    DEFAULT_LAST_MESSAGES,
    Memory,
    MemoryScope,
    db_messages_to_prompt,
    resolve_memory_option,
)

__all__ = [
    "DEFAULT_LAST_MESSAGES",
    "Memory",
    "MemoryScope",
    "db_messages_to_prompt",
    "resolve_memory_option",
]

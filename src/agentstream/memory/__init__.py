"""Memory as Mastra's ``@mastra/memory``: thread history, working memory, semantic recall over a
vector store, history processors and thread titles (``agent.stream(..., memory=...)``).

agent = Agent(id="a", model="demo", memory=Memory(working_memory={"enabled": True}))
mastra = Mastra(agents={"a": agent}, storage=SQLiteStore("app.db"))
await agent.generate("hi", memory={"thread": "t1", "resource": "user-1"})
"""

from __future__ import annotations

from ._embed import Embedder, FastEmbedEmbedder, GoogleEmbedder, HashEmbedder, OpenAIEmbedder, as_embedder
from ._history import HistoryTokenLimiter, ToolCallFilter
from ._memory import DEFAULT_LAST_MESSAGES, Memory
from ._recall import SemanticRecallConfig
from ._scope import MemoryScope, resolve_memory_option
from ._title import DEFAULT_TITLE_INSTRUCTIONS, TitleConfig
from ._turn import TurnRecorder, db_messages_to_prompt
from ._vector import InMemoryVectorStore, VectorMatch, VectorStore
from ._working import DEFAULT_TEMPLATE, WorkingMemoryConfig
from ._working_tool import WORKING_MEMORY_TOOL, WORKING_MEMORY_TOOL_ID

__all__ = [
    "DEFAULT_LAST_MESSAGES",
    "DEFAULT_TEMPLATE",
    "DEFAULT_TITLE_INSTRUCTIONS",
    "WORKING_MEMORY_TOOL",
    "WORKING_MEMORY_TOOL_ID",
    "Embedder",
    "FastEmbedEmbedder",
    "GoogleEmbedder",
    "HashEmbedder",
    "HistoryTokenLimiter",
    "InMemoryVectorStore",
    "Memory",
    "MemoryScope",
    "OpenAIEmbedder",
    "SemanticRecallConfig",
    "TitleConfig",
    "ToolCallFilter",
    "TurnRecorder",
    "VectorMatch",
    "VectorStore",
    "WorkingMemoryConfig",
    "as_embedder",
    "db_messages_to_prompt",
    "resolve_memory_option",
]


def __getattr__(name: str) -> object:
    # the vector stores need the optional ``vector`` extra (apsw, sqlite-vec): loaded on use
    if name == "SqliteVecStore":
        from ._vector_sqlite import SqliteVecStore

        return SqliteVecStore
    if name == "PgVectorStore":  # the pgvector extra
        from ._vector_pg import PgVectorStore

        return PgVectorStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

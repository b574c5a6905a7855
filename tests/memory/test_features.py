"""Working memory across processes and resources, semantic recall on the vector stores, and
embedding off the answer's critical path."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agentstream.agent import Agent
from agentstream.memory import HashEmbedder, InMemoryVectorStore, Memory, VectorStore
from agentstream.storage import BaseStore, InMemoryStore, SQLiteStore
from agentstream.testing import ScriptedModel

from ._pg import pg_dsn, pgvector_dsn

__all__ = ["pgvector_dsn"]  # the fixture, used through pytest

USAGE = {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}
SRC = Path(__file__).resolve().parents[2] / "src"


def text_step(text: str) -> list[dict[str, Any]]:
    return [
        {"type": "stream-start", "warnings": []},
        {"type": "text-start", "id": "t"},
        {"type": "text-delta", "id": "t", "delta": text},
        {"type": "text-end", "id": "t"},
        {"type": "finish", "finishReason": "stop", "usage": USAGE},
    ]


def wm_step(call_id: str, memory: Any) -> list[dict[str, Any]]:
    return [
        {"type": "stream-start", "warnings": []},
        {
            "type": "tool-call",
            "toolCallId": call_id,
            "toolName": "updateWorkingMemory",
            "input": json.dumps({"memory": memory}),
        },
        {"type": "finish", "finishReason": "tool-calls", "usage": USAGE},
    ]


# ------------------------------------------------------------------------------ working memory

_CHILD = """
import asyncio, sys
from agentstream.memory import Memory
from agentstream.storage import {store_class}

async def main():
    store = {store_expr}
    await store.init()
    memory = Memory(store, working_memory={{"enabled": True, "scope": sys.argv[1]}})
    await memory.create_thread(thread_id="t1", resource_id="u1")
    await memory.update_working_memory("# Profile\\n- Name: Ada\\n", thread_id="t1", resource_id="u1")
    await store.close()

asyncio.run(main())
"""


@pytest.mark.parametrize("scope", ["thread", "resource"])
@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_working_memory_survives_a_process_restart(backend: str, scope: str, tmp_path: Path) -> None:
    """Written by another process, read back here through a fresh store and memory."""
    schema = f"wm_{uuid.uuid4().hex[:12]}"
    if backend == "sqlite":
        path = tmp_path / "wm.db"
        child = _CHILD.format(store_class="SQLiteStore", store_expr=f"SQLiteStore({str(path)!r})")
    else:
        dsn = pg_dsn()
        child = _CHILD.format(
            store_class="PostgresStore", store_expr=f"PostgresStore({dsn!r}, schema={schema!r})"
        )
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    subprocess.run([sys.executable, "-c", child, scope], check=True, env=env, timeout=120)
    store: BaseStore
    if backend == "sqlite":
        store = SQLiteStore(tmp_path / "wm.db")
    else:
        from agentstream.storage import PostgresStore

        store = PostgresStore(dsn, schema=schema)
    try:
        memory = Memory(store, working_memory={"enabled": True, "scope": scope})
        got = await memory.get_working_memory(thread_id="t1", resource_id="u1")
        assert got == "# Profile\n- Name: Ada\n"
        system = await memory.get_system_message(thread_id="t1", resource_id="u1")
        assert (
            system is not None
            and "<working_memory_data>\n# Profile\n- Name: Ada\n\n</working_memory_data>" in system
        )
    finally:
        await store.close()
        if backend == "postgres":
            import psycopg

            async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
                await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


async def test_two_resources_never_see_each_others_working_memory() -> None:
    store = InMemoryStore()
    model = ScriptedModel(
        [wm_step("c1", "# Me\n- secret: zebra-7\n"), text_step("Noted."), text_step("Hello.")]
    )
    memory = Memory(store, working_memory={"enabled": True, "template": "# Me\n- secret:\n"})
    agent = Agent(id="a", model=model, memory=memory)
    await agent.generate("my secret is zebra-7", memory={"thread": "a-1", "resource": "alice"})
    assert (
        await memory.get_working_memory(thread_id="a-1", resource_id="alice") == "# Me\n- secret: zebra-7\n"
    )
    await agent.generate("what is my secret?", memory={"thread": "b-1", "resource": "bob"})
    bob_prompt = json.dumps(model.calls[2].prompt)
    assert "zebra-7" not in bob_prompt and "<working_memory_data>\\nnull\\n" in bob_prompt
    assert await memory.get_working_memory(thread_id="b-1", resource_id="bob") is None
    # a thread of one resource cannot be used by another
    with pytest.raises(ValueError, match="belongs to resource 'alice'"):
        await agent.generate("hi", memory={"thread": "a-1", "resource": "bob"})


async def test_update_working_memory_from_code_and_schema_merge_rules() -> None:
    store = InMemoryStore()
    schema = {"type": "object", "properties": {"name": {"type": "string"}, "tags": {"type": "array"}}}
    memory = Memory(store, working_memory={"enabled": True, "schema": schema, "scope": "thread"})
    await memory.create_thread(thread_id="t", resource_id="u")
    await memory.update_working_memory({"name": "Ada", "tags": ["a"]}, thread_id="t")
    tool = memory.run_tools(resolve("t", "u"))["updateWorkingMemory"]
    result = await tool.execute({"memory": {"tags": ["b"], "name": None}}, None)
    assert result == {"success": True}
    assert json.loads(await memory.get_working_memory(thread_id="t") or "") == {"name": "Ada", "tags": ["b"]}
    with pytest.raises(ValueError, match="scope must be 'thread' or 'resource'"):
        Memory(store, working_memory={"enabled": True, "scope": "user"})


def resolve(thread: str, resource: str) -> Any:
    from agentstream.memory import resolve_memory_option

    return resolve_memory_option({"thread": thread, "resource": resource})


# ------------------------------------------------------------------------------ semantic recall

TEXTS = [
    "I drink espresso every morning in Paris",
    "My dog Rex loves long walks in the rain",
    "I play the guitar on the train to work",
    "Python is my favourite programming language",
    "We ate pizza in Naples last summer",
]


@pytest.fixture(params=["memory", "sqlite-vec", "pgvector"])
async def vector(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[VectorStore]:
    if request.param == "memory":
        yield InMemoryVectorStore()
        return
    if request.param == "pgvector":
        from agentstream.memory import PgVectorStore

        pg = PgVectorStore(request.getfixturevalue("pgvector_dsn"), schema=f"v_{uuid.uuid4().hex[:12]}")
        yield pg
        await pg.close()
        return
    from agentstream.memory import SqliteVecStore

    store = SqliteVecStore(tmp_path / "vec.db")
    yield store
    await store.close()


async def _indexed(vector: VectorStore) -> Memory:
    store = InMemoryStore()
    memory = Memory(
        store,
        semantic_recall={"top_k": 2, "message_range": 0, "scope": "resource"},
        embedder=HashEmbedder(),
        vector=vector,
    )
    # each answer repeats its topic: the two best matches of a query are clear, never a near tie
    # that float32 (sqlite-vec) and float64 (the scan) could order differently
    model = ScriptedModel([text_step(f"So: {text.lower()}!") for text in TEXTS])
    agent = Agent(id="a", model=model, memory=memory)
    for i, text in enumerate(TEXTS):
        owner = "alice" if i % 2 == 0 else "bob"
        await agent.generate(text, memory={"thread": f"{owner}-{i}", "resource": owner})
    await memory.drain()
    return memory


async def test_recall_is_the_same_on_every_vector_store(vector: VectorStore) -> None:
    reference = await _indexed(InMemoryVectorStore())
    memory = await _indexed(vector)
    for query in ("guitar on a train", "espresso in Paris", "pizza in Naples", "my dog in the rain"):
        for owner in ("alice", "bob"):
            scope = resolve(f"{owner}-new", owner)
            want = await reference.search(scope, query)
            got = await memory.search(scope, query)
            assert [m.metadata["content"] for m in got] == [m.metadata["content"] for m in want]
            assert [round(m.score, 5) for m in got] == [round(m.score, 5) for m in want]
            assert {m.metadata["resource_id"] for m in got} <= {owner}  # never another resource's
    info = await memory.vector.describe_index("memory_messages_256")
    assert info == {"dimension": 256, "count": 2 * len(TEXTS), "metric": "cosine"}


async def test_vector_store_checks_the_dimension(vector: VectorStore) -> None:
    await vector.create_index("idx", 3)
    await vector.create_index("idx", 3)  # idempotent
    with pytest.raises(ValueError, match="dimension 3"):
        await vector.create_index("idx", 4)
    with pytest.raises(ValueError, match="dimension 3, got a vector of dimension 2"):
        await vector.upsert("idx", ["x"], [[1.0, 0.0]], [{}])


async def test_a_slow_embedder_does_not_delay_the_first_token() -> None:
    """The query embedding is needed for the prompt; indexing the saved turn is not: it runs after
    the answer. Here indexing alice's answer waits on a gate that only opens at the end: her first
    token arrives, her answer ends, and another user's whole turn runs, all while it waits."""
    gate = asyncio.Event()
    inner = HashEmbedder(dimension=32)

    async def embed(texts: list[str]) -> list[list[float]]:
        if "Trains are great." in texts:
            await gate.wait()  # indexing alice's answer: blocked until the end of the test
        return await inner.embed(texts)

    memory = Memory(InMemoryStore(), semantic_recall=True, embedder=embed)
    model = ScriptedModel([text_step("Trains are great."), text_step("Hello Bob.")])
    agent = Agent(id="a", model=model, memory=memory)
    started = time.monotonic()
    output = agent.stream("tell me about trains", memory={"thread": "t", "resource": "alice"})
    first: float | None = None
    async for chunk in output.full_stream:
        if first is None and chunk.type == "text-delta":
            first = time.monotonic() - started
    assert first is not None and first < 5
    assert memory._pending["alice"], "indexing must still be waiting"  # the answer finished without it
    bob = await asyncio.wait_for(agent.generate("hi", memory={"thread": "b", "resource": "bob"}), 10)
    assert bob.text == "Hello Bob."  # another user's turn does not wait for alice's indexing
    gate.set()
    await asyncio.wait_for(memory.drain(), 10)
    info = await memory.vector.describe_index("memory_messages_32")
    assert info["count"] == 4


async def test_deleting_a_thread_takes_its_messages_and_embeddings() -> None:
    memory = await _indexed(InMemoryVectorStore())
    assert [t.id for t in await memory.list_threads(resource_id="alice")] == ["alice-0", "alice-2", "alice-4"]
    updated = await memory.update_thread("alice-2", title="Music", metadata={"tag": "x"})
    assert (updated.title, updated.metadata) == ("Music", {"tag": "x"})
    page = await memory.list_messages("alice-2", page=0, per_page=1)
    assert page.total == 2 and page.has_more and len(page.messages) == 1
    before = (await memory.vector.describe_index("memory_messages_256"))["count"]
    assert await memory.delete_thread("alice-2") is True
    assert await memory.get_thread("alice-2") is None
    assert (await memory.vector.describe_index("memory_messages_256"))["count"] == before - 2
    found = await memory.search(resolve("alice-new", "alice"), "guitar on a train")
    assert all(m.metadata["thread_id"] != "alice-2" for m in found)
    with pytest.raises(ValueError, match="needs a resource_id"):
        await memory.list_threads(resource_id="")


async def test_a_failing_embedder_after_the_answer_is_logged_not_raised(
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls: list[list[str]] = []

    async def embed(texts: list[str]) -> list[list[float]]:
        calls.append(texts)
        if len(calls) > 2:  # the dimension probe and the query work; indexing the turn fails
            raise RuntimeError("embedding service down")
        return [[1.0, 0.0, 0.0] for _ in texts]

    memory = Memory(InMemoryStore(), semantic_recall=True, embedder=embed)
    agent = Agent(id="a", model=ScriptedModel([text_step("Fine.")]), memory=memory)
    out = await agent.generate("hello there", memory={"thread": "t", "resource": "u"})
    assert out.text == "Fine."
    await memory.drain()
    assert "indexing or titling a finished turn failed" in caplog.text
    assert "embedding service down" in caplog.text


async def test_a_memory_without_storage_binds_once_per_storage() -> None:
    store = InMemoryStore()
    memory = Memory(semantic_recall=True, embedder=HashEmbedder(dimension=16))
    assert memory.bound(store) is memory.bound(store)
    assert memory.bound(store).storage is store and memory.storage is None

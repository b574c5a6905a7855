"""Every recorded ``@mastra/memory`` conversation (``conformance/memory/*.json``) replayed through
``Agent.stream`` with a ``Memory`` built from the vector's own description.

Each case is assembled from the file alone (memory options, agent, tools, processors, setup calls,
turns, scripted model steps, probes), so a new recording dropped into the folder runs unchanged.
Compared per turn (README "What must match"): the prompt of every model call, message by message;
the tools offered; the chunk types; what is stored afterwards (messages with roles, parts and
timestamps, thread title and metadata, working memory). Then the probes.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from agentstream.agent import Agent
from agentstream.chunks import chunk_to_dict, to_jsonable
from agentstream.memory import HistoryTokenLimiter, InMemoryVectorStore, Memory, ToolCallFilter
from agentstream.storage import BaseStore, InMemoryStore, MessageRecord, SQLiteStore, ThreadRecord
from agentstream.testing import ScriptedModel
from tests.agent.vector_tools import tools_for
from tests.conformance import load, to_wire, vector_files

from ._pg import pg_dsn, pgvector_dsn

__all__ = ["pgvector_dsn"]  # the fixture, used through pytest

FROZEN_MS = 946684800000
MINUTE_MS = 60_000

VECTORS = vector_files("memory")

# Vectors whose feature is not built yet (xfail strict: the entry must go when it passes).
NOT_BUILT: dict[str, str] = {}


def _params() -> list[Any]:
    out = []
    for path in VECTORS:
        marks = []
        if path.stem in NOT_BUILT:
            marks.append(pytest.mark.xfail(reason=f"not built yet: {NOT_BUILT[path.stem]}", strict=True))
        out.append(pytest.param(path, id=path.stem, marks=marks))
    return out


_ID = re.compile(r"^<id:\d+>$")


def _matches(expected: Any, actual: Any, path: str = "") -> None:
    """``actual`` equals ``expected`` modulo the recording's normalised random ids."""
    if isinstance(expected, str) and _ID.match(expected):
        assert isinstance(actual, str) and actual, path
        return
    if isinstance(expected, dict):
        assert isinstance(actual, dict), f"{path}: expected a dict, got {actual!r}"
        assert set(expected) == set(actual), f"{path}: keys {sorted(expected)} != {sorted(actual)}"
        for key in expected:
            _matches(expected[key], actual[key], f"{path}.{key}")
        return
    if isinstance(expected, list):
        assert isinstance(actual, list) and len(expected) == len(actual), (
            f"{path}: {json.dumps(expected)[:2000]} != {json.dumps(actual, default=str)[:2000]}"
        )
        for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
            _matches(e, a, f"{path}[{i}]")
        return
    assert expected == actual, f"{path}: {expected!r} != {actual!r}"


class Clock:
    """The recording's frozen clock: ``setup`` at 2000-01-01T00:00Z, turn ``k`` ``k`` minutes later."""

    def __init__(self) -> None:
        self.ms = FROZEN_MS

    def __call__(self) -> float:
        return self.ms


# ------------------------------------------------------------------------------ building a case


def _camel_to_snake(name: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()


def _schema(value: Any) -> Any:
    if isinstance(value, dict) and "$zodAsJsonSchema" in value:
        return value["$zodAsJsonSchema"]
    return value


def memory_kwargs(options: dict[str, Any] | None) -> dict[str, Any]:
    """Mastra's ``Memory`` ``options`` (camelCase) → our ``Memory(...)`` keyword arguments."""
    out: dict[str, Any] = {}
    for key, value in (options or {}).items():
        if key == "workingMemory":
            value = {_camel_to_snake(k): _schema(v) if k == "schema" else v for k, v in value.items()}
        elif key == "semanticRecall" and isinstance(value, dict):
            value = {_camel_to_snake(k): v for k, v in value.items()}
        out[_camel_to_snake(key)] = value
    return out


def keyword_embedder(vocabulary: list[str]) -> Callable[[list[str]], list[list[float]]]:
    """The README's embedder: per vocabulary word, how many words of the text equal it; then 1."""

    def embed(texts: list[str]) -> list[list[float]]:
        out = []
        for text in texts:
            words = re.findall(r"[a-z]+", text.lower())
            out.append([float(words.count(w)) for w in vocabulary] + [1.0])
        return out

    return embed


def _processors(vector: dict[str, Any]) -> list[Any]:
    out: list[Any] = []
    for spec in vector["agent"].get("inputProcessors", []):
        name = spec["processor"] if isinstance(spec, dict) else str(spec)
        options = spec.get("options", {}) if isinstance(spec, dict) else {}
        if name == "ToolCallFilter":
            out.append(ToolCallFilter(**{_camel_to_snake(k): v for k, v in (options or {}).items()}))
        elif name == "TokenLimiter":
            limit = options if isinstance(options, int) else options.get("limit", options.get("maxTokens"))
            out.append(HistoryTokenLimiter(limit))
        else:
            raise AssertionError(f"unknown input processor in the vector: {spec!r}")
    return out


def _title_model(vector: dict[str, Any]) -> ScriptedModel | None:
    steps = vector.get("titleModelSteps")
    return ScriptedModel(steps, model_id="mock-title-model-id") if steps is not None else None


class Case:
    """One vector's agent, memory, scripted model(s) and clock."""

    def __init__(self, vector: dict[str, Any], store: BaseStore, vectors: Any) -> None:
        self.vector = vector
        self.clock = Clock()
        self.store = store
        self.model = ScriptedModel(vector["modelSteps"])
        self.title_model = _title_model(vector)
        spec = vector["memory"]
        kwargs = memory_kwargs(spec.get("options"))
        self.embedded: list[list[str]] = []
        if "embedder" in spec:
            kwargs["vector"] = vectors
            embed = keyword_embedder(spec["embedder"]["vocabulary"])

            def recording(texts: list[str]) -> list[list[float]]:
                self.embedded.append(list(texts))
                return embed(texts)

            kwargs["embedder"] = recording
        if self.title_model is not None:
            kwargs["generate_title"] = {"model": self.title_model}
        self.memory = Memory(self.store, clock=self.clock, **kwargs)
        agent = vector["agent"]
        self.agent = Agent(
            id=agent["id"],
            name=agent["name"],
            instructions=agent["instructions"],
            model=self.model,
            tools=tools_for(vector),
            memory=self.memory,
            input_processors=_processors(vector),
        )

    async def setup(self) -> None:
        await self.store.init()
        for call in self.vector.get("setup") or []:
            assert call["action"] == "createThread", call
            args = call["args"]
            thread = await self.memory.create_thread(
                thread_id=args.get("threadId"),
                resource_id=args["resourceId"],
                title=args.get("title"),
                metadata=args.get("metadata"),
            )
            _matches(to_wire(call["returned"]), thread_json(thread), "setup.createThread")

    async def turn(self, turn: dict[str, Any]) -> list[dict[str, Any]]:
        self.clock.ms = FROZEN_MS + turn["index"] * MINUTE_MS
        memory = dict(turn["memory"])
        if "options" in memory:
            memory["options"] = {_camel_to_snake(k): v for k, v in memory["options"].items()}
        output = self.agent.stream(
            turn["input"], memory=memory, run_id=f"run-{turn['index'] + 1}", clock=self.clock
        )
        chunks = [chunk_to_dict(c) async for c in output.full_stream]
        await self.memory.drain()  # embeddings and titles run after the answer
        return chunks


# ------------------------------------------------------------------------------ reading storage


def _iso(value: datetime) -> str:
    return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def thread_json(thread: ThreadRecord) -> dict[str, Any]:
    return {
        "id": thread.id,
        "resourceId": thread.resource_id,
        "title": thread.title if thread.title is not None else "",
        "metadata": thread.metadata,
        "createdAt": _iso(thread.created_at),
        "updatedAt": _iso(thread.updated_at),
    }


def message_json(record: MessageRecord) -> dict[str, Any]:
    out = {
        "id": record.id,
        "content": record.content,
        "role": record.role,
        "createdAt": _iso(record.created_at),
        "threadId": record.thread_id,
        "resourceId": record.resource_id,
    }
    if record.type is not None and record.type != "v2":
        out["type"] = record.type
    return out


def _to_second(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Message timestamps compared to the second: the milliseconds Mastra's MessageList adds to keep
    them strictly increasing (+2, or +3 after a working-memory call) are its bookkeeping; ours
    keeps them increasing by +1. The parts' ``createdAt`` (the turn's clock) is compared exactly."""
    return [{**m, "createdAt": m["createdAt"][:19]} for m in messages]


async def _check_storage(case: Case, turn: dict[str, Any], where: str) -> None:
    expected = to_wire(turn["storageAfter"])
    thread_id = turn["memory"]["thread"]
    thread_id = thread_id["id"] if isinstance(thread_id, dict) else thread_id
    thread = await case.store.find_thread(thread_id)
    if expected.get("thread") is None:
        assert thread is None, where
    else:
        assert thread is not None, where
        exp = expected["thread"]
        got = thread_json(thread)
        for key in ("id", "resourceId", "title", "metadata", "createdAt"):
            _matches(exp[key], got[key], f"{where}.thread.{key}")
    messages = (await case.store.list_messages(thread_id)).messages
    _matches(
        _to_second(expected["messages"]), _to_second([message_json(m) for m in messages]), f"{where}.messages"
    )
    if "recall" in expected:
        page = await case.memory.recall_page(thread_id=thread_id, resource_id=turn["memory"]["resource"])
        got_page = {**page, "messages": [message_json(m) for m in page["messages"]]}
        exp_page = {**expected["recall"], "messages": _to_second(expected["recall"]["messages"])}
        _matches(exp_page, {**got_page, "messages": _to_second(got_page["messages"])}, f"{where}.recall")
    for exp_index in expected.get("vectorIndexes") or []:
        got_index = await case.memory.vector.describe_index(exp_index["indexName"])
        assert got_index == {k: v for k, v in exp_index.items() if k != "indexName"}, f"{where}.vectorIndexes"
    if "workingMemory" in expected:
        got_wm = await case.memory.get_working_memory(
            thread_id=thread_id, resource_id=turn["memory"]["resource"]
        )
        assert got_wm == expected["workingMemory"], f"{where}.workingMemory"
    if "threads" in expected:
        threads = await case.store.list_threads(resource_id=turn["memory"]["resource"])
        got_ids = [t.id for t in sorted(threads, key=lambda t: t.created_at)]
        assert got_ids == [t["id"] for t in expected["threads"]["threads"]], f"{where}.threads"


def _check_call(model: ScriptedModel, exp_call: dict[str, Any], where: str) -> None:
    call = model.calls[exp_call["index"]]
    _matches(to_wire(exp_call["prompt"]), to_jsonable(call.prompt), f"{where}.prompt")
    offered = exp_call["otherOptions"].get("tools", [])
    got_tools = to_jsonable(call.options.get("tools") or [])
    assert [t["name"] for t in got_tools] == [t["name"] for t in offered], f"{where}.tools"
    for exp_tool, got_tool in zip(offered, got_tools, strict=True):
        assert got_tool.get("description") == exp_tool.get("description"), f"{where}.tools description"
        _matches(exp_tool["inputSchema"], got_tool["inputSchema"], f"{where}.tools.{exp_tool['name']}")


def _check_embedding_calls(case: Case, expected: list[dict[str, Any]] | None, where: str) -> None:
    """Which texts were embedded (the README allows Mastra's extra dimension probe ``"a"``)."""
    if expected is None:
        return
    got = [texts for texts in case.embedded if texts != ["a"]]
    assert got == [c["values"] for c in expected if c["values"] != ["a"]], f"{where}.embeddingCalls"


async def _check_probes(case: Case, vector: dict[str, Any]) -> None:
    for i, probe in enumerate(vector.get("probes") or []):
        name, args = probe["probe"], probe["args"]
        where = f"probes[{i}] {name}"
        expected = to_wire(probe["returned"])
        if name == "getSystemMessage":
            got = await case.memory.get_system_message(
                thread_id=args[0]["threadId"], resource_id=args[0].get("resourceId")
            )
            assert got == expected, where
        elif name == "getWorkingMemoryTemplate":
            assert case.memory.get_working_memory_template() == expected, where
        elif name == "listTools":
            _matches(expected, case.memory.list_tools(), where)
        elif name == "getMergedThreadConfig":
            _matches(expected, case.memory.thread_config(), where)
        elif name == "recall":
            case.embedded.clear()
            page = await case.memory.recall_page(**{_camel_to_snake(k): v for k, v in args.items()})
            got = {**page, "messages": _to_second([message_json(m) for m in page["messages"]])}
            # ``usage`` is the AI SDK embedding model's token report; our Embedder protocol has none
            expected.pop("usage", None)
            _matches({**expected, "messages": _to_second(expected["messages"])}, got, where)
            _check_embedding_calls(case, probe.get("embeddingCalls"), where)
        elif name == "vectorQuery":
            assert case.memory.embedder is not None
            (vector,) = await case.memory.embedder.embed([args["text"]])
            assert vector == probe["queryVector"], where
            found = await case.memory.vector.query(probe["indexName"], vector, top_k=args["topK"])
            got = [{"id": m.id, "score": round(m.score, 4), "metadata": m.metadata} for m in found]
            for entry in (*expected, *got):  # milliseconds: see _to_second
                entry["metadata"]["created_at"] = entry["metadata"]["created_at"][:19]

            # entries of equal score may come in any order (a scan keeps insertion order, sqlite-vec
            # does not); the recall vectors never depend on such a tie (README)
            def order(e: dict[str, Any]) -> tuple[float, str]:
                return (-e["score"], str(e["metadata"]["content"]))

            _matches(sorted(expected, key=order), sorted(got, key=order), where)
        else:
            raise AssertionError(f"unknown probe {name!r}")


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def stores(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[tuple[BaseStore, Any]]:
    """The message store and vector store a case runs on: in memory, SQLite with sqlite-vec, or
    PostgreSQL with pgvector."""
    if request.param == "memory":
        yield InMemoryStore(), InMemoryVectorStore()
        return
    if request.param == "postgres":
        import psycopg

        from agentstream.memory import PgVectorStore
        from agentstream.storage import PostgresStore

        dsn, schema = pg_dsn(), f"mc_{uuid.uuid4().hex[:12]}"
        pg = PostgresStore(dsn, schema=schema)
        pgv = PgVectorStore(request.getfixturevalue("pgvector_dsn"), schema=schema)
        yield pg, pgv
        await pg.close()
        await pgv.close()
        async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
            await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        return
    from agentstream.memory import SqliteVecStore

    store, vectors = SQLiteStore(tmp_path / "m.db"), SqliteVecStore(tmp_path / "v.db")
    yield store, vectors
    await store.close()
    await vectors.close()


@pytest.mark.parametrize("path", _params())
async def test_vector(path: Path, stores: tuple[BaseStore, Any]) -> None:
    vector = load(path)
    assert vector["kind"] == "memory"
    case = Case(vector, *stores)
    await case.setup()
    for turn in vector["turns"]:
        where = f"turns[{turn['index']}]"
        before = len(case.model.calls)
        case.embedded.clear()
        chunks = await case.turn(turn)
        _check_embedding_calls(case, turn.get("embeddingCalls"), where)
        assert [c["type"] for c in chunks] == [c["type"] for c in turn["expectedChunks"]], where
        assert len(case.model.calls) - before == len(turn["modelCalls"]), f"{where} model calls"
        for exp_call in turn["modelCalls"]:
            _check_call(case.model, exp_call, f"{where}.modelCalls[{exp_call['index']}]")
        if case.title_model is not None:
            for exp_call in turn.get("titleModelCalls", []):
                _check_call(case.title_model, exp_call, f"{where}.titleModelCalls[{exp_call['index']}]")
        await _check_storage(case, turn, where)
    await _check_probes(case, vector)

"""``agent.stream(..., memory={"thread", "resource"})`` over the in-memory and SQLite stores."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agentstream import Mastra
from agentstream.agent import Agent
from agentstream.memory import Memory, db_messages_to_prompt, resolve_memory_option
from agentstream.storage import BaseStore, InMemoryStore, SQLiteStore
from agentstream.testing import ScriptedModel
from agentstream.tools import Tool, ToolContext

USAGE = {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}
SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}


@pytest.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[BaseStore]:
    s: BaseStore = InMemoryStore() if request.param == "memory" else SQLiteStore(tmp_path / "m.db")
    await s.init()
    yield s
    await s.close()


def text_step(text: str) -> list[dict[str, Any]]:
    return [
        {"type": "stream-start", "warnings": []},
        {"type": "text-start", "id": "t"},
        {"type": "text-delta", "id": "t", "delta": text},
        {"type": "text-end", "id": "t"},
        {"type": "finish", "finishReason": "stop", "usage": USAGE},
    ]


def call_step(call_id: str, q: str) -> list[dict[str, Any]]:
    return [
        {"type": "stream-start", "warnings": []},
        {"type": "tool-call", "toolCallId": call_id, "toolName": "lookup", "input": json.dumps({"q": q})},
        {"type": "finish", "finishReason": "tool-calls", "usage": USAGE},
    ]


async def lookup(args: dict[str, Any], ctx: ToolContext) -> Any:
    ctx.writer.custom({"type": "data-progress", "data": {"q": args["q"]}})
    ctx.writer.custom({"type": "data-ephemeral", "data": 1, "transient": True})
    if args["q"] == "boom":
        raise RuntimeError("lookup broke")
    return {"answer": args["q"].upper()}


def make(store: BaseStore, steps: list[list[dict[str, Any]]]) -> tuple[Agent, ScriptedModel]:
    model = ScriptedModel(steps)
    tool = Tool(id="lookup", description="d", input_schema=SCHEMA, execute=lookup)
    agent = Agent(id="a", instructions="sys", model=model, tools=[tool], memory=Memory(store))
    return agent, model


MEM = {"thread": "t1", "resource": "u1"}


async def test_turn_is_stored_and_recalled(store: BaseStore) -> None:
    agent, model = make(store, [call_step("c1", "x"), text_step("X it is."), text_step("Again: X.")])
    out = await agent.generate("look up x", memory=MEM)
    assert out.text == "X it is."
    thread = await store.get_thread("t1")
    assert thread.resource_id == "u1"
    stored = (await store.list_messages("t1")).messages
    assert [m.role for m in stored] == ["user", "assistant"]
    created = stored[0].content["parts"][0]["createdAt"]
    assert isinstance(created, int)
    assert stored[0].content == {
        "format": 2,
        "parts": [{"type": "text", "text": "look up x", "createdAt": created}],
        "content": "look up x",
    }
    parts = stored[1].content["parts"]
    # as Mastra: the first step's step-start is not stored (conformance/memory/tool-call-stored-messages)
    assert [p["type"] for p in parts] == [
        "tool-invocation",
        "data-progress",
        "step-start",
        "text",
    ]
    inv = parts[0]["toolInvocation"]
    assert inv == {
        "state": "result",
        "toolCallId": "c1",
        "toolName": "lookup",
        "args": {"q": "x"},
        "result": {"answer": "X"},
    }
    assert parts[1]["data"] == {"q": "x"}  # transient data parts are not kept
    assert parts[2]["model"] == "mock-provider/mock-model-id"
    assert stored[1].content["metadata"] == {"modelId": "mock-model-id", "provider": "mock-provider"}
    assert stored[1].content["content"] == "X it is."
    assert stored[1].type == "v2"

    # the next turn sees the history in front of the new input
    await agent.generate("and again?", memory=MEM)
    prompt = model.calls[2].prompt
    assert [m["role"] for m in prompt] == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert prompt[2]["content"] == [
        {"type": "tool-call", "toolCallId": "c1", "toolName": "lookup", "input": {"q": "x"}}
    ]
    assert prompt[3]["content"][0]["output"] == {"type": "json", "value": {"answer": "X"}}
    assert prompt[4]["content"] == [
        {
            "type": "text",
            "text": "X it is.",
            "providerOptions": {"mastra": {"createdAt": parts[3]["createdAt"]}},
        }
    ]
    assert len((await store.list_messages("t1")).messages) == 4


async def test_tool_error_thread_object_and_last_messages(store: BaseStore) -> None:
    model = ScriptedModel([call_step("c1", "boom"), text_step("Sorry."), text_step("Hi.")])
    tool = Tool(id="lookup", description="d", input_schema=SCHEMA, execute=lookup)
    agent = Agent(id="a", model=model, tools=[tool], memory=Memory(store, last_messages=1))
    memory = {"thread": {"id": "t2", "title": "Errors", "metadata": {"k": 1}}, "resource": "u1"}
    await agent.generate("boom please", memory=memory)
    thread = await store.get_thread("t2")
    assert thread.title == "Errors" and thread.metadata == {"k": 1}
    stored = (await store.list_messages("t2")).messages
    inv = next(p for p in stored[1].content["parts"] if p["type"] == "tool-invocation")["toolInvocation"]
    assert inv["isError"] is True and "lookup broke" in inv["result"]
    assert db_messages_to_prompt(stored)[2]["content"][0]["output"]["type"] == "error-text"
    await agent.generate("hello", memory=memory)
    # last_messages=1: only the stored assistant message comes back, after Mastra's "." user turn
    roles = [m["role"] for m in model.calls[2].prompt]
    assert roles == ["user", "assistant", "tool", "assistant", "user"]
    assert model.calls[2].prompt[0]["content"] == [{"type": "text", "text": "."}]


async def test_mastra_storage_is_the_default_memory(store: BaseStore) -> None:
    agent = Agent(id="plain", model=ScriptedModel([text_step("ok")]))
    with pytest.raises(ValueError, match="memory= needs"):
        agent.stream("hi", memory=MEM)
    Mastra(agents={"plain": agent}, storage=store)
    await agent.generate("hi", memory=MEM)
    assert len((await store.list_messages("t1")).messages) == 2
    with pytest.raises(ValueError, match="belongs to resource"):
        await agent.generate("hi", memory={"thread": "t1", "resource": "someone-else"})


async def test_an_aborted_turn_keeps_its_user_message_but_not_a_partial_answer(store: BaseStore) -> None:
    # The user's message is stored when the turn is accepted (issue 22 item 6); the aborted
    # answer is not, as Mastra's default (`persistPartialOnAbort: false`).
    from agentstream._abort import AbortController

    ctrl = AbortController()
    agent, _ = make(store, [text_step("never")])
    ctrl.abort()
    out = agent.stream("hi", memory=MEM, abort_signal=ctrl.signal)
    types = [c.type async for c in out.full_stream]
    assert "abort" in types
    stored = (await store.list_messages("t1")).messages
    assert [(m.role, m.content["content"]) for m in stored] == [("user", "hi")]


async def test_the_user_message_is_stored_before_the_first_chunk(store: BaseStore) -> None:
    import asyncio

    gate = asyncio.Event()

    class Gated:
        specification_version = "v2"
        provider = "test"
        model_id = "gated"

        async def _play(self) -> AsyncIterator[dict[str, Any]]:
            await gate.wait()
            for part in text_step("ok"):
                yield part

        def do_stream(self, options: Any) -> AsyncIterator[dict[str, Any]]:
            return self._play()

    agent = Agent(id="a", model=Gated(), memory=Memory(store))
    stream = agent.stream("remember me", memory=MEM).full_stream
    first = await stream.__anext__()  # the first frame a client could get
    assert first.type == "start"
    stored = (await store.list_messages("t1")).messages
    assert [(m.role, m.content["content"]) for m in stored] == [("user", "remember me")]
    gate.set()
    async for _ in stream:
        pass
    assert [m.role for m in (await store.list_messages("t1")).messages] == ["user", "assistant"]


async def test_a_turn_blocked_by_a_tripwire_takes_its_user_message_out_again(store: BaseStore) -> None:
    class Refuse:
        id = "refuse"

        async def process_input(self, *, messages: list[dict[str, Any]], abort: Any, **_: Any) -> None:
            abort("not this prompt")

    model = ScriptedModel([text_step("never")])
    agent = Agent(id="guarded", model=model, input_processors=[Refuse()], memory=Memory(store))
    out = await agent.generate("forbidden", memory=MEM)
    assert out.tripwire is not None
    assert (await store.list_messages("t1")).messages == []


def test_memory_option_validation() -> None:
    assert resolve_memory_option({"thread": "t", "resource": "r"}).thread_id == "t"
    with pytest.raises(ValueError, match="thread id"):
        resolve_memory_option({"resource": "r"})
    with pytest.raises(ValueError, match="resource id"):
        resolve_memory_option({"thread": "t"})
    with pytest.raises(TypeError, match="unknown memory option"):
        resolve_memory_option({"thread": "t", "resource": "r", "lastMessages": 3})
    with pytest.raises(TypeError):
        resolve_memory_option("t")
    with pytest.raises(ValueError):
        Memory(last_messages=-1)
    with pytest.raises(TypeError, match="memory must be a Memory"):
        Agent(id="x", model="demo", memory={"thread": "t"})  # type: ignore[arg-type]


async def test_a_user_message_sent_with_its_id_is_stored_under_it(store: BaseStore) -> None:
    # Mastra's MessageList keeps an input message's id: a client that shows the message before the
    # answer (Studio's pending copy) finds the same message in the thread afterwards.
    agent, model = make(store, [text_step("Hi."), text_step("Hello again.")])
    await agent.generate(
        [
            {"id": "client-1", "role": "user", "content": "hello"},
            {"role": "user", "content": "no id"},
        ],
        memory=MEM,
    )
    stored = (await store.list_messages("t1")).messages
    assert [m.role for m in stored] == ["user", "user", "assistant"]
    assert stored[0].id == "client-1" and stored[1].id not in ("client-1", "") and stored[2].id != "client-1"
    assert all("id" not in m for m in model.calls[0].prompt)  # the model's input is unchanged
    await agent.generate("next", memory=MEM)
    assert [m.id for m in (await store.list_messages("t1")).messages].count("client-1") == 1

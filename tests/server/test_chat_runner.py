"""`chat_route(..., runner=...)`: the route checks, claims and dispatches a JSON `ChatTurn`, then
follows the stream the runner's worker writes (`run_chat_turn`). In-process runner here; the real
processes (DBOS workers, Redis) are in tests/durable/test_chat_turns.py."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request

from agentstream._abort import AbortController
from agentstream._demo import demo_agent
from agentstream._mastra import Mastra
from agentstream.ai_sdk import handle_chat_stream, run_chat_turn
from agentstream.resumable import ChatRunner, ChatTurn, MemoryStreamStore, StreamStore, chat_stream_key
from agentstream.server import RequestGuard, chat_route


class LocalRunner:
    """Runs each turn in a task of this process, as a worker would (same `run_chat_turn`)."""

    def __init__(self, mastra: Any, store: StreamStore) -> None:
        self.mastra, self.store = mastra, store
        self.turns: list[ChatTurn] = []
        self.cancelled: list[str] = []
        self.running: dict[str, AbortController] = {}
        self.tasks: list[asyncio.Task[None]] = []

    async def dispatch(self, turn: ChatTurn) -> None:
        assert json.loads(json.dumps(turn)) == turn  # JSON only: it crosses a process boundary
        self.turns.append(turn)
        controller = self.running[turn["stream_id"]] = AbortController()
        run = run_chat_turn(self.mastra, self.store, turn, abort_signal=controller.signal)
        self.tasks.append(asyncio.create_task(run))

    async def cancel(self, stream_id: str) -> bool:
        self.cancelled.append(stream_id)
        if stream_id in self.running:
            self.running[stream_id].abort()
        return stream_id in self.running


def request(text: str = "What's the weather in Berlin?", chat_id: str = "chat-1") -> dict[str, Any]:
    return {
        "id": chat_id,
        "trigger": "submit-message",
        "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": text}]}],
    }


def chunks_of(text: str) -> list[dict[str, Any]]:
    payloads = [line.removeprefix("data: ") for line in text.splitlines() if line.startswith("data: ")]
    assert payloads[-1] == "[DONE]"
    return [json.loads(p) for p in payloads[:-1]]


def client(**route: Any) -> httpx.AsyncClient:
    app = Starlette(routes=[chat_route(Mastra(agents={"demo": demo_agent()}), **route)])
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1")


async def test_a_turn_answered_through_a_runner_is_the_answer_the_route_gives_itself() -> None:
    store = MemoryStreamStore()
    runner = LocalRunner(Mastra(agents={"demo": demo_agent()}), store)
    async with client(stream_store=store, runner=runner, send_reasoning=True) as remote:
        answer = await remote.post(
            "/chat/demo", json=request(), headers={"traceparent": "00-" + "a" * 32 + "-" + "b" * 16 + "-01"}
        )
    async with client(send_reasoning=True) as local:
        expected = await local.post("/chat/demo", json=request())
    got, want = chunks_of(answer.text), chunks_of(expected.text)
    assert got[1:] == want[1:] and got[0]["type"] == "start"
    [turn] = runner.turns
    assert turn["agent_id"] == "demo" and turn["chat_id"] == "chat-1" and turn["owner"] is None
    assert turn["traceparent"] == "00-" + "a" * 32 + "-" + "b" * 16 + "-01"
    assert turn["options"]["send_reasoning"] is True and turn["options"]["version"] == "v5"
    assert turn["body"] == request()
    assert await store.active(chat_stream_key("chat-1")) is None  # the worker finished the stream


async def test_the_turn_carries_the_principals_owner_key() -> None:
    store = MemoryStreamStore()
    runner = LocalRunner(Mastra(agents={"demo": demo_agent()}), store)

    async def auth(request: Request) -> object:
        return {"id": "alice"}

    async with client(stream_store=store, runner=runner, guard=RequestGuard(auth=auth)) as app:
        answer = await app.post("/chat/demo", json=request())
    assert answer.status_code == 200
    assert runner.turns[0]["owner"] == "dict:alice"
    assert (await store.length(runner.turns[0]["stream_id"])) == len(chunks_of(answer.text))


async def test_a_new_answer_for_the_chat_cancels_the_previous_turn() -> None:
    store = MemoryStreamStore()
    runner = LocalRunner(Mastra(agents={"demo": demo_agent()}), store)
    async with client(stream_store=store, runner=runner) as app:
        first_stream = await store.start(
            chat_stream_key("chat-1"), owner=None
        )  # a turn still running elsewhere
        answer = await app.post("/chat/demo", json=request())
    assert answer.status_code == 200
    assert runner.cancelled == [first_stream]
    assert runner.turns[0]["stream_id"] != first_stream


@pytest.mark.parametrize(
    ("path", "body", "status", "message"),
    [
        ("/chat/nope", request(), 404, "Agent nope not found"),
        ("/chat/demo", {"id": "c", "messages": []}, 400, "the request has no message to answer"),
        ("/chat/demo", {"id": "c", "messages": [{"id": "m", "role": "user", "parts": "x"}]}, 400, "parts"),
        ("/chat/demo", [1], 400, "expected the request body to be a JSON object"),
    ],
)
async def test_a_refused_request_is_json_and_nothing_is_dispatched_or_claimed(
    path: str, body: Any, status: int, message: str
) -> None:
    store = MemoryStreamStore()
    runner = LocalRunner(Mastra(agents={"demo": demo_agent()}), store)
    async with client(stream_store=store, runner=runner) as app:
        answer = await app.post(path, json=body)
    assert answer.status_code == status
    assert message in answer.json()["error"]["message"]
    assert runner.turns == [] and await store.active(chat_stream_key("c")) is None


def test_a_runner_needs_a_store_and_no_local_callables() -> None:
    mastra = Mastra(agents={"demo": demo_agent()})
    runner = LocalRunner(mastra, MemoryStreamStore())
    assert isinstance(runner, ChatRunner)
    with pytest.raises(ValueError, match="needs the stream_store its workers write to"):
        chat_route(mastra, runner=runner)
    with pytest.raises(ValueError, match="experimental_transform, on_error cannot travel to a worker"):
        chat_route(
            mastra,
            stream_store=MemoryStreamStore(),
            runner=runner,
            experimental_transform=lambda: None,  # type: ignore[arg-type,return-value]
            on_error=str,
        )
    with pytest.raises(TypeError, match="expected a ChatRunner, got str"):
        chat_route(mastra, stream_store=MemoryStreamStore(), runner="runner")  # type: ignore[arg-type]


def turn(stream_id: str, agent_id: str = "demo") -> ChatTurn:
    return ChatTurn(
        agent_id=agent_id,
        body=request(),
        chat_id="chat-1",
        stream_id=stream_id,
        owner=None,
        traceparent=None,
        options={
            "version": "v5",
            "send_start": True,
            "send_finish": True,
            "send_reasoning": False,
            "send_sources": False,
            "send_goals": False,
            "include_sub_agent_metadata": False,
            "allow_system_messages": False,
        },
    )


async def test_a_worker_without_the_agent_answers_with_one_error_chunk() -> None:
    store = MemoryStreamStore()
    stream_id = await store.start(chat_stream_key("chat-1"), owner=None)
    await run_chat_turn(Mastra(agents={"demo": demo_agent()}), store, turn(stream_id, "other"))
    chunks = [json.loads(c) async for c in store.read(stream_id)]
    assert chunks == [{"type": "error", "errorText": "Agent other not found"}]


async def test_a_rerun_of_a_finished_turn_writes_nothing() -> None:
    store = MemoryStreamStore()
    mastra = Mastra(agents={"demo": demo_agent()})
    stream_id = await store.start(chat_stream_key("chat-1"), owner=None)
    await run_chat_turn(mastra, store, turn(stream_id))
    written = [c async for c in store.read(stream_id)]
    await run_chat_turn(mastra, store, turn(stream_id))  # a worker that took over too late
    assert [c async for c in store.read(stream_id)] == written


async def test_a_rerun_after_a_crash_continues_where_the_first_stopped() -> None:
    store = MemoryStreamStore()
    mastra = Mastra(agents={"demo": demo_agent()})
    reference = await store.start(chat_stream_key("chat-0"), owner=None)
    await run_chat_turn(mastra, store, turn(reference))
    full = [json.loads(c) async for c in store.read(reference)]
    stream_id = await store.start(chat_stream_key("chat-1"), owner=None)
    # The first worker wrote five chunks, then died; the re-run starts again from chunk 0.
    await store.append(stream_id, *[json.dumps(c).encode() for c in full[:5]], at=0)
    await run_chat_turn(mastra, store, turn(stream_id))
    rerun = [json.loads(c) async for c in store.read(stream_id)]
    # The first worker's chunks (its start's message id too) stay; the rest follow, none twice.
    assert rerun == full


async def test_another_user_cannot_cancel_or_take_over_a_chats_running_turn() -> None:
    from agentstream.server._resume import stream_owner
    from agentstream.server._route import owner_key

    store = MemoryStreamStore()
    runner = LocalRunner(Mastra(agents={"demo": demo_agent()}), store)

    async def auth(request: Request) -> object:
        return {"id": request.headers["x-user"]}

    running = await store.start(chat_stream_key("chat-1"), owner=stream_owner(owner_key({"id": "alice"})))
    async with client(stream_store=store, runner=runner, guard=RequestGuard(auth=auth)) as app:
        answer = await app.post("/chat/demo", json=request(), headers={"x-user": "mallory"})
    assert answer.status_code == 403 and answer.json()["error"]["path"] == "id"
    assert runner.cancelled == [] and runner.turns == []
    found = await store.active(chat_stream_key("chat-1"))
    assert found is not None and found.stream_id == running


class Killed(Exception):
    """The worker process dies here."""


class CrashingStore(MemoryStreamStore):
    """Its first writer dies once ``after`` chunks are written, or else before it finishes the
    stream (later writers are fine)."""

    def __init__(self, after: int) -> None:
        super().__init__()
        self.after = after
        self.offered: list[dict[str, Any]] = []  # every chunk a writer gave, written or skipped

    async def append(self, stream_id: str, *chunks: bytes, at: int | None = None) -> None:
        self.offered += [json.loads(c) for c in chunks]
        start = at or 0
        if self.after >= 0 and start + len(chunks) > self.after:
            await super().append(stream_id, *chunks[: max(self.after - start, 0)], at=at)
            self.after = -1
            raise Killed
        await super().append(stream_id, *chunks, at=at)

    async def finish(self, stream_id: str) -> None:
        if self.after >= 0:
            self.after = -1
            raise Killed
        await super().finish(stream_id)


async def test_a_rerun_names_the_run_as_the_first_attempt_did() -> None:
    """The first attempt wrote the approval request (with its run id) and died; the takeover's run
    must be that run, or the user's approval would name a run that never suspended."""
    mastra = Mastra(agents={"demo": demo_agent()})
    book = request("Book a table at Luigi for 2")
    reference = MemoryStreamStore()
    whole = await reference.start("chat-0", owner=None)
    await run_chat_turn(mastra, reference, turn(whole) | {"body": book})
    first = [json.loads(c) async for c in reference.read(whole)]
    approval_at = [c["type"] for c in first].index("data-tool-call-approval")
    assert approval_at == len(first) - 1  # the answer ends waiting for the approval
    store = CrashingStore(after=len(first))  # dies after the last chunk, before finishing
    stream_id = await store.start(chat_stream_key("chat-1"), owner=None)
    with pytest.raises(Killed):
        await run_chat_turn(mastra, store, turn(stream_id) | {"body": book})
    written: list[dict[str, Any]] = []
    async for raw in store.read(stream_id):  # an unfinished stream: read what is there, then stop
        written.append(json.loads(raw))
        if len(written) == await store.length(stream_id):
            break
    assert len(written) == len(first) and written[-1]["type"] == "data-tool-call-approval"
    await run_chat_turn(mastra, store, turn(stream_id) | {"body": book})  # the takeover
    chunks = [json.loads(c) async for c in store.read(stream_id)]
    assert [c["type"] for c in chunks] == [c["type"] for c in first]
    run_id = written[-1]["data"]["runId"]
    approvals = [c["data"]["runId"] for c in store.offered if c["type"] == "data-tool-call-approval"]
    assert approvals == [run_id, run_id]  # the takeover re-ran that run, not a new one
    # The user approves the run the client saw: it resumes (its snapshot and owner are that id's).
    resumed = await handle_chat_stream(
        mastra=mastra,
        agent_id="demo",
        params={**book, "runId": run_id, "resumeData": {"approved": True}},
    )
    outputs = [c async for c in resumed if c["type"] == "tool-output-available"]
    assert outputs and outputs[0]["output"]["restaurant"] == "Luigi"

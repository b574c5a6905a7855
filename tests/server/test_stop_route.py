"""`stop_route`: ``DELETE …/{chat_id}/stream`` stops the chat's running answer wherever it runs (this
process, or a worker through the runner), for its owner only; the stream then ends as an aborted
answer's does. Real worker processes: tests/durable/test_chat_turns.py."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette

from agentstream._abort import AbortError, AbortSignal
from agentstream._mastra import Mastra
from agentstream.agent import Agent
from agentstream.ai_sdk import ChatRequestError
from agentstream.resumable import ChatTurn, MemoryStreamStore, StreamStore, chat_stream_key
from agentstream.server import Jobs, RequestGuard, chat_route, resume_route, stop_route
from tests.security._support import x_user
from tests.server.test_chat_runner import LocalRunner

ALICE, BOB = {"x-user": "alice"}, {"x-user": "bob"}
STREAM = "/api/chat/chat-1/stream"


class WaitingModel:
    """Streams its first words, then waits for ``go`` (never given here) or the abort signal."""

    specification_version = "v2"
    provider = "test"
    model_id = "waiting"

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.go = asyncio.Event()
        self.signals: list[Any] = []

    def do_stream(self, options: Any) -> AsyncIterator[dict[str, Any]]:
        self.signals.append(options.get("abort_signal"))
        return self._play(options["abort_signal"])

    async def _play(self, signal: AbortSignal) -> AsyncIterator[dict[str, Any]]:
        yield {"type": "stream-start", "warnings": []}
        yield {"type": "text-start", "id": "t1"}
        yield {"type": "text-delta", "id": "t1", "delta": "Sunny "}
        self.started.set()
        # As a provider's request does: the abort signal ends the wait.
        signal.add_listener(lambda _reason: self.go.set())
        await self.go.wait()
        if signal.aborted:
            raise AbortError("the request was aborted")
        yield {"type": "text-end", "id": "t1"}
        yield {"type": "finish", "finishReason": "stop", "usage": {"inputTokens": 1, "outputTokens": 1}}


def app(mastra: Mastra, store: StreamStore, runner: Any = None, **stop: Any) -> httpx.AsyncClient:
    guard = RequestGuard(auth=x_user)
    jobs = Jobs(store)  # the app's job service, shared by its routes
    routes = [
        chat_route(mastra, "/api/chat", agent="weather", jobs=jobs, runner=runner, guard=guard),
        resume_route(jobs, "/api/chat/{chat_id}/stream", guard=guard),
        stop_route(jobs, "/api/chat/{chat_id}/stream", guard=guard, runner=runner, **stop),
    ]
    transport = httpx.ASGITransport(app=Starlette(routes=routes))
    return httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1", timeout=30)


def body(chat_id: str = "chat-1") -> dict[str, Any]:
    user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Weather in Berlin?"}]}
    return {"id": chat_id, "messages": [user], "trigger": "submit-message"}


def types(text: str) -> list[str]:
    payloads = [line.removeprefix("data: ") for line in text.splitlines() if line.startswith("data: ")]
    assert payloads[-1] == "[DONE]"
    return [json.loads(p)["type"] for p in payloads[:-1]]


async def test_the_owner_stops_an_answer_running_here_and_nobody_else_can() -> None:
    model, store = WaitingModel(), MemoryStreamStore()
    mastra = Mastra(agents={"weather": Agent(id="weather", instructions="Be brief.", model=model)})
    async with app(mastra, store) as c:
        answer = asyncio.create_task(c.post("/api/chat", json=body(), headers=ALICE))
        await model.started.wait()
        stranger = await c.delete(STREAM, headers=BOB)
        foreign = await c.delete(STREAM, headers={**ALICE, "origin": "https://evil.example"})
        anonymous = await c.delete(STREAM)
        assert not answer.done() and not model.signals[0].aborted  # still running
        stopped = await c.delete(STREAM, headers=ALICE)
        assert await store.active(chat_stream_key("chat-1")) is None  # the 204 came once the answer had ended
        await answer
        resumed = await c.get(STREAM, headers=ALICE)
        again = await c.delete(STREAM, headers=ALICE)
    assert stranger.status_code == 204  # nothing of alice's to see or stop
    assert foreign.status_code == 403 and anonymous.status_code == 401
    assert stopped.status_code == 204 and model.signals[0].aborted
    # the model never went on (no step finished); the open text part is ended before the abort
    # (docs/decisions/issue-21-endings-over-http.md)
    assert types(answer.result().text)[-3:] == ["text-end", "abort", "finish"]
    assert "finish-step" not in types(answer.result().text)
    assert resumed.status_code == 204 and again.status_code == 204


async def test_an_answer_on_a_worker_is_cancelled_through_the_runner() -> None:
    model, store = WaitingModel(), MemoryStreamStore()
    mastra = Mastra(agents={"weather": Agent(id="weather", instructions="Be brief.", model=model)})
    runner = LocalRunner(mastra, store)
    async with app(mastra, store, runner) as c:
        answer = asyncio.create_task(c.post("/api/chat", json=body(), headers=ALICE))
        await model.started.wait()
        stopped = await c.delete(STREAM, headers=ALICE)
        assert await store.active(chat_stream_key("chat-1")) is None
        await answer
    assert stopped.status_code == 204
    assert runner.cancelled == [runner.turns[0]["stream_id"]]
    assert types(answer.result().text)[-2:] == ["abort", "finish"]


class Unstarted:
    """A runner whose turns no worker ever takes (or whose worker died): cancelling says whether
    the turn had started; nothing ends its stream."""

    def __init__(self, started: bool) -> None:
        self.started = started
        self.turns: list[ChatTurn] = []
        self.dispatched = asyncio.Event()

    async def dispatch(self, turn: ChatTurn) -> None:
        self.turns.append(turn)
        self.dispatched.set()

    async def cancel(self, stream_id: str) -> bool:
        return self.started


@pytest.mark.parametrize("started", [False, True], ids=["never-started", "worker-gone"])
async def test_an_answer_no_worker_ends_is_ended_by_the_server(started: bool) -> None:
    store = MemoryStreamStore()
    mastra = Mastra(agents={"weather": Agent(id="weather", instructions="Be brief.", model=WaitingModel())})
    runner = Unstarted(started)
    async with app(mastra, store, runner, stop_timeout_s=0.2) as c:
        answer = asyncio.create_task(c.post("/api/chat", json=body(), headers=ALICE))
        await asyncio.wait_for(runner.dispatched.wait(), 10)
        stopped = await c.delete(STREAM, headers=ALICE)
        text = (await answer).text
    assert stopped.status_code == 204
    assert types(text) == ["start", "abort", "finish"]


async def test_an_answer_another_server_runs_in_its_process_is_409() -> None:
    store = MemoryStreamStore()
    mastra = Mastra(agents={"weather": Agent(id="weather", instructions="Be brief.", model=WaitingModel())})
    async with app(mastra, store) as c:
        from agentstream.server._resume import stream_owner

        await store.start(
            chat_stream_key("chat-1"), owner=stream_owner("alice")
        )  # recorded by another server
        refused = await c.delete(STREAM, headers=ALICE)
    assert refused.status_code == 409
    assert "running in another server process" in refused.json()["error"]["message"]


def test_configuration_errors_name_what_was_wrong() -> None:
    store = MemoryStreamStore()
    with pytest.raises(ValueError, match=r"needs a \{chat_id\} parameter"):
        stop_route(store, "/api/chat/stream")
    with pytest.raises(TypeError, match="expected a ChatRunner, got int"):
        stop_route(store, runner=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="stop_timeout_s must be > 0 seconds, got 0"):
        stop_route(store, stop_timeout_s=0)


async def test_the_built_in_apps_until_idle_answer_ends_with_abort_and_finish() -> None:
    # `create_app`'s demo streams every chat until idle (background tasks): a stop mid-answer must
    # still end the stream as an aborted run's (the turn in flight ends itself), not cut it short.
    from agentstream._app import create_app

    store = MemoryStreamStore()
    application = create_app(smooth=False, stream_store=store)
    transport = httpx.ASGITransport(app=application)
    request = body()
    request["messages"][0]["parts"][0]["text"] = "Tell me a long story about rainbows"
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1", timeout=30) as c:
        answer = asyncio.create_task(c.post("/api/chat", json=request))
        # Mid-answer: a few chunks written (the demo model streams for seconds).
        while (active := await store.active(chat_stream_key("chat-1"))) is None or await store.length(
            active.stream_id
        ) < 5:
            await asyncio.sleep(0.01)
        stopped = await c.delete(STREAM)
        text = (await answer).text
    assert stopped.status_code == 204
    assert types(text)[-2:] == ["abort", "finish"]


async def test_a_cors_preflight_allows_delete_for_an_allowed_origin_only() -> None:
    store = MemoryStreamStore()
    guard = RequestGuard(cors=True, allowed_origins=["https://app.example"])
    application = Starlette(routes=[stop_route(store, "/api/chat/{chat_id}/stream", guard=guard)])
    transport = httpx.ASGITransport(app=application)
    preflight = {"access-control-request-method": "DELETE"}
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
        allowed = await c.options(STREAM, headers={**preflight, "origin": "https://app.example"})
        refused = await c.options(STREAM, headers={**preflight, "origin": "https://evil.example"})
        nothing = await c.delete(STREAM, headers={"origin": "https://app.example"})
    assert allowed.status_code == 204
    assert allowed.headers["access-control-allow-methods"] == "DELETE, OPTIONS"
    assert allowed.headers["access-control-allow-origin"] == "https://app.example"
    assert refused.status_code == 403
    assert (
        nothing.status_code == 204 and nothing.headers["access-control-allow-origin"] == "https://app.example"
    )


async def test_an_answer_that_ended_meanwhile_is_no_conflict() -> None:
    from agentstream.server._stop import stop_answer

    store = MemoryStreamStore()
    stream_id = await store.start(chat_stream_key("chat-1"), owner=None)
    await store.finish(stream_id)  # ended between the route's lookup and the stop
    await stop_answer(store, "chat-1", stream_id)  # no 409: nothing is left to stop
    other = await store.start(
        chat_stream_key("chat-1"), owner=None
    )  # another server's newer answer: that one is 409
    with pytest.raises(ChatRequestError, match="running in another server process"):
        await stop_answer(store, "chat-1", other)

"""Every until-idle stream ends with its turn's ``finish`` (or an ``error`` that says why), whatever
the background tasks' queueing (issue 22 item 5).

Deterministic: the idle window is a fake (`FakeWindow`) the test fires; every wait is on an event
bumped by a stream's reader or a window, bounded by a timeout, never a sleep.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from agentstream.agent import Agent
from agentstream.ai_sdk import UIChunkConverter
from agentstream.background import BackgroundTaskManager, UntilIdleOutput, stream_until_idle
from agentstream.chunks import Chunk, chunk_to_dict
from agentstream.storage import InMemoryStore
from agentstream.testing import ScriptedModel
from agentstream.tools import Tool, ToolContext
from tests.background.test_until_idle import SCHEMA, _steps

WINDOW_MS = 250


class Ticker:
    """Wakes whoever waits for a condition each time something it may depend on changed."""

    def __init__(self) -> None:
        self._event = asyncio.Event()

    def bump(self) -> None:
        self._event.set()
        self._event = asyncio.Event()

    async def until(self, condition: Callable[[], bool], timeout_s: float = 10) -> None:
        async with asyncio.timeout(timeout_s):
            while not condition():
                await self._event.wait()


class FakeWindow:
    """A stream's idle window: it passes only when the test fires it."""

    def __init__(self, ticker: Ticker) -> None:
        self.ticker = ticker
        self.calls = 0
        self.open: asyncio.Future[None] | None = None

    async def __call__(self, seconds: float) -> None:
        assert seconds == WINDOW_MS / 1000
        self.calls += 1
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.open = future
        self.ticker.bump()
        try:
            await future
        finally:
            if self.open is future:
                self.open = None
            self.ticker.bump()

    def fire(self) -> None:
        assert self.open is not None, "the stream is not waiting in its idle window"
        self.open.set_result(None)


class Chat:
    def __init__(self, out: UntilIdleOutput, window: FakeWindow, ticker: Ticker) -> None:
        self.out, self.window, self.ticker = out, window, ticker
        self.chunks: list[Chunk] = []
        self.done = False
        self.reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        try:
            async for chunk in self.out.full_stream:
                self.chunks.append(chunk)
                self.ticker.bump()
        finally:
            self.done = True
            self.ticker.bump()

    @property
    def types(self) -> list[str]:
        return [c.type for c in self.chunks]

    @property
    def task_id(self) -> str:
        started = next(c for c in self.chunks if c.type == "background-task-started")
        return started.payload.task_id  # type: ignore[union-attr]


def _gated_tool(gates: dict[str, asyncio.Event]) -> Tool:
    async def lookup(args: dict[str, Any], ctx: ToolContext) -> Any:
        await gates[args["q"]].wait()
        return {"answer": args["q"]}

    return Tool(id="lookup", description="d", input_schema=SCHEMA, execute=lookup, background=True)


def _ui_parts(chunks: list[Chunk]) -> list[dict[str, Any]]:
    converter = UIChunkConverter()
    parts = [part for chunk in chunks for part in converter.convert(chunk)]
    return [*parts, *converter.flush()]


async def test_with_one_slot_and_more_queued_tasks_than_the_window_allows_every_stream_ends_with_finish() -> (
    None
):
    ticker = Ticker()
    gates = {f"s{i}": asyncio.Event() for i in range(3)}
    tool = _gated_tool(gates)
    config = {"enabled": True, "global_concurrency": 1, "shutdown_grace_ms": 0}
    async with BackgroundTaskManager(InMemoryStore(), config) as manager:
        chats = []
        for i in range(3):
            model = ScriptedModel(_steps(("c1", "lookup", {"q": f"s{i}"}), f"Started {i}.", f"Done {i}."))
            window = FakeWindow(ticker)
            out = stream_until_idle(
                Agent(id=f"a{i}", model=model, tools=[tool]),
                "go",
                manager=manager,
                max_idle_ms=WINDOW_MS,
                idle_sleep=window,
            )
            chats.append(Chat(out, window, ticker))
        # Each first turn has finished and waits in its window: one task runs, two are queued.
        await ticker.until(lambda: all("finish" in c.types and c.window.open is not None for c in chats))
        by_place = {manager.queue_position(c.task_id): c for c in chats}
        assert set(by_place) == {None, 1, 2}
        first, second, third = by_place[None], by_place[1], by_place[2]
        assert second.window.calls == third.window.calls == 1  # no news of a queued task

        # The running task ends: its stream continues and ends idle; the next task gets the slot.
        gates[f"s{chats.index(first)}"].set()
        await ticker.until(lambda: first.done and second.window.calls == 2 and second.window.open is not None)
        assert "background-task-running" in [c.type for c in second.chunks[second.types.index("finish") :]]
        assert manager.queue_position(third.task_id) == 1

        # The window passes for the other two, one running, one still queued.
        second.window.fire()
        third.window.fire()
        await ticker.until(lambda: second.done and third.done)
        for chat in chats:
            await chat.reader

    # Ended idle: its continuation's finish is last, nothing added.
    assert first.types[-1] == "finish" and "data-until-idle-closed" not in first.types
    assert first.types.count("start") == 2
    # Cut short by the window: the reason, the window and the queue, then the turn's finish again.
    for chat, running in ((second, True), (third, False)):
        closed, finish = chat.chunks[-2], chat.chunks[-1]
        assert chat.types[-2:] == ["data-until-idle-closed", "finish"], " ".join(chat.types)
        first_finish = chat.chunks[chat.types.index("finish")]
        assert finish is first_finish and chat.types.count("finish") == 2
        data = chunk_to_dict(closed)["data"]
        assert data["reason"] == "idle-timeout" and data["maxIdleMs"] == WINDOW_MS
        entry = {"taskId": chat.task_id, "toolName": "lookup", "toolCallId": "c1"}
        if running:
            assert data["running"] == [entry] and data["queued"] == []
            assert "1 running, 0 queued" in data["message"]
        else:
            assert data["running"] == [] and data["queued"] == [{**entry, "queuePosition": 1}]
            assert "0 running, 1 queued" in data["message"]
        assert f"for {WINDOW_MS} ms" in data["message"]
    # What an AI SDK client reads: the last part is a finish, the notice just before it.
    for chat in chats:
        parts = _ui_parts(chat.chunks)
        assert parts[-1]["type"] == "finish", parts[-3:]
    for chat in (second, third):
        assert _ui_parts(chat.chunks)[-2]["type"] == "data-until-idle-closed"


async def test_a_stream_whose_wait_fails_ends_with_an_error_that_says_why() -> None:
    async def broken_window(seconds: float) -> None:
        raise RuntimeError("the clock broke")

    gate = asyncio.Event()
    config = {"enabled": True, "shutdown_grace_ms": 0}
    async with BackgroundTaskManager(InMemoryStore(), config) as manager:
        model = ScriptedModel(_steps(("c1", "lookup", {"q": "x"}), "Started."))
        out = stream_until_idle(
            Agent(id="a", model=model, tools=[_gated_tool({"x": gate})]),
            "go",
            manager=manager,
            idle_sleep=broken_window,
        )
        async with asyncio.timeout(10):
            chunks = [chunk_to_dict(c) async for c in out.full_stream]
    assert chunks[-1]["type"] == "error"
    message = chunks[-1]["payload"]["error"]["message"]
    assert message == "until-idle stream failed: RuntimeError: the clock broke"


async def test_a_stop_between_turns_says_so_and_ends_with_finish() -> None:
    from agentstream._abort import AbortController

    ticker = Ticker()
    gate = asyncio.Event()
    config = {"enabled": True, "global_concurrency": 1, "shutdown_grace_ms": 0}
    ctrl = AbortController()
    async with BackgroundTaskManager(InMemoryStore(), config) as manager:
        model = ScriptedModel(_steps(("c1", "lookup", {"q": "x"}), "Started."))
        window = FakeWindow(ticker)
        out = stream_until_idle(
            Agent(id="a", model=model, tools=[_gated_tool({"x": gate})]),
            "go",
            manager=manager,
            max_idle_ms=WINDOW_MS,
            abort_signal=ctrl.signal,
            idle_sleep=window,
        )
        chat = Chat(out, window, ticker)
        await ticker.until(lambda: "background-task-running" in chat.types and window.open is not None)
        ctrl.abort()
        await ticker.until(lambda: chat.done)
    assert chat.types[-2:] == ["data-until-idle-closed", "finish"]
    data = chunk_to_dict(chat.chunks[-2])["data"]
    assert data["reason"] == "aborted" and len(data["running"]) == 1


async def test_a_turn_that_ends_its_own_way_gets_nothing_added() -> None:
    # A blocked prompt ends with `tripwire` (the reason), not `finish`: nothing to explain on top.
    class Refuse:
        id = "refuse"

        async def process_input(self, *, messages: list[dict[str, Any]], abort: Any, **_: Any) -> None:
            abort("not this prompt")

    async with BackgroundTaskManager(InMemoryStore(), {"enabled": True}) as manager:
        agent = Agent(id="a", model=ScriptedModel(_steps("never")), input_processors=[Refuse()])
        out = stream_until_idle(agent, "go", manager=manager)
        async with asyncio.timeout(10):
            types = [c.type async for c in out.full_stream]
    assert types[-1] == "tripwire" and "error" not in types and "data-until-idle-closed" not in types

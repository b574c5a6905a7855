"""Tools the worker processes of these tests run (`agentstream worker tests.durable._app:tools`)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg

from agentstream.agent import Agent
from agentstream.background import BackgroundTaskContext
from agentstream.durable import step
from agentstream.models import CallOptions, StreamPart
from agentstream.tools import tool


def _log(path: str, line: str) -> str:
    with open(path, "a") as f:
        f.write(f"{line} {os.getpid()}\n")
    return line


async def _wait_for(path: str) -> None:
    while not Path(path).exists():
        await asyncio.sleep(0.02)


async def echo(args: dict[str, Any], context: BackgroundTaskContext) -> Any:
    context.writer.write({"progress": "half", "pid": os.getpid()})
    return {"echo": args["text"], "agent": context.agent_id}


async def three_steps(args: dict[str, Any], context: BackgroundTaskContext) -> Any:
    """Logs each step's side effect; step two waits for `args['release']` to exist."""
    log = args["log"]
    first = await step(_log, log, "one")
    context.writer.write({"done": first})

    async def second() -> str:
        _log(log, "two-started")
        await _wait_for(args["release"])
        return _log(log, "two")

    await step(second, name="second")
    third = await step(_log, log, "three")
    return {"steps": [first, "two", third]}


async def failing(args: dict[str, Any], context: BackgroundTaskContext) -> Any:
    raise ValueError(f"bad topic {args['topic']!r}")


async def _until_seen_together(conn: psycopg.AsyncConnection[Any], total: int | None) -> None:
    """Hold until ``total`` tasks have run at once (once), so a test of limits across workers does not
    depend on how fast each worker polls; gives up after 30 s, and the test's assertion says why."""
    if total is None:
        return
    for _ in range(600):
        if (await (await conn.execute("SELECT count(*) FROM reached")).fetchone() or (0,))[0]:
            return
        row = await (await conn.execute("SELECT count(*) FROM running")).fetchone()
        if row is not None and row[0] >= total:
            await conn.execute("INSERT INTO reached VALUES (1)")
            return
        await asyncio.sleep(0.05)


async def counted(args: dict[str, Any], context: BackgroundTaskContext) -> Any:
    """Records how many tasks (in all, and of this agent) run at once, in a table every worker shares."""

    async def run() -> None:
        async with await psycopg.AsyncConnection.connect(args["dsn"], autocommit=True) as conn:
            await conn.execute(
                "INSERT INTO running (agent, task) VALUES (%s, %s)", (context.agent_id, context.task_id)
            )
            await conn.execute(
                "INSERT INTO observed (total, of_agent) SELECT count(*), "
                "count(*) FILTER (WHERE agent = %s) FROM running",
                (context.agent_id,),
            )
            await _until_seen_together(conn, args.get("until_total"))
            await asyncio.sleep(args["hold_sec"])
            await conn.execute("DELETE FROM running WHERE task = %s", (context.task_id,))

    await step(run, name="run")
    return "ok"


async def approval(args: dict[str, Any], context: BackgroundTaskContext) -> Any:
    if not context.is_resumed:
        await context.suspend({"ask": args["question"], "pid": os.getpid()})
    return {"answer": context.resume_data, "pid": os.getpid()}


class GatedModel:
    """Answers by the prompt, as a real model would: a tool call first, then (once the prompt holds
    the tool's result, and once the file ``release`` exists) the answer. Logs each real call."""

    specification_version = "v2"
    provider = "gated"
    model_id = "gated-1"

    def __init__(self, log: str, release: str) -> None:
        self.log, self.release = log, release

    def do_stream(self, options: CallOptions) -> AsyncIterator[StreamPart]:
        answered = any(m.get("role") == "tool" for m in options.get("prompt", []))
        return self._answer() if answered else self._call_tool()

    async def _call_tool(self) -> AsyncIterator[StreamPart]:
        _log(self.log, "model-1")
        yield {"type": "stream-start", "warnings": []}
        yield {"type": "response-metadata", "id": "resp-1", "timestamp": datetime(2024, 5, 1, tzinfo=UTC)}
        yield {"type": "tool-call", "toolCallId": "call-1", "toolName": "lookup", "input": '{"city": "Oslo"}'}
        yield {"type": "finish", "finishReason": "tool-calls", "usage": _USAGE}

    async def _answer(self) -> AsyncIterator[StreamPart]:
        _log(self.log, "model-2-started")
        yield {"type": "stream-start", "warnings": []}
        yield {"type": "response-metadata", "id": "resp-2", "timestamp": datetime(2024, 5, 1, tzinfo=UTC)}
        yield {"type": "text-start", "id": "t"}
        yield {"type": "text-delta", "id": "t", "delta": "It is "}
        await _wait_for(self.release)  # the test kills the worker here, mid-answer
        yield {"type": "text-delta", "id": "t", "delta": "sunny in Oslo."}
        yield {"type": "text-end", "id": "t"}
        _log(self.log, "model-2")
        yield {"type": "finish", "finishReason": "stop", "usage": _USAGE}


_USAGE = {"inputTokens": 3, "outputTokens": 4, "totalTokens": 7}


async def agent_task(args: dict[str, Any], context: BackgroundTaskContext) -> Any:
    """Runs an agent (a tool call, then an answer) and relays its chunks as the task's output."""
    log = args["log"]

    @tool
    async def lookup(city: str) -> dict[str, str]:
        """The weather in a city."""
        _log(log, "tool")
        return {"city": city, "weather": "sunny"}

    agent = Agent(id="weather", model=GatedModel(log, args["release"]), tools=[lookup])
    output = agent.stream("Weather in Oslo?", clock=lambda: 0.0)
    async for chunk in output.full_stream:
        context.writer.write(chunk)
    return {"text": await output.text}


tools = {
    "agent_task": agent_task,
    "approval": approval,
    "echo": echo,
    "three_steps": three_steps,
    "failing": failing,
    "counted": counted,
}

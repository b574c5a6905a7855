"""Tools the worker processes of these tests run (`agentstream worker tests.durable._app:tools`)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import psycopg

from agentstream.background import BackgroundTaskContext
from agentstream.durable import step


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
            await asyncio.sleep(args["hold_sec"])
            await conn.execute("DELETE FROM running WHERE task = %s", (context.task_id,))

    await step(run, name="run")
    return "ok"


async def approval(args: dict[str, Any], context: BackgroundTaskContext) -> Any:
    if not context.is_resumed:
        await context.suspend({"ask": args["question"], "pid": os.getpid()})
    return {"answer": context.resume_data, "pid": os.getpid()}


tools = {
    "approval": approval,
    "echo": echo,
    "three_steps": three_steps,
    "failing": failing,
    "counted": counted,
}

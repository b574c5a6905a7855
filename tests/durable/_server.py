"""Server process for test_fanout.py: its agent dispatches `three_steps` as a background task, which
the manager's ``remote`` setting sends to a worker (the tool is not wrapped); then it waits to be killed.

python -m tests.durable._server <database url> <tasks.db> <redis url> <redis prefix> <marker dir> <log> <release>
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from agentstream import Agent, Mastra
from agentstream.durable import DurableBackground
from agentstream.resumable import RedisStreamStore
from agentstream.storage import SQLiteStore
from agentstream.testing import ScriptedModel
from agentstream.tools import Tool

LEASE: dict[str, Any] = {"lease_ms": 3000, "heartbeat_interval_ms": 200, "follow_interval_ms": 100}
USAGE = {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}


def script(args: dict[str, Any]) -> list[list[dict[str, Any]]]:
    call = [
        {"type": "stream-start", "warnings": []},
        {"type": "tool-call", "toolCallId": "c1", "toolName": "three_steps", "input": json.dumps(args)},
        {"type": "finish", "finishReason": "tool-calls", "usage": USAGE},
    ]
    text = [
        {"type": "stream-start", "warnings": []},
        {"type": "text-start", "id": "t"},
        {"type": "text-delta", "id": "t", "delta": "Started."},
        {"type": "text-end", "id": "t"},
        {"type": "finish", "finishReason": "stop", "usage": USAGE},
    ]
    return [call, text]


async def not_here(args: dict[str, Any], context: Any) -> Any:
    raise AssertionError("three_steps must run on a worker, not in the server")


async def main(url: str, db: str, redis_url: str, prefix: str, markers: str, log: str, release: str) -> None:
    tool = Tool(
        id="three_steps",
        description="Three checkpointed steps.",
        input_schema={
            "type": "object",
            "properties": {"log": {"type": "string"}, "release": {"type": "string"}},
            "required": ["log", "release"],
        },
        execute=not_here,
        background=True,
    )
    agent = Agent(
        id="researcher", model=ScriptedModel(script({"log": log, "release": release})), tools=[tool]
    )
    shared = RedisStreamStore.from_url(redis_url, prefix=prefix, block_ms=50)
    config = {**LEASE, "remote": DurableBackground(url), "stream_store": shared}
    mastra = Mastra(agents={"researcher": agent}, storage=SQLiteStore(db), background_tasks=config)
    manager = mastra.background_task_manager
    assert manager is not None
    out = agent.stream("research it")
    started = [c async for c in out.full_stream if c.type == "background-task-started"]
    Path(markers, "owner").write_text(manager.owner_id)
    Path(markers, "task").write_text(started[0].payload.task_id)  # type: ignore[union-attr]
    await asyncio.sleep(3600)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:8]))

"""Child process for test_hitl_processes.py: one leg of a run, over a shared store, then exit.

python -m tests.agent._hitl_process <sqlite-path | postgresql://...#schema> <leg> <result.json>

Legs: ``start`` (the model asks for an approval-required transfer: the run suspends), ``approve``
(the transfer runs; the model then calls ``book``, which suspends itself), ``resume`` (``book`` runs
again with ``{"confirmed": true}``; the model answers). Each process has its own scripted model
holding only the model calls of its leg, and writes what it saw to ``result.json``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from agentstream import Mastra
from agentstream.agent import Agent
from agentstream.chunks import chunk_to_dict
from agentstream.storage import BaseStore, SQLiteStore
from agentstream.testing import ScriptedModel
from agentstream.tools import Tool, ToolContext

RUN_ID = "run-across-processes"
USAGE = {"inputTokens": 10, "outputTokens": 1, "totalTokens": 11}
STEPS: dict[str, list[list[dict[str, Any]]]] = {
    "start": [
        [
            {"type": "tool-call", "toolCallId": "c1", "toolName": "transfer", "input": '{"amount": 50}'},
            {"type": "finish", "finishReason": "tool-calls", "usage": USAGE},
        ]
    ],
    "approve": [
        [
            {"type": "tool-call", "toolCallId": "c2", "toolName": "book", "input": '{"flight": "LH1"}'},
            {"type": "finish", "finishReason": "tool-calls", "usage": USAGE},
        ]
    ],
    "resume": [
        [
            {"type": "text-start", "id": "t"},
            {"type": "text-delta", "id": "t", "delta": "Sent and booked."},
            {"type": "text-end", "id": "t"},
            {"type": "finish", "finishReason": "stop", "usage": USAGE},
        ]
    ],
}


def open_store(target: str) -> BaseStore:
    if target.startswith("postgresql://"):
        from agentstream.storage import PostgresStore

        dsn, _, schema = target.partition("#")
        return PostgresStore(dsn, schema=schema)
    return SQLiteStore(target)


async def main(target: str, leg: str, result_path: str) -> None:
    executions: list[Any] = []

    async def transfer(args: dict[str, Any], ctx: ToolContext) -> Any:
        executions.append(["transfer", args])
        return {"sent": args["amount"]}

    async def book(args: dict[str, Any], ctx: ToolContext) -> Any:
        executions.append(["book", ctx.resume_data])
        if ctx.resume_data is None:
            return await ctx.suspend({"question": "Book " + args["flight"] + "?"})
        return {"booked": ctx.resume_data["confirmed"]}

    model = ScriptedModel(STEPS[leg])
    tools = [
        Tool("transfer", "send money", {"type": "object"}, transfer, require_approval=True),
        Tool("book", "book a flight", {"type": "object"}, book, resume_schema={"type": "object"}),
    ]
    async with open_store(target) as store:
        agent = Agent(id="banker", instructions="Be careful.", model=model, tools=tools)
        Mastra(agents={"banker": agent}, storage=store)
        if leg == "start":
            output = agent.stream("Send 50, then book LH1", run_id=RUN_ID)
        elif leg == "approve":
            output = agent.approve_tool_call(run_id=RUN_ID, tool_call_id="c1")
        else:
            output = agent.resume_stream({"confirmed": True}, run_id=RUN_ID, tool_call_id="c2")
        chunks = [chunk_to_dict(c) async for c in output.full_stream]
        result = {
            "chunks": chunks,
            "status": output.status,
            "executions": executions,
            "prompts": [call.prompt for call in model.calls],
        }
        if output.error is None:
            result.update(
                steps=len(await output.steps), usage=(await output.usage).to_wire(), text=await output.text
            )
    with open(result_path, "w", encoding="utf-8") as f:
        json.dump(result, f, default=str)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))

"""Latency from an approval request to the first continued token, against a plain first token.

Both are measured through ``handle_chat_stream`` (what ``chat_route`` runs per POST, minus the
socket): the time from the call to the first ``text-delta`` UI chunk of its stream.

* **plain**: a new chat turn, ``{messages: [user]}``: one model call, then the first token.
* **approve**: the follow-up ``useChat`` sends after ``addToolApprovalResponse`` (the trailing
  assistant message carries the ``approval-responded`` tool part, v7): the owner check, the
  snapshot load and its compare-and-set claim, the tool run, the ``tool-output-available``
  chunk, a second model call, then the first token. The first leg (the one that suspends) is run
  before each sample and not timed.

The models answer at once (no network), so the ratio is the server-side overhead of resuming a
run from its snapshot, not a provider's latency. Storage: in memory and SQLite (a file in a
temporary directory). Printed: median and p90 per mode and the ratio of medians
approve / plain, all measured in the same run. Run: ``.venv/bin/python bench/bench_approval.py``.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from agentstream._mastra import Mastra
from agentstream.agent import Agent
from agentstream.ai_sdk import handle_chat_stream
from agentstream.storage import InMemoryStore, SQLiteStore, Storage
from agentstream.tools import Tool

SAMPLES = 300
USAGE = {"inputTokens": 8, "outputTokens": 4, "totalTokens": 12}
USER = {"id": "u", "role": "user", "parts": [{"type": "text", "text": "book it"}]}


class Model:
    """A tool call when the prompt has no tool result yet (and ``tools`` is on), else four tokens."""

    specification_version = "v2"
    provider = "bench"
    model_id = "bench"

    def __init__(self, *, tools: bool) -> None:
        self.tools = tools

    def do_stream(self, options: Any) -> AsyncIterator[dict[str, Any]]:
        answered = any(m.get("role") == "tool" for m in options.get("prompt", []))
        return self._call() if self.tools and not answered else self._text()

    async def _call(self) -> AsyncIterator[dict[str, Any]]:
        yield {"type": "stream-start", "warnings": []}
        yield {"type": "tool-call", "toolCallId": "call-1", "toolName": "book", "input": '{"name":"x"}'}
        yield {"type": "finish", "finishReason": "tool-calls", "usage": USAGE}

    async def _text(self) -> AsyncIterator[dict[str, Any]]:
        yield {"type": "stream-start", "warnings": []}
        yield {"type": "text-start", "id": "t"}
        for i in range(4):
            yield {"type": "text-delta", "id": "t", "delta": f"tok{i} "}
        yield {"type": "text-end", "id": "t"}
        yield {"type": "finish", "finishReason": "stop", "usage": USAGE}


def _mastra(storage: Storage) -> Mastra:
    async def book(args: dict[str, Any], ctx: Any) -> dict[str, Any]:
        return {"booked": args["name"]}

    schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    tool = Tool(id="book", description="Book", input_schema=schema, execute=book, require_approval=True)
    return Mastra(
        agents={
            "hitl": Agent(id="hitl", instructions="x", model=Model(tools=True), tools=[tool]),
            "plain": Agent(id="plain", instructions="x", model=Model(tools=False)),
        },
        storage=storage,
    )


async def _first_token(mastra: Mastra, agent: str, body: dict[str, Any]) -> tuple[float, list[Any]]:
    """Seconds from the call to the first text-delta; the parts of the whole stream."""
    start = time.perf_counter()
    stream = await handle_chat_stream(mastra=mastra, agent_id=agent, params=body, version="v7", owner="u1")
    first = None
    parts = []
    async for part in stream:
        if first is None and part["type"] == "text-delta":
            first = time.perf_counter() - start
        parts.append(part)
    assert first is not None, parts
    return first, parts


async def _suspend(mastra: Mastra, chat: str) -> dict[str, Any]:
    """The first leg; returns the follow-up body that approves it."""
    stream = await handle_chat_stream(
        mastra=mastra, agent_id="hitl", params={"id": chat, "messages": [USER]}, version="v7", owner="u1"
    )
    parts = [p async for p in stream]
    request = next(p for p in parts if p["type"] == "tool-approval-request")
    tool = {
        "type": "tool-book",
        "toolCallId": request["toolCallId"],
        "state": "approval-responded",
        "input": {"name": "x"},
        "approval": {"id": request["approvalId"], "approved": True},
    }
    assistant = {"id": parts[0]["messageId"], "role": "assistant", "parts": [{"type": "step-start"}, tool]}
    return {"id": chat, "messages": [USER, assistant], "messageId": assistant["id"]}


async def _measure(storage: Storage) -> tuple[list[float], list[float]]:
    mastra = _mastra(storage)
    plain: list[float] = []
    approve: list[float] = []
    try:
        for i in range(SAMPLES):
            # Interleaved, so drift on the shared machine lands on both modes alike.
            seconds, _ = await _first_token(mastra, "plain", {"id": f"p{i}", "messages": [USER]})
            plain.append(seconds)
            follow_up = await _suspend(mastra, f"a{i}")
            seconds, parts = await _first_token(mastra, "hitl", follow_up)
            assert parts[1]["type"] == "tool-output-available", parts[:3]
            approve.append(seconds)
    finally:
        await mastra.aclose()
    return plain, approve


def _summary(name: str, samples: list[float]) -> str:
    ordered = sorted(samples)
    p90 = ordered[int(len(ordered) * 0.9)]
    return f"  {name:<9} median {statistics.median(samples) * 1e3:7.3f} ms   p90 {p90 * 1e3:7.3f} ms"


async def main() -> None:
    print(f"approval POST → first continued token vs plain first token ({SAMPLES} samples each)")
    with tempfile.TemporaryDirectory() as tmp:
        for label, storage in (("memory", InMemoryStore()), ("sqlite", SQLiteStore(str(Path(tmp) / "b.db")))):
            plain, approve = await _measure(storage)
            ratio = statistics.median(approve) / statistics.median(plain)
            print(f"{label}:")
            print(_summary("plain", plain))
            print(_summary("approve", approve))
            print(f"  approve / plain (medians): {ratio:5.2f}x")
            await storage.close()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))

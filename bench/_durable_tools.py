"""The tool the durable bench's worker processes run: returns the wall clock when it started."""

from __future__ import annotations

import time
from typing import Any


async def started_at(args: dict[str, Any], context: Any) -> float:
    return time.time()


tools = {"started_at": started_at}


async def ticks(args: dict[str, Any], context: Any) -> int:
    """Writes `count` progress chunks stamped with the wall clock, each flushed by a short step."""
    import asyncio

    from agentstream.durable import step

    for _ in range(args["count"]):
        context.writer.write({"t": time.time()})
        await step(asyncio.sleep, args["gap_sec"])
    return int(args["count"])


tools["ticks"] = ticks

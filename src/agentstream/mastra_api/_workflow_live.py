"""Workflow runs streaming in this process, and Mastra's workflow stream framing.

Mastra's workflow routes answer a stream of chunks, each its JSON followed by the record separator
``\\x1e`` (client-js splits on it). A run started by these routes keeps running when the client goes
away (as Mastra's does): the registry holds it while a leg runs, for ``/observe`` (which replays the
legs from the first chunk, or from ``offset``, and follows) and for ``/cancel``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import msgspec

from ..chunks import chunk_to_dict

__all__ = ["RECORD_SEPARATOR", "LiveRun", "LiveRuns", "LocalLeg", "framed", "leg_chunks"]

RECORD_SEPARATOR = b"\x1e"
_encode = msgspec.json.Encoder().encode


@dataclass
class LiveRun:
    """A run with a leg streaming here: the run and the outputs of its legs, in order."""

    run: Any
    legs: list[Any] = field(default_factory=list)

    async def chunks(self, offset: int = 0) -> AsyncIterator[dict[str, Any]]:
        """Every chunk of every leg, from chunk ``offset`` on, following the running leg to its end."""
        seen = 0
        index = 0
        while index < len(self.legs):
            async for chunk in self.legs[index].full_stream:
                if seen >= offset:
                    yield chunk_to_dict(chunk)
                seen += 1
            index += 1


class LiveRuns:
    """The runs these routes are streaming in this process, by ``(workflow id, run id)``."""

    def __init__(self) -> None:
        self._runs: dict[tuple[str, str], LiveRun] = {}
        self._watchers: set[asyncio.Task[None]] = set()

    def get(self, workflow_id: str, run_id: str) -> LiveRun | None:
        """The run, while one of its legs streams here."""
        return self._runs.get((workflow_id, run_id))

    def add(self, run: Any, output: Any) -> LiveRun:
        """Hold ``run`` while ``output`` (its new leg) streams; let it go when the leg ends."""
        key = (run.workflow_id, run.run_id)
        live = self._runs.get(key)
        if live is None or live.run is not run:
            live = self._runs[key] = LiveRun(run)
        live.legs.append(output)
        watcher = asyncio.get_running_loop().create_task(self._release(key, live, output))
        self._watchers.add(watcher)
        watcher.add_done_callback(self._watchers.discard)
        return live

    async def _release(self, key: tuple[str, str], live: LiveRun, output: Any) -> None:
        with contextlib.suppress(Exception):
            await output.consume_stream()
        if self._runs.get(key) is live and live.legs[-1] is output:
            del self._runs[key]


async def framed(chunks: AsyncIterator[dict[str, Any]]) -> AsyncIterator[bytes]:
    """Each chunk as Mastra frames it: its JSON, then the record separator."""
    async for chunk in chunks:
        yield _encode(chunk) + RECORD_SEPARATOR


async def leg_chunks(output: Any) -> AsyncIterator[dict[str, Any]]:
    """One leg's chunks, as wire dicts."""
    async for chunk in output.full_stream:
        yield chunk_to_dict(chunk)


class LocalLeg:
    """A leg running in this process: its chunks (replayed from the first) and its result."""

    def __init__(self, output: Any) -> None:
        self.output = output

    def chunks(self) -> AsyncIterator[dict[str, Any]]:
        return leg_chunks(self.output)

    async def result(self) -> dict[str, Any]:
        """Mastra's ``WorkflowResult`` JSON, once the leg ends."""
        result: dict[str, Any] = (await self.output.result).to_dict()
        return result

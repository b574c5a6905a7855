"""Workflow legs through the app's stream store: recorded there (so ``/observe`` on another server
process replays them), and run on workers when the app has a `WorkflowRunner`.

A leg's stream is claimed under `mastra_workflow_stream_key` (Mastra's workflow chunks; the AI SDK
routes' readers expect UI chunks under their own key), owned by the run's resource's stream owner.
With a runner this server checks the request, claims the stream and dispatches the leg as a
`WorkflowJob` whose options ask for Mastra's chunks (``wire: "mastra"``); a worker runs it with
``run_workflow_job``, writing the chunks as JSON; this server answers by following the stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import msgspec

from ..ai_sdk import ChatRequestError
from ..resumable import StreamOwnerError, WorkflowJob, mastra_workflow_stream_key
from ..server import stream_owner

if TYPE_CHECKING:
    from ..ai_sdk import WorkflowRunSpec
    from ..resumable import ActiveStream, StreamStore, WorkflowRunner

__all__ = ["StoreLegs", "spec_options"]

log = logging.getLogger("agentstream.mastra_api")
_encode = msgspec.json.Encoder().encode


def spec_options() -> dict[str, Any]:
    """The job options of a leg for the Mastra API: Mastra's chunks, not UI chunks."""
    return {
        "version": "v5",
        "include_text_stream_parts": True,
        "send_reasoning": False,
        "send_sources": False,
        "wire": "mastra",
    }


class StoreLegs:
    """Claims, records, follows and dispatches legs in one stream store."""

    def __init__(self, store: StreamStore, runner: WorkflowRunner | None) -> None:
        self.store = store
        self.runner = runner
        self._writers: set[asyncio.Task[None]] = set()

    async def active(self, workflow_id: str, run_id: str) -> ActiveStream | None:
        return await self.store.active(mastra_workflow_stream_key(workflow_id, run_id))

    async def claim(self, workflow_id: str, run_id: str, resource_id: str | None) -> str:
        """The leg's new stream; 409 while another leg of the run streams (in any process)."""
        conflict = ChatRequestError(
            f"run {run_id[:120]!r} is streaming already; observe it (POST .../observe)",
            status_code=409,
            path="runId",
        )
        key = mastra_workflow_stream_key(workflow_id, run_id)
        if await self.store.active(key) is not None:
            raise conflict
        try:
            return await self.store.start(key, owner=stream_owner(resource_id))
        except StreamOwnerError:
            raise conflict from None

    def owns(self, active: ActiveStream, resource_id: str | None) -> bool:
        return active.owner == stream_owner(resource_id)

    async def follow(self, stream_id: str, after: int = 0) -> AsyncIterator[dict[str, Any]]:
        """The stream's chunks from chunk ``after``, followed to its end."""
        async for raw in self.store.read(stream_id, after=after):
            chunk = msgspec.json.decode(raw)
            if isinstance(chunk, dict):
                yield chunk

    def record(self, stream_id: str, chunks: AsyncIterator[dict[str, Any]]) -> None:
        """Write a leg running here into its stream, in the background (a client that goes away
        does not stop the recording), then finish the stream."""
        task = asyncio.get_running_loop().create_task(self._write(stream_id, chunks))
        self._writers.add(task)
        task.add_done_callback(self._writers.discard)

    async def _write(self, stream_id: str, chunks: AsyncIterator[dict[str, Any]]) -> None:
        written = 0
        try:
            async for chunk in chunks:
                await self.store.append(stream_id, _encode(chunk), at=written)
                written += 1
        except Exception as exc:  # the store failed: the leg goes on, its recording stops here
            log.warning("recording workflow stream %s stopped: %s", stream_id, exc)
        finally:
            with contextlib.suppress(Exception):
                await self.store.finish(stream_id)

    async def cancel_on_worker(
        self, workflow: Any, run_id: str, stream_id: str, resource_id: str | None
    ) -> None:
        """Cancel the leg on its worker and wait (a few seconds at most) for the worker to end its
        stream; a leg no worker ends (never started, or its worker died) is ended here, and a run
        still waiting (pending, suspended) is stored ``canceled``."""
        assert self.runner is not None
        key = mastra_workflow_stream_key(workflow.id, run_id)
        if await self.runner.cancel(stream_id):
            for _ in range(100):
                active = await self.store.active(key)
                if active is None or active.stream_id != stream_id:
                    return
                await asyncio.sleep(0.05)
        run = await workflow.create_run(run_id, resource_id=resource_id)
        if run.status in ("pending", "suspended"):
            await run.cancel()
        await self.store.finish(stream_id)

    async def dispatch(self, spec: WorkflowRunSpec, stream_id: str) -> None:
        """Hand the leg to a worker (the stream is ended here if that fails)."""
        assert self.runner is not None
        try:
            await self.runner.dispatch(WorkflowJob(spec=spec, stream_id=stream_id))
        except BaseException:
            await self.store.finish(stream_id)
            raise

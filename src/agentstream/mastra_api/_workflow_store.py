"""Workflow legs through the app's stream store: recorded there (so ``/observe`` on another server
process replays them), and run on workers when the app has a `WorkflowRunner`.

A leg's stream is claimed under `mastra_workflow_stream_key` (Mastra's workflow chunks; the AI SDK
routes' readers expect UI chunks under their own key), owned by the run's resource's stream owner.
With a runner this server checks the request, claims the stream and dispatches the leg as a
`WorkflowJob` whose options ask for Mastra's chunks (``wire: "mastra"``); a worker runs it with
``run_workflow_job``, writing the chunks as JSON; this server answers by following the stream.
All of it is the app's `Jobs`: this module only says which key, owner and wire a leg has.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import msgspec

from ..ai_sdk import ChatRequestError, Jobs, StoredUIChunk
from ..resumable import StreamOwnerError, WorkflowJob, mastra_workflow_stream_key
from ..server import stream_owner

if TYPE_CHECKING:
    from ..ai_sdk import WorkflowRunSpec
    from ..resumable import ActiveStream, WorkflowRunner

__all__ = ["StoreLegs", "mastra_error", "spec_options"]

_CANCEL_WAIT_S = 5.0
"""How long a cancel waits for the worker to end the leg's stream before ending it here."""


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
    """The Mastra API's workflow legs as jobs of the app's `Jobs` (claimed, recorded, followed,
    dispatched and cancelled there, as the AI SDK routes' legs and chat turns are), under
    `mastra_workflow_stream_key` and with Mastra's chunks as the wire."""

    def __init__(self, jobs: Jobs, runner: WorkflowRunner | None) -> None:
        self.jobs = jobs
        self.store = jobs.require_store("mastra_api_routes")
        self.runner = runner

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
        # The run streams nothing live (the caller checked): a leg recorded here may still be
        # writing its last chunks, which is no conflict.
        await self.jobs.settled(key)
        if await self.store.active(key) is not None:
            raise conflict
        try:
            return await self.jobs.claim(key, stream_owner(resource_id))
        except StreamOwnerError:
            raise conflict from None

    def owns(self, active: ActiveStream, resource_id: str | None) -> bool:
        return active.owner == stream_owner(resource_id)

    async def follow(self, stream_id: str, run_id: str, after: int = 0) -> AsyncIterator[dict[str, Any]]:
        """The stream's chunks from chunk ``after``, followed to its end (`Jobs.follow`: a writer
        that died or a store that failed ends it, with the ``error`` chunk that says so, in
        Mastra's shape: `mastra_error`)."""
        async for chunk in self.jobs.follow(stream_id, after):
            if isinstance(chunk, StoredUIChunk):
                chunk = msgspec.json.decode(chunk.data)
            if isinstance(chunk, dict):
                yield mastra_error(chunk, run_id)

    def record(
        self, workflow_id: str, run_id: str, stream_id: str, chunks: AsyncIterator[dict[str, Any]]
    ) -> None:
        """Write a leg running here into its stream, in the background (a client that goes away
        does not stop the recording), then finish the stream (`Jobs.run_here`). The leg's live
        output is the live registry's; a failed recording does not stop it."""
        key = mastra_workflow_stream_key(workflow_id, run_id)
        # The reader it returns is not needed: the API's readers follow the live output or the stream.
        self.jobs.run_here(key, stream_id, chunks, _leg_goes_on)

    async def cancel_on_worker(
        self, workflow: Any, run_id: str, stream_id: str, resource_id: str | None
    ) -> None:
        """Cancel the leg on its worker and wait (a few seconds at most) for the worker to end its
        stream; a leg no worker ends (never started, or its worker died) is ended here, and a run
        still waiting (pending, suspended) is stored ``canceled`` (`Jobs.cancel`)."""

        async def cancel_waiting_run() -> None:
            run = await workflow.create_run(run_id, resource_id=resource_id)
            if run.status in ("pending", "suspended"):
                await run.cancel()

        key = mastra_workflow_stream_key(workflow.id, run_id)
        await self.jobs.cancel(
            key, stream_id, self.runner, ending=(), timeout_s=_CANCEL_WAIT_S, before_ending=cancel_waiting_run
        )

    async def dispatch(self, spec: WorkflowRunSpec, stream_id: str) -> None:
        """Hand the leg to a worker (the claim is released if that fails)."""
        assert self.runner is not None
        # The reader it returns is not needed: a `RemoteLeg` follows the stream itself.
        await self.jobs.hand_off(stream_id, self.runner.dispatch(WorkflowJob(spec=spec, stream_id=stream_id)))


def _leg_goes_on() -> None:
    """A leg recorded here is not stopped when its recording fails (its live readers go on)."""


def mastra_error(chunk: dict[str, Any], run_id: str) -> dict[str, Any]:
    """`Jobs`' endings are UI chunks (``{"type": "error", "errorText"}``, written by the job service
    for every kind); on Mastra's wire a stream's error is Mastra's `ErrorChunk`
    (``{type, runId, from, payload: {error}}``), which `@mastra/client-js` hands on as such."""
    if chunk.get("type") == "error" and "errorText" in chunk and "payload" not in chunk:
        message = chunk["errorText"]
        return {
            "type": "error",
            "runId": run_id,
            "from": "WORKFLOW",
            "payload": {"error": {"message": message}},
        }
    return chunk

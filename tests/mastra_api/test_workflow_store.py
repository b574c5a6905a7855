"""The Mastra API's recorded workflow legs (``mastra_api._workflow_store``): a leg whose recording
failed ends, on Mastra's wire, with Mastra's error chunk, not the job service's UI ``error``."""

from __future__ import annotations

from agentstream.ai_sdk import STORE_FAILED, Jobs, end_with_error
from agentstream.mastra_api._workflow_store import StoreLegs
from agentstream.resumable import MemoryStreamStore


async def test_a_leg_whose_store_failed_ends_with_mastra_s_error_chunk() -> None:
    jobs = Jobs(MemoryStreamStore())
    legs = StoreLegs(jobs, runner=None)
    stream_id = await legs.claim("wf", "run-1", resource_id=None)
    step = {"type": "workflow-start", "runId": "run-1", "from": "WORKFLOW", "payload": {"runId": "run-1"}}
    await jobs.require_store().append(
        stream_id, b'{"type":"workflow-start","runId":"run-1","from":"WORKFLOW","payload":{"runId":"run-1"}}'
    )
    await end_with_error(jobs.require_store(), stream_id, STORE_FAILED)
    chunks = [chunk async for chunk in legs.follow(stream_id, "run-1")]
    assert chunks == [
        step,
        {
            "type": "error",
            "runId": "run-1",
            "from": "WORKFLOW",
            "payload": {"error": {"message": STORE_FAILED}},
        },
    ]

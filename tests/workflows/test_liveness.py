"""A ``running`` run whose owner died is marked ``failed`` with a sentence (issue 22 item 7):
lease expiry (any host) and a gone process on this host; a live owner's run is left alone, and a
running leg renews its lease. The SIGKILL case: tests/security/test_crash_recovery.py."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from agentstream import Mastra
from agentstream.storage import BaseStore
from agentstream.workflows import StepContext, WorkflowResumeError, _liveness, create_step, create_workflow


def _workflow(gate: asyncio.Event | None = None) -> Any:
    async def wait(context: StepContext) -> dict[str, Any]:
        if gate is not None:
            await gate.wait()
        return {"done": True}

    return create_workflow(id="w").then(create_step(id="wait", execute=wait)).commit()


async def _store_running(store: BaseStore, owner: dict[str, Any]) -> None:
    snapshot = {"runId": "r1", "status": "running", "value": {}, "context": {}, "owner": owner}
    await store.persist_workflow_snapshot("w", "r1", snapshot)


async def test_a_run_whose_lease_expired_is_marked_failed_and_says_why(store: BaseStore) -> None:
    workflow = _workflow()
    Mastra(workflows={"w": workflow}, storage=store)
    expired = int(time.time() * 1000) - 5_000
    await _store_running(store, {"id": "elsewhere:4242:99", "leaseExpiresAt": expired})
    run = await workflow.create_run("r1")
    assert run.status == "failed" and run.lost is not None
    assert "stopped renewing its lease 5 s ago" in run.lost and "elsewhere" not in run.lost  # no host names
    stored = await store.load_workflow_snapshot("w", "r1")
    assert isinstance(stored, dict) and stored["status"] == "failed"
    assert stored["error"]["name"] == _liveness.LOST_RUN and "owner" not in stored
    with pytest.raises(
        WorkflowResumeError, match=r"is failed, not suspended: run 'r1' .* stopped while running"
    ):
        run.check_resume()
    again = await workflow.create_run("r1")  # loaded later: still explained
    assert again.lost == run.lost


async def test_a_run_of_a_gone_process_on_this_host_is_lost_at_once(store: BaseStore) -> None:
    workflow = _workflow()
    Mastra(workflows={"w": workflow}, storage=store)
    host = _liveness.PROCESS_OWNER.split(":")[0]
    proc = await asyncio.create_subprocess_exec("true")
    await proc.wait()  # a pid that no longer runs
    fresh = int(time.time() * 1000) + 30_000
    await _store_running(store, {"id": f"{host}:{proc.pid}:1", "leaseExpiresAt": fresh})
    run = await workflow.create_run("r1")
    assert run.status == "failed" and run.lost is not None and "is gone" in run.lost


async def test_a_live_owner_keeps_its_run_and_a_running_leg_renews_its_lease(
    store: BaseStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    fresh = int(time.time() * 1000) + 30_000
    workflow = _workflow()
    Mastra(workflows={"w": workflow}, storage=store)
    await _store_running(store, {"id": "elsewhere:4242:99", "leaseExpiresAt": fresh})
    assert (await workflow.create_run("r1")).status == "running"  # maybe alive: left alone

    monkeypatch.setattr("agentstream.workflows._run.RENEW_MS", 20)
    gate = asyncio.Event()
    slow = _workflow(gate)
    Mastra(workflows={"w": slow}, storage=store)
    run = await slow.create_run("r2")
    output = run.stream(input_data={})

    async def lease() -> int:
        snapshot = await store.load_workflow_snapshot("w", "r2")
        assert isinstance(snapshot, dict) and snapshot["status"] == "running"
        assert snapshot["owner"]["id"] == _liveness.PROCESS_OWNER
        return int(snapshot["owner"]["leaseExpiresAt"])

    async with asyncio.timeout(10):
        while await store.load_workflow_snapshot("w", "r2") is None:
            await asyncio.sleep(0.01)
        first = await lease()
        while await lease() == first:  # renewed by the running leg
            await asyncio.sleep(0.01)
        gate.set()
        result = await output.result
    assert result.status == "success"
    done = await store.load_workflow_snapshot("w", "r2")
    assert isinstance(done, dict) and done["status"] == "success" and "owner" not in done

"""An agent run whose resumed leg's process died (issue 22): its ``running`` snapshot names its
owner and a lease the leg renews (``storage._liveness``, as workflow runs'); an expired lease (any
host) or a gone process on this host makes the next look mark it failed, and every answer to it
says why. The SIGKILL case over HTTP: tests/security/test_crash_recovery.py."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from agentstream import Mastra
from agentstream.agent import SNAPSHOT_WORKFLOW, Agent, ResumeError
from agentstream.storage import PROCESS_OWNER, BaseStore, InMemoryStore, SQLiteStore
from agentstream.testing import ScriptedModel
from agentstream.tools import Tool, ToolContext
from tests.agent.test_hitl import calls_step, read, text_step


@pytest.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    made: BaseStore = InMemoryStore() if request.param == "memory" else SQLiteStore(tmp_path / "runs.db")
    await made.init()
    yield made
    await made.close()


def _agent(store: BaseStore, gate: asyncio.Event | None = None) -> Agent:
    async def deploy(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        if gate is not None:
            await gate.wait()
        return {"deployed": True}

    steps = [calls_step(("c1", "deploy", "{}")), text_step("done")]
    tool = Tool("deploy", "deploy", {"type": "object"}, deploy, require_approval=True)
    agent = Agent(id="a", model=ScriptedModel(steps), tools=[tool])
    Mastra(agents={"a": agent}, storage=store)
    return agent


async def _running(store: BaseStore, agent: Agent, owner: dict[str, Any]) -> None:
    """Suspend run r1, then store it as a leg of ``owner`` would have claimed it."""
    out = agent.stream("go", run_id="r1")
    await read(out)
    assert out.status == "suspended"
    snapshot = await store.load_workflow_snapshot(SNAPSHOT_WORKFLOW, "r1")
    assert isinstance(snapshot, dict)
    await store.persist_workflow_snapshot(
        SNAPSHOT_WORKFLOW, "r1", {**snapshot, "status": "running", "owner": owner}
    )


async def test_an_expired_lease_marks_the_run_lost_and_every_answer_says_why(store: BaseStore) -> None:
    agent = _agent(store)
    await _running(
        store, agent, {"id": "elsewhere:4242:99", "leaseExpiresAt": int(time.time() * 1000) - 5_000}
    )
    leg = agent.approve_tool_call(run_id="r1", tool_call_id="c1")
    await read(leg)
    with pytest.raises(ResumeError, match="stopped while a resumed leg was running") as info:
        await leg.text
    assert info.value.status == "lost" and "stopped renewing its lease 5 s ago" in str(info.value)
    assert "elsewhere" not in str(info.value)  # no host names in what reaches clients
    assert await agent.suspended_run(run_id="r1") is None
    assert await agent.lost_run("r1") == str(info.value)
    stored = await store.load_workflow_snapshot(SNAPSHOT_WORKFLOW, "r1")
    assert isinstance(stored, dict) and stored["status"] == "failed" and "owner" not in stored
    assert stored["error"]["name"] == "AgentRunLost"


async def test_a_gone_process_on_this_host_is_lost_at_once(store: BaseStore) -> None:
    agent = _agent(store)
    proc = await asyncio.create_subprocess_exec("true")
    await proc.wait()  # a pid that no longer runs
    host = PROCESS_OWNER.split(":")[0]
    await _running(
        store, agent, {"id": f"{host}:{proc.pid}:1", "leaseExpiresAt": int(time.time() * 1000) + 30_000}
    )
    lost = await agent.lost_run("r1")  # a first look that is not an answer marks it too
    assert lost is not None and f"pid {proc.pid}" in lost and "is gone" in lost


async def test_a_live_owner_keeps_its_run_and_a_running_leg_renews_its_lease(
    store: BaseStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = _agent(store)
    await _running(
        store, agent, {"id": "elsewhere:4242:99", "leaseExpiresAt": int(time.time() * 1000) + 30_000}
    )
    leg = agent.approve_tool_call(run_id="r1", tool_call_id="c1")
    await read(leg)
    with pytest.raises(ResumeError, match="already being resumed"):  # maybe alive: left alone
        await leg.text
    assert await agent.lost_run("r1") is None

    monkeypatch.setattr("agentstream.storage.RUN_RENEW_MS", 20)
    gate = asyncio.Event()
    slow = _agent(store, gate)
    out = slow.stream("go", run_id="r2")
    await read(out)
    approved = slow.approve_tool_call(run_id="r2", tool_call_id="c1")
    reading = asyncio.ensure_future(read(approved))

    async def lease() -> int:
        snapshot = await store.load_workflow_snapshot(SNAPSHOT_WORKFLOW, "r2")
        assert isinstance(snapshot, dict) and snapshot["status"] == "running"
        assert snapshot["owner"]["id"] == PROCESS_OWNER
        return int(snapshot["owner"]["leaseExpiresAt"])

    async with asyncio.timeout(10):
        while (await store.load_workflow_snapshot(SNAPSHOT_WORKFLOW, "r2") or {}).get("status") != "running":
            await asyncio.sleep(0.01)
        first = await lease()
        while await lease() == first:  # renewed by the running leg
            await asyncio.sleep(0.01)
        gate.set()
        await reading
    assert await approved.text == "done"
    done = await store.load_workflow_snapshot(SNAPSHOT_WORKFLOW, "r2")
    assert isinstance(done, dict) and done["status"] == "finished" and "owner" not in done

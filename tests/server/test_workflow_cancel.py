"""`workflow_cancel_route` in one process (Mastra's ``POST /api/workflows/{id}/runs/{runId}/cancel``):
a run streaming here (recorded or not), a suspended run in storage, a leg handed to a runner that
never started it; only the run's owner may cancel it, behind the route guard's checks."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette

from agentstream import Mastra
from agentstream.resumable import MemoryStreamStore, StreamStore, WorkflowJob
from agentstream.server import (
    Jobs,
    RequestGuard,
    workflow_cancel_route,
    workflow_route,
    workflow_stream_route,
)
from agentstream.workflows import StepContext, Workflow, create_step, create_workflow
from tests.security._support import x_user

ALICE, BOB = {"x-user": "alice"}, {"x-user": "bob"}
CANCEL = "/api/workflows/w/runs/r1/cancel"


class Steps:
    """A workflow whose first step waits until the run is cancelled; what ran is in ``ran``."""

    def __init__(self) -> None:
        self.waiting = asyncio.Event()
        self.ran: list[str] = []

    async def wait(self, c: StepContext) -> Any:
        self.ran.append("wait")
        self.waiting.set()
        await c.abort_signal.wait()
        return c.input_data

    def after(self, c: StepContext) -> Any:
        self.ran.append("after")
        return c.input_data

    def workflow(self) -> Workflow:
        return (
            create_workflow(id="w")
            .then(create_step(id="wait", execute=self.wait))
            .then(create_step(id="after", execute=self.after))
            .commit()
        )


def app(mastra: Mastra, store: StreamStore | None, runner: Any = None, **guard: Any) -> Starlette:
    checks = RequestGuard(auth=x_user, **guard)
    jobs = Jobs(store)  # the app's job service, shared by its routes (recorded or not)
    routes = [
        workflow_route(mastra, jobs=jobs, runner=runner, guard=checks),
        workflow_route(mastra, "/api/workflows/{workflow_id}/resume", resume=True, jobs=jobs, guard=checks),
        workflow_cancel_route(mastra, guard=checks, jobs=jobs, runner=runner),
    ]
    if store is not None:
        routes.append(workflow_stream_route(jobs, guard=checks))
    return Starlette(routes=routes)


def client(application: Starlette) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=application), base_url="http://127.0.0.1")


def chunks(text: str) -> list[dict[str, Any]]:
    payloads = [line.removeprefix("data: ") for line in text.splitlines() if line.startswith("data: ")]
    assert payloads[-1] == "[DONE]"
    return [json.loads(p) for p in payloads[:-1]]


async def snapshot_status(mastra: Mastra, run_id: str = "r1") -> Any:
    snapshot = await mastra.storage.load_workflow_snapshot("w", run_id)
    return snapshot["status"] if isinstance(snapshot, dict) else None


@pytest.mark.parametrize("recorded", [True, False])
async def test_the_owner_cancels_a_run_streaming_here_and_its_stream_ends_canceled(recorded: bool) -> None:
    steps = Steps()
    mastra = Mastra(workflows={"w": steps.workflow()})
    async with client(app(mastra, MemoryStreamStore() if recorded else None)) as c:
        body = {"runId": "r1", "inputData": {"n": 1}}
        started = asyncio.create_task(c.post("/api/workflows/w/stream", json=body, headers=ALICE))
        await steps.waiting.wait()
        stranger = await c.post(CANCEL, headers=BOB)
        unknown = await c.post("/api/workflows/w/runs/nope/cancel", headers=BOB)
        assert not started.done()  # bob's attempt changed nothing
        cancelled = await c.post(CANCEL, headers=ALICE)
        answer = await started
        again = await c.post(CANCEL, headers=ALICE)  # a finished run is left as it is
    # Another principal's run is indistinguishable from one that does not exist.
    assert stranger.status_code == unknown.status_code == 404
    assert (
        stranger.json()
        == unknown.json()
        == {"error": {"name": "ChatRequestError", "message": "Workflow run not found"}}
    )
    assert cancelled.status_code == again.status_code == 200
    assert cancelled.json() == {"message": "Workflow run cancelled"}
    ui = chunks(answer.text)
    assert [c["data"]["status"] for c in ui if c["type"] == "data-workflow"][-1] == "canceled"
    assert ui[-1] == {"type": "finish"}
    assert steps.ran == ["wait"]  # the step after the cancelled one never ran
    assert await snapshot_status(mastra) == "canceled"


async def test_a_suspended_run_is_cancelled_in_storage_and_can_no_longer_be_resumed() -> None:
    async def ask(c: StepContext) -> Any:
        return await c.suspend({"question": "go?"}) if c.resume_data is None else c.resume_data

    workflow = create_workflow(id="w").then(create_step(id="ask", execute=ask)).commit()
    mastra = Mastra(workflows={"w": workflow})
    async with client(app(mastra, MemoryStreamStore())) as c:
        first = await c.post("/api/workflows/w/stream", json={"runId": "r1", "inputData": {}}, headers=ALICE)
        assert '"suspended"' in first.text
        stranger = await c.post(CANCEL, headers=BOB)
        cancelled = await c.post(CANCEL, headers=ALICE)
        resumed = await c.post(
            "/api/workflows/w/resume", json={"runId": "r1", "resumeData": {"go": True}}, headers=ALICE
        )
    assert stranger.status_code == 404 and cancelled.status_code == 200
    assert await snapshot_status(mastra) == "canceled"
    assert resumed.status_code == 409


async def test_refusals_unknown_workflow_no_principal_foreign_origin_and_host() -> None:
    steps = Steps()
    mastra = Mastra(workflows={"w": steps.workflow()})
    async with client(app(mastra, MemoryStreamStore())) as c:
        unknown = await c.post("/api/workflows/nope/runs/r1/cancel", headers=ALICE)
        anonymous = await c.post(CANCEL)
        foreign = await c.post(CANCEL, headers={**ALICE, "origin": "https://evil.example"})
        host = await c.post(CANCEL, headers={**ALICE, "host": "evil.example"})
        wrong_method = await c.get(CANCEL, headers=ALICE)
    assert unknown.status_code == 404 and unknown.json()["error"]["message"] == "Workflow not found"
    assert anonymous.status_code == 401
    assert foreign.status_code == 403 and "evil.example" in foreign.json()["error"]["message"]
    assert host.status_code == 403
    assert wrong_method.status_code == 405
    assert steps.ran == []


class NeverStarted:
    """A `WorkflowRunner` whose legs never start (no worker takes them); cancelling says so."""

    def __init__(self) -> None:
        self.jobs: list[WorkflowJob] = []
        self.cancelled: list[str] = []
        self.dispatched = asyncio.Event()

    async def dispatch(self, job: WorkflowJob) -> None:
        self.jobs.append(job)
        self.dispatched.set()

    async def cancel(self, stream_id: str) -> bool:
        self.cancelled.append(stream_id)
        return False


async def test_a_leg_cancelled_before_any_worker_started_it_is_ended_by_the_server() -> None:
    steps = Steps()
    mastra = Mastra(workflows={"w": steps.workflow()})
    store, runner = MemoryStreamStore(), NeverStarted()
    async with client(app(mastra, store, runner)) as c:
        body = {"runId": "r1", "inputData": {"n": 1}}
        started = asyncio.create_task(c.post("/api/workflows/w/stream", json=body, headers=ALICE))
        await asyncio.wait_for(runner.dispatched.wait(), 10)
        stranger = await c.post(CANCEL, headers=BOB)
        assert runner.cancelled == []
        cancelled = await c.post(CANCEL, headers=ALICE)
        answer = await started
        replay = await c.get("/api/workflows/w/runs/r1/stream", headers=ALICE)
    assert stranger.status_code == 404 and cancelled.status_code == 200
    assert runner.cancelled == [runner.jobs[0]["stream_id"]]
    assert [c["type"] for c in chunks(answer.text)] == ["start", "data-workflow", "finish"]
    assert chunks(answer.text)[1]["data"]["status"] == "canceled"
    assert replay.status_code == 204  # the stream ended
    assert await snapshot_status(mastra) == "canceled" and steps.ran == []


class TakenButSilent:
    """A `WorkflowRunner` whose legs a worker took (cancelling says they started); the "worker"
    ends a cancelled leg's stream only once ``release`` is set, or never (``release=None``)."""

    def __init__(self, store: StreamStore, release: asyncio.Event | None) -> None:
        self.store, self.release = store, release
        self.jobs: list[WorkflowJob] = []
        self.dispatched = asyncio.Event()
        self.cancel_called = asyncio.Event()
        self._ending: set[asyncio.Task[None]] = set()

    async def dispatch(self, job: WorkflowJob) -> None:
        self.jobs.append(job)
        self.dispatched.set()

    async def cancel(self, stream_id: str) -> bool:
        self.cancel_called.set()
        if self.release is not None:
            task = asyncio.create_task(self._end(stream_id, self.release))
            self._ending.add(task)
        return True

    async def _end(self, stream_id: str, release: asyncio.Event) -> None:
        await release.wait()
        await self.store.append(
            stream_id, b'{"type":"start"}', b'{"type":"abort"}', b'{"type":"finish"}', at=0
        )
        await self.store.finish(stream_id)


async def test_the_cancel_answers_once_the_worker_ended_the_stream() -> None:
    steps, store, release = Steps(), MemoryStreamStore(), asyncio.Event()
    mastra = Mastra(workflows={"w": steps.workflow()})
    runner = TakenButSilent(store, release)
    async with client(app(mastra, store, runner)) as c:
        started = asyncio.create_task(
            c.post("/api/workflows/w/stream", json={"runId": "r1", "inputData": {}}, headers=ALICE)
        )
        await asyncio.wait_for(runner.dispatched.wait(), 10)
        cancelling = asyncio.create_task(c.post(CANCEL, headers=ALICE))
        await runner.cancel_called.wait()
        for _ in range(
            50
        ):  # loop turns, not wall time (all in-process): a cancel that did not wait ends here
            await asyncio.sleep(0)
        assert not cancelling.done()  # the worker has not stopped yet
        release.set()
        cancelled, answer = await cancelling, await started
    assert cancelled.status_code == 200
    assert [c["type"] for c in chunks(answer.text)] == ["start", "abort", "finish"]  # the worker's ending


async def test_a_leg_the_worker_never_ends_is_ended_by_the_server_after_stop_timeout() -> None:
    steps, store = Steps(), MemoryStreamStore()
    mastra = Mastra(workflows={"w": steps.workflow()})
    runner = TakenButSilent(store, release=None)
    routes = [
        workflow_route(mastra, stream_store=store, runner=runner, guard=RequestGuard(auth=x_user)),
        workflow_cancel_route(
            mastra, guard=RequestGuard(auth=x_user), stream_store=store, runner=runner, stop_timeout_s=0.2
        ),
    ]
    async with client(Starlette(routes=routes)) as c:
        started = asyncio.create_task(
            c.post("/api/workflows/w/stream", json={"runId": "r1", "inputData": {}}, headers=ALICE)
        )
        await asyncio.wait_for(runner.dispatched.wait(), 10)
        cancelled = await c.post(CANCEL, headers=ALICE)
        answer = await started
    assert cancelled.status_code == 200
    assert [c["type"] for c in chunks(answer.text)] == ["start", "data-workflow", "finish"]
    assert chunks(answer.text)[1]["data"]["status"] == "canceled"
    assert await snapshot_status(mastra) == "canceled" and steps.ran == []


@pytest.mark.parametrize("bad", [0, -1.0, float("nan")])
def test_stop_timeout_must_be_positive(bad: float) -> None:
    mastra = Mastra(workflows={"w": Steps().workflow()})
    with pytest.raises(ValueError, match=r"stop_timeout_s must be > 0 seconds, got"):
        workflow_cancel_route(mastra, stop_timeout_s=bad)

"""The workflows routes with the app's stream store and a `WorkflowRunner`: a leg dispatched as a
`WorkflowJob` runs on a "worker" (another `Mastra` with the same workflow and storage, through
``run_workflow_job``, as ``agentstream worker`` runs it) and this server answers by following the
stream (Mastra's chunks, ``\\x1e``-framed); ``start-async`` / ``resume-async`` answer the result the
worker stored; cancel reaches the worker; and, without a runner, a leg recorded by one server is
observed through another server sharing the store."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from agentstream._abort import AbortController, until_aborted
from agentstream._mastra import Mastra
from agentstream.ai_sdk import run_workflow_job
from agentstream.resumable import MemoryStreamStore, WorkflowJob
from agentstream.storage import InMemoryStore
from agentstream.workflows import StepContext, create_step, create_workflow
from tests.mastra_api._flows_server import records, serve

ON_WORKER: list[str] = []


def _flow(where: str, gate: threading.Event | None = None) -> Any:
    async def draft(c: StepContext) -> Any:
        ON_WORKER.append(where)
        if c.input_data.get("slow"):
            await until_aborted(asyncio.sleep(30), c.abort_signal)
        while gate is not None and not gate.is_set():  # a leg that runs until the test lets it go
            await until_aborted(asyncio.sleep(0.02), c.abort_signal)
        return {"text": f"draft of {c.input_data['topic']}"}

    async def approve(c: StepContext) -> Any:
        if c.resume_data is None:
            return await c.suspend({"question": "ok?"})
        return {"approved": c.resume_data["approved"]}

    return (
        create_workflow(id="review")
        .then(create_step(id="draft", execute=draft))
        .then(create_step(id="approve", execute=approve))
        .commit()
    )


class Workers:
    """A `WorkflowRunner` whose worker runs each job in a task of the server's loop, on its own
    `Mastra` (same storage and store): the server hands over JSON and follows the stream."""

    def __init__(self, storage: InMemoryStore, store: MemoryStreamStore) -> None:
        self.mastra = Mastra(workflows={"review": _flow("worker")}, storage=storage)
        self.store = store
        self.jobs: list[WorkflowJob] = []
        self.running: dict[str, AbortController] = {}
        self.tasks: set[asyncio.Task[None]] = set()

    async def dispatch(self, job: WorkflowJob) -> None:
        self.jobs.append(job)
        controller = self.running[job["stream_id"]] = AbortController()
        task = asyncio.get_running_loop().create_task(
            run_workflow_job(self.mastra, self.store, job, abort_signal=controller.signal)
        )
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def cancel(self, stream_id: str) -> bool:
        controller = self.running.get(stream_id)
        if controller is None:
            return False
        controller.abort()
        return True


@pytest.fixture
def worker_app() -> Iterator[tuple[str, Workers]]:
    storage, store = InMemoryStore(), MemoryStreamStore()
    workers = Workers(storage, store)
    ON_WORKER.clear()
    # the server's own workflow would record "server": every leg must run on the worker
    server = Mastra(workflows={"review": _flow("server")}, storage=storage)
    with serve(server, stream_store=store, workflow_runner=workers) as url:
        yield url, workers


def test_legs_run_on_the_worker_and_stream_back(worker_app: tuple[str, Workers]) -> None:
    base, workers = worker_app
    with httpx.Client(base_url=f"{base}/api", timeout=30) as c:
        first = c.post("/workflows/review/stream?runId=w1", json={"inputData": {"topic": "tides"}})
        chunks = records(first.content)
        assert (
            chunks[0]["type"] == "workflow-start" and chunks[-1]["payload"]["workflowStatus"] == "suspended"
        )
        assert workers.jobs[0]["spec"]["options"]["wire"] == "mastra" and ON_WORKER == ["worker"]
        bad = c.post("/workflows/review/resume-async?runId=w1", json={"step": "draft", "resumeData": {}})
        assert bad.status_code == 409 and len(workers.jobs) == 1  # refused here: nothing dispatched
        resumed = c.post(
            "/workflows/review/resume-async?runId=w1", json={"resumeData": {"approved": True}}
        ).json()
        assert resumed["status"] == "success" and resumed["result"] == {"approved": True}, resumed
        assert resumed["steps"]["draft"]["output"] == {"text": "draft of tides"}
        started = c.post("/workflows/review/start-async", json={"inputData": {"topic": "moon"}}).json()
        assert started["status"] == "suspended" and started["suspended"] == [["approve"]]
        assert started["suspendPayload"] == {"approve": {"question": "ok?"}}
        assert c.get("/workflows/review/runs").json()["total"] == 2
        assert ON_WORKER == ["worker", "worker"] and len(workers.jobs) == 3


def test_cancel_reaches_the_worker(worker_app: tuple[str, Workers]) -> None:
    base, workers = worker_app
    with httpx.Client(base_url=f"{base}/api", timeout=30) as c:
        c.post("/workflows/review/create-run?runId=slow", json={})
        assert (
            c.post(
                "/workflows/review/start?runId=slow", json={"inputData": {"topic": "x", "slow": True}}
            ).status_code
            == 200
        )
        busy = c.post("/workflows/review/stream?runId=slow", json={"inputData": {"topic": "x"}})
        assert busy.status_code == 409
        cancelled = c.post("/workflows/review/runs/slow/cancel")
        assert cancelled.json() == {"message": "Workflow run cancelled"}, cancelled.text
        status = ""
        for _ in range(100):
            status = c.get("/workflows/review/runs/slow").json()["status"]
            if status == "canceled":
                break
            threading.Event().wait(0.05)
        assert status == "canceled"
        assert [c.signal.aborted for c in workers.running.values()] == [True]  # the worker was told


def test_a_recorded_leg_is_observed_through_another_server() -> None:
    storage, store = InMemoryStore(), MemoryStreamStore()
    gate = threading.Event()
    one = Mastra(workflows={"review": _flow("one", gate)}, storage=storage)
    two = Mastra(workflows={"review": _flow("two")}, storage=storage)
    with serve(one, stream_store=store) as first, serve(two, stream_store=store) as second:
        with (
            httpx.Client(base_url=f"{first}/api", timeout=30) as a,
            httpx.Client(base_url=f"{second}/api", timeout=30) as b,
        ):
            assert (
                a.post("/workflows/review/start?runId=o1", json={"inputData": {"topic": "t"}}).status_code
                == 404
            )
            a.post("/workflows/review/create-run?runId=o1", json={})
            assert (
                a.post("/workflows/review/start?runId=o1", json={"inputData": {"topic": "t"}}).status_code
                == 200
            )
            with b.stream("POST", "/workflows/review/observe?runId=o1") as watched:
                gate.set()
                body = b"".join(watched.iter_bytes())
            chunks = records(body)
            assert (
                chunks[0]["type"] == "workflow-start"
                and chunks[-1]["payload"]["workflowStatus"] == "suspended"
            )
            assert b.post("/workflows/review/runs/o1/cancel").status_code == 200  # suspended: from storage

"""Workflow runs execute on `agentstream worker --app` processes while servers check, dispatch and
stream them from Redis: real worker processes, a fresh PostgreSQL database per test (DBOS tables
and the runs' snapshots), Redis from scripts/redis.sh."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from starlette.applications import Starlette

from agentstream.durable import DurableWorkflows
from agentstream.resumable import RedisStreamStore
from agentstream.server import (
    RequestGuard,
    workflow_cancel_route,
    workflow_route,
    workflow_stream_route,
)
from tests.security._support import x_user

from .conftest import PYTHONPATH, ROOT, Workers, read_lines
from .test_chat_turns import _free_port, frames

APP = "tests.durable._workflow_app:mastra"


@pytest.fixture
def app_db(workers: Workers, monkeypatch: pytest.MonkeyPatch) -> str:
    """The run snapshots live in the test's database too; servers and workers inherit the variable."""
    monkeypatch.setenv("AGENTSTREAM_TEST_WORKFLOW_DB", workers.url)
    return workers.url


def workflow_worker(workers: Workers, redis: str, *extra: str) -> subprocess.Popen[bytes]:
    return workers.start("--app", APP, "--stream-store", redis, *extra, tools=None)


@contextlib.asynccontextmanager
async def in_test_server(
    url: str, redis: str, stop_timeout_s: float = 10.0
) -> AsyncIterator[httpx.AsyncClient]:
    """A server in this process (two principals: the ``x-user`` header) dispatching to the workers."""
    from tests.durable._workflow_app import mastra

    app_mastra = mastra()
    store = RedisStreamStore.from_url(redis, block_ms=100)
    runner = DurableWorkflows(url)
    guard = RequestGuard(auth=x_user)
    app = Starlette(
        routes=[
            workflow_route(app_mastra, stream_store=store, runner=runner, guard=guard),
            workflow_stream_route(store, guard=guard),
            workflow_cancel_route(
                app_mastra, guard=guard, stream_store=store, runner=runner, stop_timeout_s=stop_timeout_s
            ),
        ]
    )
    transport = httpx.ASGITransport(app=app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1", timeout=120) as client:
            yield client
    finally:
        runner.close()
        await store.aclose()
        await app_mastra.storage.close()


@contextlib.contextmanager
def serve(workers: Workers, redis: str) -> Iterator[str]:
    """An `agentstream serve --app` process handing workflow runs to the workers."""
    port = _free_port()
    command = [sys.executable, "-m", "agentstream", "serve", "--app", APP, "--port", str(port)]
    command += ["--durable-db", workers.url, "--stream-store", redis]
    log_path = workers.tmp / f"server-{port}.log"
    process = subprocess.Popen(
        command,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": PYTHONPATH},
        stdout=open(log_path, "wb"),
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(f"{base}/api/workflow", timeout=5)
                break
            except httpx.TransportError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"agentstream serve did not start: {log_path.read_text()}") from None
                time.sleep(0.1)
        yield base
    finally:
        process.terminate()
        process.wait(30)


def ui_chunks(text: str) -> list[dict[str, Any]]:
    payloads = list(frames(iter(text.splitlines())))
    assert payloads[-1] == "[DONE]"
    return [json.loads(p) for p in payloads[:-1]]


def final_workflow(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    return [c for c in chunks if c["type"] == "data-workflow"][-1]["data"]


def step_output(chunks: list[dict[str, Any]], step_id: str) -> Any:
    [step] = [c for c in chunks if c["type"] == "data-workflow-step" and c["data"]["stepId"] == step_id]
    return step["data"]["step"]["output"]


def shape(chunks: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """What must match between two streams of the same workflow: kinds, statuses, step outputs."""
    out: list[tuple[Any, ...]] = []
    for chunk in chunks:
        data = chunk.get("data") or {}
        steps = data.get("steps") or {}
        out.append((chunk["type"], data.get("status"), tuple((k, s.get("status")) for k, s in steps.items())))
    return out


async def _until(predicate: Any, what: str, limit: float = 90.0) -> None:
    """Polls; the limit only turns a hang into a failure naming what never happened."""
    deadline = asyncio.get_running_loop().time() + limit
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"never happened: {what}")
        await asyncio.sleep(0.05)


def inbox_jobs(url: str) -> list[str]:
    """The stream ids of the jobs waiting in the inbox for a worker."""
    with psycopg.connect(url) as conn:
        return [row[0] for row in conn.execute("SELECT stream_id FROM agentstream_durable_inbox").fetchall()]


def dbos_workflows(url: str) -> list[tuple[str, str, str]]:
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT name, status, executor_id FROM dbos.workflow_status").fetchall()
    return [tuple(row) for row in rows]


async def test_a_worker_killed_in_step_two_is_taken_over_and_step_one_does_not_run_again(
    workers: Workers, redis_url: str, app_db: str, tmp_path: Path
) -> None:
    log, gate = tmp_path / "steps.log", tmp_path / "gate"
    first = workflow_worker(workers, redis_url, "--lease-sec", "1.5")
    run_id = f"run-{uuid.uuid4().hex}"
    alice, bob = {"x-user": "alice"}, {"x-user": "bob"}
    request = {"runId": run_id, "inputData": {"log": str(log), "gate": str(gate)}}
    stream_url = f"/api/workflows/three/runs/{run_id}/stream"
    async with in_test_server(workers.url, redis_url) as client:
        started = asyncio.create_task(client.post("/api/workflows/three/stream", json=request, headers=alice))
        await _until(
            lambda: started.done() or any(line.startswith("two-started") for line in read_lines(log)),
            "step two",
        )
        assert not started.done(), started.result().text
        # Another principal learns nothing about the running run; its owner follows it from the start.
        assert (await client.get(stream_url, headers=bob)).status_code == 204
        resumed = asyncio.create_task(client.get(stream_url, headers=alice))
        os.kill(first.pid, signal.SIGKILL)
        first.wait()
        second = workflow_worker(workers, redis_url, "--lease-sec", "1.5")
        gate.touch()
        answer, again = await started, await resumed
        assert (await client.get(stream_url, headers=alice)).status_code == 204  # nothing active now
    assert answer.status_code == 200 and again.status_code == 200
    chunks = ui_chunks(answer.text)
    assert ui_chunks(again.text) == chunks  # the resume replayed the same recording
    lines = read_lines(log)
    # Step one (completed, recorded) ran once, on the first worker; step two (in flight) ran again.
    assert lines == [
        f"one {first.pid}",
        f"two-started {first.pid}",
        f"two-started {second.pid}",
        f"two {second.pid}",
        f"three {second.pid}",
    ]
    assert final_workflow(chunks)["status"] == "success"
    # The state step one set came back from its record: the second worker never ran step one.
    assert step_output(chunks, "three") == {"done": True, "state": {"after": "one"}}
    # Step one's own chunk: written once, by the first worker (the replay's copy had its number).
    assert [c["data"] for c in chunks if c["type"] == "data-one"] == [{"pid": first.pid}]
    # No chunk written twice: the stream is exactly the in-process one, chunk for chunk in shape.
    expected = await in_process_chunks(tmp_path)
    assert shape(chunks) == shape(expected)
    [(name, status, executor)] = dbos_workflows(workers.url)
    assert (name, status) == ("agentstream.workflow_run", "SUCCESS")
    assert executor.split(":")[1] == str(second.pid)


async def test_a_worker_killed_inside_a_nested_workflow_step_has_the_child_run_again(
    workers: Workers, redis_url: str, app_db: str, tmp_path: Path
) -> None:
    # The nested workflow is one step of its parent: the worker taking over runs the child afresh
    # (its saved run, left `running` by the dead worker, does not stop it).
    log, gate = tmp_path / "steps.log", tmp_path / "gate"
    first = workflow_worker(workers, redis_url, "--lease-sec", "1.5")
    run_id = f"run-{uuid.uuid4().hex}"
    request = {"runId": run_id, "inputData": {"log": str(log), "gate": str(gate)}}
    async with in_test_server(workers.url, redis_url) as client:
        started = asyncio.create_task(
            client.post("/api/workflows/nested/stream", json=request, headers={"x-user": "alice"})
        )
        await _until(
            lambda: started.done() or any(line.startswith("two-started") for line in read_lines(log)),
            "step two",
        )
        assert not started.done(), started.result().text
        os.kill(first.pid, signal.SIGKILL)
        first.wait()
        second = workflow_worker(workers, redis_url, "--lease-sec", "1.5")
        gate.touch()
        answer = await started
    assert answer.status_code == 200
    chunks = ui_chunks(answer.text)
    assert final_workflow(chunks)["status"] == "success", final_workflow(chunks)
    assert step_output(chunks, "inner") == {"done": True, "state": {"after": "one"}}  # the parent's state
    assert read_lines(log) == [
        f"one {first.pid}",
        f"two-started {first.pid}",
        f"two-started {second.pid}",
        f"two {second.pid}",
        f"three {second.pid}",
    ]


async def in_process_chunks(tmp: Path) -> list[dict[str, Any]]:
    """The same workflow answered by a plain `workflow_route` in this process (gate open)."""
    from tests.durable._workflow_app import mastra

    gate = tmp / "gate-open"
    gate.touch()
    app_mastra = mastra()
    app = Starlette(routes=[workflow_route(app_mastra)])
    request = {"inputData": {"log": str(tmp / "in-process.log"), "gate": str(gate)}}
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1"
        ) as c:
            answer = await c.post("/api/workflows/three/stream", json=request)
    finally:
        await app_mastra.storage.close()
    return ui_chunks(answer.text)


@pytest.mark.parametrize(
    ("workflow", "last_step"),
    [("approval", "publish"), ("review", "approval")],
    ids=["plain", "suspended-inside-a-nested-workflow"],
)
async def test_a_run_suspended_on_one_worker_resumes_through_another_server_on_another_worker(
    workers: Workers, redis_url: str, app_db: str, tmp_path: Path, workflow: str, last_step: str
) -> None:
    log = tmp_path / "steps.log"
    first = workflow_worker(workers, redis_url)
    run_id = f"run-{uuid.uuid4().hex}"
    with serve(workers, redis_url) as one, serve(workers, redis_url) as two:
        async with httpx.AsyncClient(timeout=120) as client:
            answer = await client.post(
                f"{one}/api/workflow/{workflow}/stream",
                json={"runId": run_id, "inputData": {"log": str(log), "gate": ""}},
            )
            assert answer.status_code == 200
            assert final_workflow(ui_chunks(answer.text))["status"] == "suspended"
            first.send_signal(signal.SIGTERM)
            first.wait(30)
            second = workflow_worker(workers, redis_url)
            bad = await client.post(
                f"{two}/api/workflow/{workflow}/resume",
                json={"runId": run_id, "resumeData": {"approved": "yes"}},
            )
            assert bad.status_code == 400 and "approved" in bad.json()["error"]["message"]
            resumed = await client.post(
                f"{two}/api/workflow/{workflow}/resume",
                json={"runId": run_id, "resumeData": {"approved": True}},
            )
            assert resumed.status_code == 200
            again = await client.post(
                f"{one}/api/workflow/{workflow}/resume",
                json={"runId": run_id, "resumeData": {"approved": True}},
            )
            assert again.status_code == 409  # resumed once, not twice
    resumed_chunks = ui_chunks(resumed.text)
    assert final_workflow(resumed_chunks)["status"] == "success"
    assert step_output(resumed_chunks, last_step) == {"published": True, "pid": second.pid}
    assert read_lines(log) == [f"asked {first.pid}", f"answered {second.pid}", f"published {second.pid}"]
    legs = dbos_workflows(workers.url)
    assert len(legs) == 2 and all(status == "SUCCESS" for _, status, _ in legs)


async def test_refusals_are_answered_by_the_server_and_never_enqueued(
    workers: Workers, redis_url: str, app_db: str
) -> None:
    async with in_test_server(workers.url, redis_url) as client:
        headers = {"x-user": "alice"}
        unknown = await client.post("/api/workflows/nope/stream", json={"inputData": {}}, headers=headers)
        bad = await client.post(
            "/api/workflows/three/stream", json={"inputData": {"log": "x"}}, headers=headers
        )
        missing = await client.post(
            "/api/workflows/approval/stream", json={"runId": "nope", "resumeData": {}}, headers=headers
        )
    assert unknown.status_code == 404
    assert bad.status_code == 400 and bad.json()["error"]["path"] == "gate"
    assert missing.status_code == 404 and missing.json()["error"]["path"] == "runId"
    assert dbos_workflows(workers.url) == []


async def snapshot_status(workflow_id: str, run_id: str) -> Any:
    """The run's status in the snapshot storage the servers and workers share."""
    from tests.durable._workflow_app import mastra

    app_mastra = mastra()
    try:
        snapshot = await app_mastra.storage.load_workflow_snapshot(workflow_id, run_id)
    finally:
        await app_mastra.storage.close()
    return snapshot["status"] if isinstance(snapshot, dict) else None


async def test_a_run_on_a_worker_is_cancelled_through_another_server(
    workers: Workers, redis_url: str, app_db: str, tmp_path: Path
) -> None:
    log, gate = tmp_path / "steps.log", tmp_path / "gate"  # the gate stays shut: only a cancel ends step two
    worker = workflow_worker(workers, redis_url)
    run_id = f"run-{uuid.uuid4().hex}"
    request = {"runId": run_id, "inputData": {"log": str(log), "gate": str(gate)}}
    with serve(workers, redis_url) as one, serve(workers, redis_url) as two:
        async with httpx.AsyncClient(timeout=120) as client:
            started = asyncio.create_task(client.post(f"{one}/api/workflow/three/stream", json=request))
            await _until(
                lambda: started.done() or any(line.startswith("two-started") for line in read_lines(log)),
                "step two",
            )
            assert not started.done(), started.result().text
            unknown = await client.post(f"{two}/api/workflow/three/runs/nope/cancel")
            cancelled = await client.post(f"{two}/api/workflow/three/runs/{run_id}/cancel")
            answer = await started
    assert unknown.status_code == 404
    assert cancelled.status_code == 200 and cancelled.json() == {"message": "Workflow run cancelled"}
    chunks = ui_chunks(answer.text)
    assert final_workflow(chunks)["status"] == "canceled" and chunks[-1] == {"type": "finish"}
    assert read_lines(log) == [f"one {worker.pid}", f"two-started {worker.pid}"]  # three never ran
    assert await snapshot_status("three", run_id) == "canceled"
    assert [(name, status) for name, status, _ in dbos_workflows(workers.url)] == [
        ("agentstream.workflow_run", "CANCELLED")
    ]


async def test_a_cancelled_leg_whose_worker_does_not_end_it_is_ended_by_the_server(
    workers: Workers, redis_url: str, app_db: str, tmp_path: Path
) -> None:
    # The worker is stopped (SIGSTOP) mid-step: it cannot see the cancel, as one that died or took
    # the leg in the instant of the cancel cannot. The route ends the stream after stop_timeout_s.
    log, gate = tmp_path / "steps.log", tmp_path / "gate"
    worker = workflow_worker(workers, redis_url)
    run_id = f"run-{uuid.uuid4().hex}"
    alice = {"x-user": "alice"}
    request = {"runId": run_id, "inputData": {"log": str(log), "gate": str(gate)}}
    async with in_test_server(workers.url, redis_url, stop_timeout_s=1.0) as client:
        started = asyncio.create_task(client.post("/api/workflows/three/stream", json=request, headers=alice))
        await _until(
            lambda: started.done() or any(line.startswith("two-started") for line in read_lines(log)),
            "step two",
        )
        assert not started.done(), started.result().text
        os.kill(worker.pid, signal.SIGSTOP)
        try:
            cancelled = await client.post(f"/api/workflows/three/runs/{run_id}/cancel", headers=alice)
            answer = await started
        finally:
            os.kill(worker.pid, signal.SIGCONT)
        gate.touch()  # the woken worker sees the cancel; its late writes find the stream ended
        replay = await client.get(f"/api/workflows/three/runs/{run_id}/stream", headers=alice)
    # The worker ends its run itself once woken: the run's snapshot says so.
    deadline = asyncio.get_running_loop().time() + 60
    while await snapshot_status("three", run_id) != "canceled":
        assert asyncio.get_running_loop().time() < deadline, "the woken worker never ended its run"
        await asyncio.sleep(0.1)
    assert cancelled.status_code == 200, cancelled.text
    chunks = ui_chunks(answer.text)
    assert final_workflow(chunks)["status"] == "canceled" and chunks[-1] == {"type": "finish"}
    assert replay.status_code == 204
    assert worker.poll() is None  # alive: a stream ended under it is no crash
    assert "three" not in [line.split()[0] for line in read_lines(log)]


async def test_a_leg_no_worker_started_is_cancelled_by_its_owner_and_its_stream_ended(
    workers: Workers, redis_url: str, app_db: str, tmp_path: Path
) -> None:
    run_id = f"run-{uuid.uuid4().hex}"  # no worker runs: the leg stays queued
    request = {"runId": run_id, "inputData": {"log": str(tmp_path / "steps.log"), "gate": ""}}
    cancel_url = f"/api/workflows/three/runs/{run_id}/cancel"
    async with in_test_server(workers.url, redis_url) as client:
        started = asyncio.create_task(
            client.post("/api/workflows/three/stream", json=request, headers={"x-user": "alice"})
        )
        await _until(lambda: started.done() or inbox_jobs(workers.url), "the leg enqueued")
        stranger = await client.post(cancel_url, headers={"x-user": "bob"})
        cancelled = await client.post(cancel_url, headers={"x-user": "alice"})
        answer = await started
        replay = await client.get(f"/api/workflows/three/runs/{run_id}/stream", headers={"x-user": "alice"})
    assert stranger.status_code == 404 and stranger.json()["error"]["message"] == "Workflow run not found"
    assert cancelled.status_code == 200
    chunks = ui_chunks(answer.text)
    assert [c["type"] for c in chunks] == ["start", "data-workflow", "finish"]
    assert final_workflow(chunks)["status"] == "canceled"
    assert replay.status_code == 204  # nothing streams for the run any more
    assert await snapshot_status("three", run_id) == "canceled"
    # Taken back from the inbox before any worker claimed it: it never became a DBOS workflow.
    assert dbos_workflows(workers.url) == [] and inbox_jobs(workers.url) == []
    assert not (tmp_path / "steps.log").exists()

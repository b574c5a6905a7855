"""The Mastra API's workflows routes over real HTTP: list and details in Mastra's shapes, a run
created, streamed to its suspension (``\\x1e``-framed chunks), resumed, listed and read back;
start / start-async / resume-async; observe; cancel; refusals naming the field."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from agentstream._mastra import Mastra
from agentstream.server import RequestGuard
from agentstream.workflows import StepContext, create_step, create_workflow
from tests.mastra_api._flows_server import ALICE, BOB, auth, records, serve

TOPIC = {"type": "object", "properties": {"topic": {"type": "string", "minLength": 1}}, "required": ["topic"]}
DECISION = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}, "note": {"type": "string"}},
    "required": ["approved"],
}


async def _draft(context: StepContext) -> dict[str, Any]:
    context.writer.write({"status": "drafting"})
    return {"topic": context.input_data["topic"], "text": f"all about {context.input_data['topic']}"}


async def _approve(context: StepContext) -> Any:
    if context.resume_data is None:
        return await context.suspend({"question": "Publish this draft?"})
    return {**context.input_data, "approved": context.resume_data["approved"]}


async def _publish(context: StepContext) -> dict[str, Any]:
    return {"published": context.input_data["approved"], "topic": context.input_data["topic"]}


def review_workflow() -> Any:
    draft = create_step(id="draft", input_schema=TOPIC, execute=_draft)
    approve = create_step(
        id="approve",
        description="A person approves the draft",
        suspend_schema={"type": "object", "properties": {"question": {"type": "string"}}},
        resume_schema=DECISION,
        execute=_approve,
    )
    publish = create_step(id="publish", execute=_publish)
    return (
        create_workflow(id="review", description="Draft, approve, publish.", input_schema=TOPIC)
        .then(draft)
        .then(approve)
        .then(publish)
        .commit()
    )


@pytest.fixture
def base() -> Iterator[str]:
    with serve(Mastra(workflows={"review": review_workflow()}), guard=RequestGuard(auth=auth)) as url:
        yield url


@pytest.fixture
def client(base: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=f"{base}/api", headers=ALICE, timeout=20) as c:
        yield c


def test_list_and_details_are_mastras_shapes(client: httpx.Client) -> None:
    listed = client.get("/workflows").json()
    assert list(listed) == ["review"]
    info = client.get("/workflows/review").json()
    assert info["name"] == "review" and info["description"] == "Draft, approve, publish."
    assert (
        list(info["steps"]) == ["draft", "approve", "publish"]
        and info["allSteps"]["approve"]["isWorkflow"] is False
    )
    assert info["stepGraph"] == [
        {"type": "step", "step": {"id": "draft", "canSuspend": False}},
        {
            "type": "step",
            "step": {"id": "approve", "description": "A person approves the draft", "canSuspend": True},
        },
        {"type": "step", "step": {"id": "publish", "canSuspend": False}},
    ]
    # schemas travel as superjson strings, as client-js's getSchema parses them
    assert json.loads(info["inputSchema"])["json"]["properties"]["topic"]["minLength"] == 1
    assert json.loads(info["steps"]["approve"]["resumeSchema"])["json"]["required"] == ["approved"]
    partial = client.get("/workflows", params={"partial": "true"}).json()["review"]
    assert partial["stepCount"] == 3 and partial["steps"] == {} and "inputSchema" not in partial
    missing = client.get("/workflows/nope")
    assert missing.status_code == 404 and missing.json() == {"error": "Workflow not found"}


def test_a_run_streams_to_its_suspension_resumes_and_reads_back(client: httpx.Client) -> None:
    run_id = client.post("/workflows/review/create-run", json={}).json()["runId"]
    pending = client.get(f"/workflows/review/runs/{run_id}").json()
    assert pending["status"] == "pending" and pending["runId"] == run_id
    first = client.post(f"/workflows/review/stream?runId={run_id}", json={"inputData": {"topic": "tides"}})
    assert first.status_code == 200 and first.headers["content-type"].startswith("text/plain")
    chunks = records(first.content)
    types = [c["type"] for c in chunks]
    assert types[0] == "workflow-start" and types[-1] == "workflow-finish", types
    assert chunks[-1]["payload"]["workflowStatus"] == "suspended"
    suspended = next(c for c in chunks if c["type"] == "workflow-step-suspended")
    assert suspended["payload"]["id"] == "approve"
    assert suspended["payload"]["suspendPayload"] == {"question": "Publish this draft?"}
    assert any(
        c["type"] == "workflow-step-output" and c["payload"]["output"] == {"status": "drafting"}
        for c in chunks
    )

    stored = client.get(f"/workflows/review/runs/{run_id}").json()
    assert stored["status"] == "suspended" and stored["payload"] == {"topic": "tides"}
    assert stored["steps"]["approve"]["status"] == "suspended" and stored["suspendedPaths"] == {
        "approve": [1]
    }

    second = client.post(
        f"/workflows/review/resume-stream?runId={run_id}",
        json={"step": "approve", "resumeData": {"approved": True}},
    )
    finish = records(second.content)[-1]
    assert finish["type"] == "workflow-finish" and finish["payload"]["workflowStatus"] == "success"
    assert finish["payload"]["finalWorkflowResult"] == {"published": True, "topic": "tides"}

    done = client.get(f"/workflows/review/runs/{run_id}").json()
    assert done["status"] == "success" and done["result"] == {"published": True, "topic": "tides"}
    only = client.get(f"/workflows/review/runs/{run_id}", params={"fields": "result"}).json()
    assert set(only) == {"runId", "workflowName", "resourceId", "createdAt", "updatedAt", "status", "result"}
    assert only["resourceId"] == "alice"

    listed = client.get("/workflows/review/runs").json()
    assert listed["total"] == 1 and listed["runs"][0]["runId"] == run_id
    snapshot = listed["runs"][0]["snapshot"]
    assert snapshot["status"] == "success" and snapshot["context"]["input"] == {"topic": "tides"}
    assert "owner" not in snapshot and snapshot["serializedStepGraph"][1]["step"]["id"] == "approve"
    again = client.post(f"/workflows/review/stream?runId={run_id}", json={"inputData": {"topic": "x"}})
    assert again.status_code == 409 and again.json()["issues"][0]["field"] == "runId"


def test_start_async_resume_async_and_fire_and_forget(client: httpx.Client) -> None:
    result = client.post("/workflows/review/start-async", json={"inputData": {"topic": "moon"}}).json()
    assert result["status"] == "suspended" and result["suspended"] == [["approve"]]
    assert result["suspendPayload"] == {"approve": {"question": "Publish this draft?"}}
    run_id = result["runId"]
    resumed = client.post(
        f"/workflows/review/resume-async?runId={run_id}",
        json={"step": "approve", "resumeData": {"approved": False}},
    ).json()
    assert resumed["status"] == "success" and resumed["result"] == {"published": False, "topic": "moon"}

    client.post("/workflows/review/create-run?runId=later", json={})
    assert client.post(
        "/workflows/review/start?runId=later", json={"inputData": {"topic": "sun"}}
    ).json() == {"message": "Workflow run started"}
    status = _wait_status(client, "later", "suspended")
    assert status == "suspended"
    answer = client.post("/workflows/review/resume?runId=later", json={"resumeData": {"approved": True}})
    assert answer.json() == {"message": "Workflow run resumed"}
    assert _wait_status(client, "later", "success") == "success"
    never = client.post("/workflows/review/start?runId=never-created", json={"inputData": {"topic": "x"}})
    assert never.status_code == 404 and never.json() == {"error": "Workflow run not found"}


def _wait_status(client: httpx.Client, run_id: str, status: str) -> str:
    import time

    seen = ""
    for _ in range(200):
        seen = client.get(f"/workflows/review/runs/{run_id}", params={"fields": "result"}).json()["status"]
        if seen == status:
            break
        time.sleep(0.05)
    return seen


def test_bad_input_and_bad_resume_data_are_400_naming_the_field(client: httpx.Client) -> None:
    bad = client.post("/workflows/review/start-async", json={"inputData": {"topic": ""}})
    assert bad.status_code == 400, bad.text
    assert bad.json()["issues"][0]["field"] == "inputData.topic" and "topic" in bad.json()["error"]
    streamed = client.post("/workflows/review/stream?runId=s1", json={"inputData": {}})
    assert streamed.status_code == 400 and streamed.json()["issues"][0]["field"] == "inputData.topic"
    run_id = client.post("/workflows/review/start-async", json={"inputData": {"topic": "ok"}}).json()["runId"]
    wrong = client.post(
        f"/workflows/review/resume-stream?runId={run_id}",
        json={"step": "approve", "resumeData": {"approved": "yes"}},
    )
    assert wrong.status_code == 400 and wrong.json()["issues"][0]["field"] == "resumeData.approved", (
        wrong.text
    )
    not_there = client.post(
        f"/workflows/review/resume-async?runId={run_id}", json={"step": "draft", "resumeData": {}}
    )
    assert not_there.status_code == 409 and "not suspended" in not_there.json()["error"]
    unknown = client.post("/workflows/review/start-async", json={"inputData": {"topic": "a"}, "inputDta": 1})
    assert unknown.status_code == 400 and unknown.json()["issues"][0]["field"] == "inputDta"
    no_run = client.post("/workflows/review/stream", json={"inputData": {"topic": "a"}})
    assert no_run.status_code == 400 and no_run.json()["issues"][0]["field"] == "runId"
    fields = client.get(f"/workflows/review/runs/{run_id}", params={"fields": "result,secrets"})
    assert fields.status_code == 400 and fields.json()["issues"][0]["field"] == "fields"


def test_cancel_a_suspended_run_and_observe(client: httpx.Client) -> None:
    run_id = client.post("/workflows/review/start-async", json={"inputData": {"topic": "c"}}).json()["runId"]
    observed = client.post(f"/workflows/review/observe?runId={run_id}")
    assert observed.status_code == 200 and observed.content == b""  # nothing streams while it waits
    assert client.post(f"/workflows/review/runs/{run_id}/cancel").json() == {
        "message": "Workflow run cancelled"
    }
    assert client.get(f"/workflows/review/runs/{run_id}").json()["status"] == "canceled"
    late = client.post(
        f"/workflows/review/resume-async?runId={run_id}", json={"resumeData": {"approved": True}}
    )
    assert late.status_code == 409
    assert client.post("/workflows/review/runs/nope/cancel").status_code == 404
    deleted = client.delete(f"/workflows/review/runs/{run_id}")
    assert deleted.json() == {"message": "Workflow run deleted"}
    assert client.get(f"/workflows/review/runs/{run_id}").status_code == 404


def test_another_users_runs_do_not_exist_for_them(base: str, client: httpx.Client) -> None:
    run_id = client.post("/workflows/review/start-async", json={"inputData": {"topic": "mine"}}).json()[
        "runId"
    ]
    with httpx.Client(base_url=f"{base}/api", headers=BOB, timeout=20) as bob:
        for method, path, body in [
            ("GET", f"/workflows/review/runs/{run_id}", None),
            ("DELETE", f"/workflows/review/runs/{run_id}", None),
            ("POST", f"/workflows/review/resume-stream?runId={run_id}", {"resumeData": {"approved": True}}),
            ("POST", f"/workflows/review/resume-async?runId={run_id}", {"resumeData": {"approved": True}}),
            ("POST", f"/workflows/review/observe?runId={run_id}", None),
            ("POST", f"/workflows/review/runs/{run_id}/cancel", None),
            ("POST", f"/workflows/review/start?runId={run_id}", {"inputData": {"topic": "x"}}),
        ]:
            answer = bob.request(method, path, json=body)
            assert answer.status_code == 404, (method, path, answer.text)
            assert answer.json() == {"error": "Workflow run not found"}
        assert bob.get("/workflows/review/runs").json() == {"runs": [], "total": 0}
        spoof = bob.get("/workflows/review/runs", params={"resourceId": "alice"})
        assert spoof.status_code == 403
        taken = bob.post(f"/workflows/review/create-run?runId={run_id}", json={})
        assert taken.status_code == 409
    assert client.get(f"/workflows/review/runs/{run_id}").json()["status"] == "suspended"
    anonymous = httpx.get(f"{base}/api/workflows/review/runs")
    assert anonymous.status_code == 401


def test_hostile_ids_and_oversize_bodies_are_refused(base: str, client: httpx.Client) -> None:
    for run_id in ["a\x00b", "x" * 300, "tab\there"]:
        answer = client.post(
            "/workflows/review/stream", params={"runId": run_id}, json={"inputData": {"topic": "a"}}
        )
        assert answer.status_code == 400 and answer.json()["issues"][0]["field"] == "runId", run_id
    assert client.get("/workflows/review/runs/a%00b").status_code == 400
    big = client.post(
        "/workflows/review/start-async",
        content=b'{"inputData": {"topic": "' + b"x" * 2_000_000 + b'"}}',
        headers={"content-type": "application/json"},
    )
    assert big.status_code == 413
    assert (
        client.post(
            "/workflows/review/create-run", content=b"[1]", headers={"content-type": "application/json"}
        ).status_code
        == 400
    )
    listed = client.get("/workflows/review/runs", params={"perPage": "-1"})
    assert listed.status_code == 400 and listed.json()["issues"][0]["field"] == "perPage"

"""Workflows over HTTP: ``handle_workflow_stream``, ``workflow_route`` and the ``agentstream serve`` app's
workflow endpoints — streaming, resuming, refusals, and one user's runs hidden from another."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request

from agentstream import Mastra
from agentstream._app import create_app
from agentstream.ai_sdk import ChatRequestError, handle_workflow_stream
from agentstream.server import RequestGuard, workflow_route
from agentstream.workflows import StepContext, create_step, create_workflow

DECISION = {"type": "object", "properties": {"approved": {"type": "boolean"}}, "required": ["approved"]}


async def _approve(c: StepContext) -> Any:
    if c.resume_data is None:
        return await c.suspend({"question": f"approve {c.input_data['n']}?"})
    return {"n": c.input_data["n"], "approved": c.resume_data["approved"]}


def _mastra() -> Mastra:
    workflow = (
        create_workflow(
            id="approval",
            input_schema={"type": "object", "properties": {"n": {"type": "number"}}, "required": ["n"]},
        )
        .then(create_step(id="approve", resume_schema=DECISION, execute=_approve))
        .commit()
    )
    return Mastra(workflows={"approval": workflow})


def _events(body: str) -> list[dict[str, Any]]:
    out = []
    for line in body.splitlines():
        if line.startswith("data: ") and line != "data: [DONE]":
            out.append(json.loads(line[6:]))
    return out


def _by_user(request: Request) -> str | None:
    token = request.headers.get("authorization", "").removeprefix("Bearer ")
    return {"alice-token": "alice", "bob-token": "bob"}.get(token)


def _client(auth: bool = False) -> httpx.AsyncClient:
    guard = RequestGuard(auth=_by_user) if auth else RequestGuard()
    return _over(Starlette(routes=[workflow_route(_mastra(), guard=guard)]))


def _over(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1")


async def test_handle_workflow_stream_refuses_before_streaming() -> None:
    mastra = _mastra()
    cases: list[tuple[dict[str, Any], int, str]] = [
        ({"inputData": {"n": "x"}}, 400, "- n: Invalid input: expected number, received string"),
        ({"resumeData": {}}, 400, "runId is required when resumeData is provided"),
        ({"runId": "nope", "resumeData": {"approved": True}}, 404, "run nope not found"),
        ({"inputData": {}, "extra": 1}, 400, "unknown field(s) ['extra']"),
        ({"runId": "x" * 300, "inputData": {"n": 1}}, 400, "runId: expected a non-empty string"),
    ]
    for params, status, message in cases:
        with pytest.raises(ChatRequestError) as info:
            await handle_workflow_stream(mastra=mastra, workflow_id="approval", params=params)
        assert info.value.status_code == status and message in str(info.value), (params, str(info.value))
    with pytest.raises(ChatRequestError, match="Workflow nope not found") as info:
        await handle_workflow_stream(mastra=mastra, workflow_id="nope", params={})
    assert info.value.status_code == 404


async def test_route_streams_a_run_then_resumes_it() -> None:
    client = _client()
    response = await client.post(
        "/api/workflows/approval/stream", json={"inputData": {"n": 2}, "runId": "r1"}
    )
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
    events = _events(response.text)
    assert events[0] == {"type": "start"} and events[-1] == {"type": "finish"}
    assert events[-2]["data"]["status"] == "suspended"
    assert events[-2]["data"]["steps"]["approve"]["suspendPayload"] == {"question": "approve 2?"}

    bad = await client.post(
        "/api/workflows/approval/stream", json={"runId": "r1", "resumeData": {"approved": "y"}}
    )
    assert (
        bad.status_code == 400
        and "approved: Invalid input: expected boolean" in bad.json()["error"]["message"]
    )
    again = await client.post("/api/workflows/approval/stream", json={"runId": "r1", "inputData": {"n": 2}})
    assert again.status_code == 409
    resumed = await client.post(
        "/api/workflows/approval/stream", json={"runId": "r1", "resumeData": {"approved": True}}
    )
    final = _events(resumed.text)[-2]
    assert final["data"]["status"] == "success"
    assert final["data"]["steps"]["approve"]["output"] == {"n": 2, "approved": True}
    twice = await client.post(
        "/api/workflows/approval/stream", json={"runId": "r1", "resumeData": {"approved": True}}
    )
    assert twice.status_code == 409 and "not suspended" in twice.json()["error"]["message"]


async def test_one_user_cannot_see_or_resume_another_users_run() -> None:
    client = _client(auth=True)
    assert (
        await client.post("/api/workflows/approval/stream", json={"inputData": {"n": 1}})
    ).status_code == 401
    alice = {"authorization": "Bearer alice-token"}
    bob = {"authorization": "Bearer bob-token"}
    started = await client.post(
        "/api/workflows/approval/stream", json={"inputData": {"n": 1}, "runId": "a1"}, headers=alice
    )
    assert _events(started.text)[-2]["data"]["status"] == "suspended"
    stolen = await client.post(
        "/api/workflows/approval/stream", json={"runId": "a1", "resumeData": {"approved": True}}, headers=bob
    )
    assert stolen.status_code == 404 and stolen.json()["error"]["message"] == "run a1 not found"
    reuse = await client.post(
        "/api/workflows/approval/stream", json={"runId": "a1", "inputData": {"n": 1}}, headers=bob
    )
    assert reuse.status_code == 404
    mine = await client.post(
        "/api/workflows/approval/stream",
        json={"runId": "a1", "resumeData": {"approved": False}},
        headers=alice,
    )
    assert _events(mine.text)[-2]["data"]["status"] == "success"


async def test_route_checks_requests_like_the_chat_route() -> None:
    client = _client()
    plain = await client.post(
        "/api/workflows/approval/stream", content=b"{}", headers={"content-type": "text/plain"}
    )
    assert plain.status_code == 415
    assert (await client.post("/api/workflows/approval/stream", json=[1])).status_code == 400
    cross = await client.post(
        "/api/workflows/approval/stream",
        json={"inputData": {"n": 1}},
        headers={"origin": "http://evil.example"},
    )
    assert cross.status_code == 403
    big = await client.post(
        "/api/workflows/approval/stream",
        content=b'{"inputData": "' + b"x" * (2 << 20) + b'"}',
        headers={"content-type": "application/json"},
    )
    assert big.status_code == 413


async def test_serve_app_lists_streams_and_resumes_workflows() -> None:
    client = _over(create_app(_mastra()))
    listed = (await client.get("/api/workflow")).json()["workflows"]
    assert [w["id"] for w in listed] == ["approval"]
    assert listed[0]["steps"]["approve"]["resumeSchema"] == DECISION
    started = await client.post("/api/workflow/approval/stream", json={"inputData": {"n": 5}, "runId": "s1"})
    assert _events(started.text)[-2]["data"]["status"] == "suspended"
    missing = await client.post("/api/workflow/approval/resume", json={"runId": "s1"})
    assert missing.status_code == 400 and missing.json()["error"]["path"] == "resumeData"
    resumed = await client.post(
        "/api/workflow/approval/resume", json={"runId": "s1", "resumeData": {"approved": True}}
    )
    assert _events(resumed.text)[-2]["data"]["status"] == "success"
    assert (await client.get("/api/workflow", headers={"host": "evil.example"})).status_code == 403


async def test_a_nested_workflows_suspension_is_resumed_over_http() -> None:
    inner = _mastra().get_workflow("approval")
    outer = create_workflow(id="outer").then(inner).commit()
    mastra = Mastra(workflows={"outer": outer, "approval": inner})
    client = _over(Starlette(routes=[workflow_route(mastra)]))
    started = await client.post("/api/workflows/outer/stream", json={"inputData": {"n": 3}, "runId": "o1"})
    suspended = _events(started.text)[-2]["data"]
    assert suspended["status"] == "suspended"
    payload = suspended["steps"]["approval"]["suspendPayload"]
    assert payload == {
        "question": "approve 3?",
        "__workflow_meta": {"runId": "o1.approval", "path": ["approve"]},
    }
    # The child's resume schema is checked by the parent's route: 400 naming the field, nothing lost.
    bad = await client.post(
        "/api/workflows/outer/stream",
        json={"runId": "o1", "step": ["approval", "approve"], "resumeData": {"approved": "y"}},
    )
    assert bad.status_code == 400 and "approved: Invalid input: expected boolean" in bad.text
    resumed = await client.post(
        "/api/workflows/outer/stream",
        json={"runId": "o1", "step": ["approval", "approve"], "resumeData": {"approved": True}},
    )
    final = _events(resumed.text)[-2]["data"]
    assert final["status"] == "success"
    assert final["steps"]["approval"]["output"] == {"n": 3, "approved": True}

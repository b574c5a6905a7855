"""The owner-rule walk over the Mastra API's workflows, memory and observability routes (for
tests/security/test_owner_rule.py): Alice's run, thread and trace are hers under her owner key;
another principal of the same kind gets 404 (nothing seen, resumed, cancelled, changed), naming
Alice's resource is 403, no principal is 401."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import httpx
from starlette.requests import Request

from agentstream.server import owner_key
from agentstream.storage import SpanRecord

ALICE, BOB = {"x-user": "alice"}, {"x-user": "bob"}
WF = "/api/workflows/{workflow_id}"
THREAD = "/api/memory/threads/{thread_id}"
TRACE = "/api/observability/traces/{trace_id}"


def _owner(hook: Callable[[Request], object], user: str) -> str:
    key = owner_key(hook(Request({"type": "http", "headers": [(b"x-user", user.encode())]})))
    assert key is not None
    return key


async def _refused(c: httpx.AsyncClient, method: str, path: str, body: Any = None) -> None:
    foreign = await c.request(method, path, json=body, headers=BOB)
    assert foreign.status_code == 404, (method, path, foreign.text)
    assert (await c.request(method, path, json=body)).status_code == 401, (method, path)


async def _workflows(world: Any, c: httpx.AsyncClient) -> None:
    # runs m1.. of workflow "w" (its step "ask" suspends, then returns the resume data)
    base = "/api/workflows/w"
    made = await c.post(f"{base}/create-run?runId=m1", json={}, headers=ALICE)
    assert made.status_code == 200, made.text
    await _refused(c, "POST", f"{base}/start?runId=m1", {"inputData": {}})
    await _refused(c, "POST", f"{base}/stream?runId=m1", {"inputData": {}})
    assert (await c.post(f"{base}/create-run?runId=m1", json={}, headers=BOB)).status_code == 409
    assert (await c.post(f"{base}/start?runId=m1", json={"inputData": {}}, headers=ALICE)).status_code == 200
    started = await c.post(f"{base}/start-async?runId=m2", json={"inputData": {}}, headers=ALICE)
    assert started.json()["status"] == "suspended", started.text
    resume = {"step": "ask", "resumeData": {"ok": True}}
    for route in ("resume", "resume-async", "resume-stream", "observe"):
        await _refused(c, "POST", f"{base}/{route}?runId=m2", resume if route != "observe" else None)
    await _refused(c, "GET", f"{base}/runs/m2")
    await _refused(c, "DELETE", f"{base}/runs/m2")
    await _refused(c, "POST", f"{base}/runs/m2/cancel")
    assert (await c.get(f"{base}/runs", headers=BOB)).json() == {"runs": [], "total": 0}
    alice = world.owner_of("alice")
    assert (await c.get(f"{base}/runs", params={"resourceId": alice}, headers=BOB)).status_code == 403
    listed = {r["runId"] for r in (await c.get(f"{base}/runs", headers=ALICE)).json()["runs"]}
    assert {"m1", "m2"} <= listed, listed  # with the AI SDK route's runs, in the same storage
    assert (await c.get(f"{base}/runs/m2", headers=ALICE)).json()["status"] == "suspended"
    resumed = await c.post(f"{base}/resume-stream?runId=m2", json=resume, headers=ALICE)
    assert resumed.status_code == 200 and b'"workflowStatus":"success"' in resumed.content, resumed.text
    streamed = await c.post(f"{base}/stream?runId=m3", json={"inputData": {}}, headers=ALICE)
    assert b'"workflowStatus":"suspended"' in streamed.content
    for route, body in (("resume", resume), ("resume-async", resume)):
        assert (
            await c.post(f"{base}/start-async?runId={route}", json={"inputData": {}}, headers=ALICE)
        ).status_code == 200
        assert (await c.post(f"{base}/{route}?runId={route}", json=body, headers=ALICE)).status_code == 200
    assert (await c.post(f"{base}/observe?runId=m3", headers=ALICE)).status_code == 200
    assert (await c.post(f"{base}/runs/m3/cancel", headers=ALICE)).status_code == 200
    assert (await c.delete(f"{base}/runs/m3", headers=ALICE)).status_code == 200
    for path in (base, "/api/workflows", "/api/workflows/run-counts"):
        assert (await c.get(path, headers=BOB)).status_code == 200, path
        assert (await c.get(path)).status_code == 401, path
    assert (await c.get("/api/workflows/run-counts", headers=BOB)).json()["w"] == {
        "running": 0,
        "suspended": 0,
    }
    assert (await c.get("/api/workflows/run-counts", headers=ALICE)).json()["w"]["suspended"] >= 1
    world.walked |= {("GET", "/api/workflows"), ("GET", "/api/workflows/run-counts")}
    for route in (
        "create-run",
        "start",
        "start-async",
        "stream",
        "resume",
        "resume-async",
        "resume-stream",
        "observe",
    ):
        world.mark("POST", f"{WF}/{route}")
    world.walked |= {
        ("GET", WF),
        ("GET", f"{WF}/runs"),
        ("GET", f"{WF}/runs/{{run_id}}"),
        ("DELETE", f"{WF}/runs/{{run_id}}"),
    }
    world.mark("POST", f"{WF}/runs/{{run_id}}/cancel")


async def _memory(world: Any, c: httpx.AsyncClient, alice: str) -> None:
    q = "?agentId=teller"
    made = await c.post(f"/api/memory/threads{q}", json={"threadId": "t-flows"}, headers=ALICE)
    assert made.status_code == 200 and made.json()["resourceId"] == alice, made.text
    assert (
        await c.post(f"/api/memory/threads{q}", json={"resourceId": alice}, headers=BOB)
    ).status_code == 403
    message = {"id": "mf1", "threadId": "t-flows", "resourceId": alice, "role": "user", "content": "hi"}
    assert (
        await c.post(f"/api/memory/save-messages{q}", json={"messages": [message]}, headers=BOB)
    ).status_code == 403
    saved = await c.post(f"/api/memory/save-messages{q}", json={"messages": [message]}, headers=ALICE)
    assert saved.status_code == 200, saved.text
    mine = {**message, "resourceId": world.owner_of("bob")}  # Bob's own message, into Alice's thread
    assert (
        await c.post(f"/api/memory/save-messages{q}", json={"messages": [mine]}, headers=BOB)
    ).status_code == 404
    await _refused(c, "PATCH", f"/api/memory/threads/t-flows{q}", {"title": "taken"})
    await _refused(c, "GET", f"/api/memory/threads/t-flows/working-memory{q}")
    await _refused(c, "POST", f"/api/memory/threads/t-flows/working-memory{q}", {"workingMemory": "x"})
    gone = await c.post(f"/api/memory/messages/delete{q}", json={"messageIds": ["mf1"]}, headers=BOB)
    assert gone.json()["message"] == "0 messages deleted successfully"
    assert (await c.post(f"/api/memory/messages/delete{q}", json={"messageIds": ["mf1"]})).status_code == 401
    assert (await c.get(f"/api/memory/threads/t-flows/messages{q}", headers=ALICE)).json()["total"] == 1
    assert (
        await c.patch(f"/api/memory/threads/t-flows{q}", json={"title": "mine"}, headers=ALICE)
    ).status_code == 200
    for path in ("/api/memory/status", "/api/memory/config"):
        assert (await c.get(path + q, headers=BOB)).status_code == 200
        assert (await c.get(path + q)).status_code == 401
        world.mark("GET", path)
    world.walked |= {
        ("POST", "/api/memory/threads"),
        ("POST", "/api/memory/save-messages"),
        ("POST", "/api/memory/messages/delete"),
    }
    world.walked |= {
        ("PATCH", THREAD),
        ("GET", f"{THREAD}/working-memory"),
        ("POST", f"{THREAD}/working-memory"),
    }


async def _observability(world: Any, c: httpx.AsyncClient, alice: str) -> None:
    now = datetime.now(UTC)
    root = SpanRecord(
        trace_id="f" * 32, span_id="a" * 16, name="agent run: 'teller'", span_type="agent_run",
        started_at=now, ended_at=now, resource_id=alice, data={"attributes": {}},
    )  # fmt: skip
    await world.mastra.storage.save_spans([root])
    for path in (TRACE, f"{TRACE}/light", f"{TRACE}/spans/{{span_id}}", f"{TRACE}/{{span_id}}/scores"):
        concrete = path.replace("{trace_id}", root.trace_id).replace("{span_id}", root.span_id)
        await _refused(c, "GET", concrete)
        assert (await c.get(concrete, headers=ALICE)).status_code == 200, path
        world.mark("GET", path)
    window = {"timeRange": {"from": "2000-01-01T00:00:00Z", "to": "2999-01-01T00:00:00Z"}}
    theirs = await c.post("/api/observability/traces/query", json=window, headers=BOB)
    assert theirs.status_code == 200 and theirs.json()["traces"] == []
    ours = await c.post("/api/observability/traces/query", json=window, headers=ALICE)
    assert [t["traceId"] for t in ours.json()["traces"]] == [root.trace_id]
    assert (await c.get("/api/observability/traces", headers=BOB)).json()["spans"] == []
    for path in (
        "/api/observability/traces/query",
        "/api/observability/traces/query/fields",
        "/api/observability/traces/query/values",
    ):
        assert (await c.post(path, json=window)).status_code == 401
        world.mark("POST", path)


async def walk_flows(world: Any, c: httpx.AsyncClient, hook: Callable[[Request], object]) -> None:
    """Every workflows, memory and observability route of the Mastra API, for one kind of principal."""
    world.owner_of = lambda user: _owner(hook, user)
    alice = _owner(hook, "alice")
    await _workflows(world, c)
    await _memory(world, c, alice)
    await _observability(world, c, alice)

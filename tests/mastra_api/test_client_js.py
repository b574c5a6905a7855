"""The real ``@mastra/client-js`` against the demo app's Mastra API on a real uvicorn port: every
agents and tools method it offers that we answer (``client-agents.mjs``), and the vendored
``check.mjs``'s agents and tools checks (1-5; 6 and 7 are the workflows and memory groups')."""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.mastra_api.conftest import HERE, ApiServer, check_results, run_node

AGENT_CHECKS = {
    "listAgents",
    "details",
    "stream",
    "generate",
    "generate with memory",
    "listTools + tool details + execute",
    "agent.getTool + agent.executeTool",
    "unknown agent is a 404",
}
APPROVAL_CHECKS = {
    "approveToolCall",
    "declineToolCall",
    "approveToolCallGenerate",
    "declineToolCallGenerate",
    "resumeStream",
    "approving another run is refused",
}


def _client_report(base_url: str, *args: str) -> dict[str, Any]:
    result = run_node(HERE / "client-agents.mjs", "--base-url", base_url, *args)
    assert result.stdout, result.stderr[-2000:]
    report: dict[str, Any] = json.loads(result.stdout)["checks"]
    return report


def test_client_js_drives_every_agents_and_tools_method(demo_api: ApiServer) -> None:
    checks = _client_report(demo_api.base_url, "--approval")
    assert set(checks) == AGENT_CHECKS | APPROVAL_CHECKS
    failed = {name: c["error"] for name, c in checks.items() if not c["ok"]}
    assert not failed, failed
    stream = checks["stream"]["detail"]
    assert stream["types"][0] == "start" and stream["types"][-1] == "finish"
    assert {"tool-call", "tool-result", "text-delta", "step-finish"} <= set(stream["types"])
    assert stream["text"].startswith("In Paris it is currently")
    assert checks["details"]["detail"]["weatherSchema"]["required"] == ["city"]
    # an approved call ran (its confirmation is in the answer); a declined one did not
    assert "is booked (confirmation" in checks["approveToolCall"]["detail"]["text"]
    assert "not approved" in checks["declineToolCall"]["detail"]["text"]
    assert checks["resumeStream"]["detail"]["text"].startswith("19:30 at Luigi's")
    assert checks["approving another run is refused"]["detail"] == {"status": 404}


def test_check_mjs_agents_and_tools_checks_pass(demo_api: ApiServer) -> None:
    result = run_node("check.mjs", "--base-url", demo_api.base_url)
    checks = check_results(result.stdout)
    for n in range(1, 6):
        assert n in checks, result.stdout + result.stderr[-1000:]
        assert checks[n][0], f"check {n}: {checks[n][1]}"


def _frames(response: httpx.Response, until: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for line in response.iter_lines():
        if line.startswith("data: ") and line != "data: [DONE]":
            out.append(json.loads(line.removeprefix("data: ")))
            if out[-1].get("type") == until:
                return out
    raise AssertionError(f"the subscription ended before a {until!r} chunk: {[f.get('type') for f in out]}")


def test_a_message_sent_to_a_thread_reaches_its_subscriber(demo_api: ApiServer) -> None:
    """Studio's chat: follow the thread, post the message, read the answer off the subscription."""
    base = f"{demo_api.base_url}/api/agents/demo-agent"
    thread = {"resourceId": "user-1", "threadId": "thread-subscribed"}
    message = {"message": {"contents": "What's the weather in Paris?", "metadata": {"clientMessageId": "m1"}}}
    with (
        httpx.Client(timeout=60) as client,
        client.stream("POST", f"{base}/threads/subscribe", json=thread) as subscription,
    ):
        assert subscription.status_code == 200
        assert subscription.headers["content-type"].startswith("text/event-stream")
        sent = client.post(f"{base}/send-message", json={**message, **thread})
        assert sent.status_code == 200, sent.text
        accepted = sent.json()
        assert (
            accepted["accepted"] is True and accepted["signal"]["contents"] == message["message"]["contents"]
        )
        frames = _frames(subscription, until="finish")
    assert [f["type"] for f in frames[:2]] == ["start", "data-user-message"]
    assert frames[1]["data"]["metadata"] == {"clientMessageId": "m1"}
    assert {f["runId"] for f in frames} == {accepted["runId"]}
    result = next(f for f in frames if f["type"] == "tool-result")
    assert result["payload"]["toolName"] == "weather" and result["payload"]["result"]["city"] == "Paris"
    # the turn is in the thread's memory, as a /stream run's would be
    stored = httpx.post(f"{base}/threads/abort", json=thread, timeout=10)
    assert stored.status_code == 200 and stored.json() == {"aborted": False}  # nothing running any more
    # ... stored under the signal's id: Studio's pending copy (renamed to that id by the
    # data-user-message chunk) and the thread's message are one message, not two
    listed = httpx.get(f"{demo_api.base_url}/api/memory/threads/thread-subscribed/messages", timeout=10)
    users = [m for m in listed.json()["messages"] if m["role"] == "user"]
    assert [m["id"] for m in users] == [accepted["signal"]["id"]] == [frames[1]["data"]["id"]]

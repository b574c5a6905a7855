"""Human in the loop with the real AI SDK clients (``approval-client.mjs``) against a live
``chat_route``: ai 7 and 6 approve / decline with ``addToolApprovalResponse`` and
``sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses``; ai 5 (and 7) answer
with Mastra's ``resumeData``. The continuation must land in the same assistant message."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.applications import Starlette

from agentstream._demo import demo_mastra
from agentstream.models._demo import DemoModel
from agentstream.server import chat_route
from tests.ai_sdk._support import require_clients

from .test_real_clients import _free_port

BOOK = "book a table at Luigi for 4"
PICK = "pick a time at Luigi"


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    import uvicorn

    mastra = demo_mastra(DemoModel(delay_ms=0))
    routes = [
        chat_route(mastra, f"/api/{v}", agent="demo", version=v, heartbeat_ms=0) for v in ("v5", "v6", "v7")
    ]
    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(Starlette(routes=routes), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.time() + 10
    while not server.started and time.time() < deadline:
        time.sleep(0.02)
    assert server.started, "uvicorn did not start"
    try:
        yield f"http://127.0.0.1:{port}/api"
    finally:
        server.should_exit = True
        thread.join(5)


def converse(url: str, client: str, prompt: str, *answer: str) -> dict[str, Any]:
    clients = require_clients()
    args = [
        "node",
        str(clients / "approval-client.mjs"),
        f"{url}/{client}",
        "--ai",
        client,
        "--prompt",
        prompt,
    ]
    result = subprocess.run([*args, *answer], capture_output=True, text=True, timeout=120, cwd=clients)
    assert result.returncode == 0, (
        f"exit {result.returncode}: {result.stderr[-2000:]} {result.stdout[-2000:]}"
    )
    report: dict[str, Any] = json.loads(result.stdout)
    assert report["status"] == "ready" and report["errors"] == []
    # One user message and one assistant message: the answer continued the message that asked.
    assert [m["role"] for m in report["messages"]] == ["user", "assistant"]
    assert report["assistantMessage"]["id"] == report["first"]["id"]
    assert report["finishes"] == [None, "stop"]  # the suspended leg has no finish
    return report


def _tool(report: dict[str, Any], name: str) -> dict[str, Any]:
    part: dict[str, Any] = next(p for p in report["assistantMessage"]["parts"] if p["type"] == f"tool-{name}")
    return part


def _text(report: dict[str, Any]) -> str:
    return "".join(p["text"] for p in report["assistantMessage"]["parts"] if p["type"] == "text")


@pytest.mark.parametrize("client", ["v7", "v6"])
def test_approve_with_add_tool_approval_response(base_url: str, client: str) -> None:
    report = converse(base_url, client, BOOK, "--approve")
    asked = _tool({"assistantMessage": report["first"]}, "book_table")
    assert asked["state"] == "approval-requested"
    follow_up = report["requests"][1]
    answered = next(p for p in follow_up["messages"][-1]["parts"] if p["type"] == "tool-book_table")
    assert answered["state"] == "approval-responded"
    assert answered["approval"] == {"id": asked["approval"]["id"], "approved": True}
    part = _tool(report, "book_table")
    assert part["state"] == "output-available"
    assert part["output"]["restaurant"] == "Luigi" and part["output"]["people"] == 4
    assert "Your table for 4 at Luigi is booked" in _text(report)


@pytest.mark.parametrize("client", ["v7", "v6"])
def test_decline_with_add_tool_approval_response(base_url: str, client: str) -> None:
    report = converse(base_url, client, BOOK, "--decline", "--reason", "too far")
    part = _tool(report, "book_table")
    assert part["state"] == "output-denied"
    assert part["approval"]["approved"] is False and part["approval"]["reason"] == "too far"
    assert "I have not made the booking (too far)" in _text(report)


def test_v5_approves_with_resume_data(base_url: str) -> None:
    report = converse(base_url, "v5", BOOK, "--approve")
    follow_up = report["requests"][1]
    assert follow_up["resumeData"] == {"approved": True}
    assert _tool(report, "book_table")["state"] == "output-available"
    assert "is booked" in _text(report)


@pytest.mark.parametrize("client", ["v5", "v7"])
def test_a_suspended_tool_resumes_with_resume_data(base_url: str, client: str) -> None:
    report = converse(base_url, client, PICK, "--resume", '{"time": "21:00"}')
    suspended = next(p for p in report["first"]["parts"] if p["type"] == "data-tool-call-suspended")
    assert suspended["data"]["suspendPayload"]["question"] == "Which time at Luigi?"
    part = _tool(report, "choose_time")
    assert part["state"] == "output-available" and part["output"]["time"] == "21:00"
    assert "21:00 at Luigi it is." in _text(report)


def test_v5_declines_with_resume_data(base_url: str) -> None:
    """ai@5 has no ``tool-output-denied`` chunk: the decline reaches it as an output error it accepts."""
    report = converse(base_url, "v5", BOOK, "--decline", "--reason", "too far")
    assert report["requests"][1]["resumeData"] == {"approved": False, "reason": "too far"}
    part = _tool(report, "book_table")
    assert part["state"] == "output-error"
    assert part["errorText"] == "Tool call was not approved by the user: too far"
    assert "I have not made the booking (too far)" in _text(report)

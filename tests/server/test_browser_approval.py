"""A real ``useChat`` page (tests/clients/web, ai 7) in headless Chromium approves and denies a tool
call against a live ``chat_route`` (``version="v7"``): the Approve / Deny buttons call
``addToolApprovalResponse``, ``sendAutomaticallyWhen`` sends the follow-up, and the answer
continues the same assistant message. Screenshot: ``.cache/e2e/usechat-approval.png``."""

from __future__ import annotations

import json
import socket
import subprocess
from pathlib import Path
from typing import Any

from starlette.applications import Starlette

from agentstream._demo import demo_mastra
from agentstream.models._demo import DemoModel
from agentstream.server import RequestGuard, chat_route
from tests import _services
from tests.test_chat_page import CHROMIUM, ROOT, serving

CLIENTS = ROOT / ".cache" / "clients"
SHOT = ROOT / ".cache" / "e2e" / "usechat.png"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _check(answer: str, prompt: str) -> dict[str, Any]:
    _services.require("usechat-page")
    page_port = _free_port()
    guard = RequestGuard(allowed_origins=[f"http://127.0.0.1:{page_port}"])
    route = chat_route(
        demo_mastra(DemoModel(delay_ms=0)), "/api/chat", agent="demo", version="v7", guard=guard
    )
    with serving(Starlette(routes=[route])) as url:
        args = ["node", str(CLIENTS / "browser-check.mjs"), "--backend", f"{url}api/chat", "--page-port"]
        args += [
            str(page_port),
            "--screenshot",
            str(SHOT),
            "--prompt",
            prompt,
            answer,
            "--chromium",
            str(CHROMIUM),
        ]
        result = subprocess.run(args, capture_output=True, text=True, timeout=180, cwd=CLIENTS)
    assert result.returncode == 0, f"{result.stderr[-2000:]}\n{result.stdout[-3000:]}"
    report: dict[str, Any] = json.loads(result.stdout)
    assert report["consoleErrors"] == [] and report["pageErrors"] == []
    assert report["requests"] == ["POST 200", "POST 200"]  # the question and the automatic follow-up
    assert [m["role"] for m in report["messages"]] == ["user", "assistant"]
    return report


def test_approve_on_a_use_chat_page() -> None:
    report = _check("--approve", "book a table at Luigi for 4")
    assert report["turns"][0]["answered"] == ["book_table"]
    tool = next(p for p in report["parts"] if p["type"] == "tool-book_table")
    assert tool["state"] == "output-available" and tool["approval"]["approved"] is True
    assert "Your table for 4 at Luigi is booked" in report["renderedAssistantText"]
    assert Path(str(SHOT).replace(".png", "-approval.png")).stat().st_size > 5_000


def test_deny_on_a_use_chat_page() -> None:
    report = _check("--decline", "book a table at Roma for 2")
    tool = next(p for p in report["parts"] if p["type"] == "tool-book_table")
    assert tool["state"] == "output-denied"
    assert tool["approval"] == {
        "id": tool["approval"]["id"],
        "approved": False,
        "reason": "denied on the page",
    }
    assert "I have not made the booking (denied on the page)" in report["renderedAssistantText"]

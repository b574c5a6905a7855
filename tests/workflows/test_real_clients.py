"""The real AI SDK clients (``ai`` 5, 6 and 7 in node, ``tests/ai_sdk/_support.replay``) read a workflow's UI
stream: the demo workflow's ``data-workflow`` parts and its agent step's text become one assistant message."""

from __future__ import annotations

from typing import Any

import pytest

from agentstream._demo_workflow import demo_workflow
from agentstream.ai_sdk import DONE_FRAME, encode_sse_frame, to_ai_sdk_stream
from tests.ai_sdk._support import replay


async def _sse_body() -> bytes:
    run = await demo_workflow().create_run("client-run")
    output = run.stream(input_data={"topic": "tides"})
    frames = [encode_sse_frame(part) async for part in to_ai_sdk_stream(output, from_="workflow")]
    return b"".join(frames) + DONE_FRAME


@pytest.mark.parametrize("client", ["v5", "v6", "v7"])
async def test_real_client_assembles_the_workflow_message(client: str) -> None:
    body = await _sse_body()
    code, report = replay(body, client, strict=True)
    assert code == 0, report["error"]
    parts: list[dict[str, Any]] = report["assistantMessage"]["parts"]
    workflow = [p for p in parts if p["type"] == "data-workflow"]
    # data parts with an id are updated in place: one part, holding the last snapshot
    assert len(workflow) == 1 and workflow[0]["id"] == "client-run"
    data = workflow[0]["data"]
    assert data["name"] == "publish-article" and data["status"] == "suspended"
    assert list(data["steps"]) == ["gather", "brief", "writer", "approve"]
    assert data["steps"]["approve"]["suspendPayload"]["question"] == "Publish this draft?"
    steps = {p["id"]: p["data"]["step"]["status"] for p in parts if p["type"] == "data-workflow-step"}
    assert steps == {
        "client-run:gather": "success",
        "client-run:brief": "success",
        "client-run:writer": "success",
        "client-run:approve": "suspended",
    }
    text = "".join(p["text"] for p in parts if p["type"] == "text")
    assert text.startswith("You asked: “Explain tides for a short article.")

"""Human in the loop across processes: a chat answer that waits for the user's approval on one
worker, behind one server, is approved through the other server and finished by the other worker.

The cluster runs the default app (``examples/durable_demo.py``: the demo agent, its run snapshots in
PostgreSQL). Which worker takes a turn is decided by stopping the other one (SIGSTOP: a stopped
process dequeues nothing), not by timing."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import httpx

from .conftest import Cluster, start_cluster

BOOK = "book a table at Luigi for 4"


def _chunks(reply: httpx.Response) -> list[dict[str, Any]]:
    assert reply.status_code == 200, reply.text
    return [json.loads(line[6:]) for line in reply.text.splitlines() if line.startswith("data: {")]


def _body(**extra: Any) -> dict[str, Any]:
    user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": BOOK}]}
    return {"id": "hitl-chat", "trigger": "submit-message", "messages": [user], **extra}


def _only(cluster: Cluster, running: str) -> None:
    """Let only worker ``running`` take turns."""
    for name, pid in cluster.workers.items():
        os.kill(pid, signal.SIGCONT if name == running else signal.SIGSTOP)


def test_an_approval_through_the_other_server_is_finished_by_the_other_worker(
    redis_url: str, durable_db: str, tmp_path: Path
) -> None:
    cluster = start_cluster(
        tmp_path,
        *("--servers", "2", "--workers", "2", "--database-url", durable_db, "--redis-url", redis_url),
    )
    try:
        (first, _), (second, _) = cluster.servers.values()
        _only(cluster, "worker 1")
        asked = _chunks(httpx.post(f"{first}/api/chat/demo", json=_body(), timeout=120))
        approvals = [c for c in asked if c["type"] == "data-tool-call-approval"]
        assert len(approvals) == 1, [c["type"] for c in asked]
        assert not any(c["type"] == "tool-output-available" for c in asked)  # nothing ran unapproved
        request = approvals[0]["data"]

        _only(cluster, "worker 2")
        answer = _body(
            runId=request["runId"], toolCallId=request["toolCallId"], resumeData={"approved": True}
        )
        done = _chunks(httpx.post(f"{second}/api/chat/demo", json=answer, timeout=120))
    finally:
        for pid in cluster.workers.values():
            os.kill(pid, signal.SIGCONT)  # a stopped child would not hear the cluster's SIGTERM
        code = cluster.stop(signal.SIGINT)
    outputs = [c["output"] for c in done if c["type"] == "tool-output-available"]
    assert outputs and outputs[0]["restaurant"] == "Luigi" and outputs[0]["people"] == 4
    text = "".join(c["delta"] for c in done if c["type"] == "text-delta")
    assert "Luigi" in text
    assert done[-1]["type"] == "finish"
    assert code == 0, cluster.said()

"""The real AI SDK client across two ``agentstream serve`` processes sharing Redis: the answer is
asked of server A, the connection drops mid-answer, and the same ``Chat``'s ``resumeStream()`` goes
to server B, which serves the rest of the answer A is still producing. The resumed message equals
an uninterrupted one (a second chat on A). The chat id has a ``/`` in it, which the client sends
escaped (``encodeURIComponent``) in the reconnect URL.

A stays up: its run is in process, so killing A would end the answer (a resume on B would replay
what A wrote, then wait until the stream's TTL). Runs that outlive their server are the workers'
(``DurableChat``), not this test's."""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from tests.ai_sdk._support import require_clients

from ._gated_app import FIRST, REST
from .test_cross_process import server


@pytest.fixture(scope="module")
def servers(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, Path]]:
    gate = tmp_path_factory.mktemp("gate") / "gate"
    with server(redis_url, gate) as a, server(redis_url, gate) as b:
        yield a, b, gate


def texts(message: dict[str, Any]) -> list[str]:
    return [part["text"] for part in message["parts"] if part["type"] == "text"]


CASES = [
    pytest.param("v7", "network", id="ai7-network-error"),
    pytest.param("v7", "terminated", id="ai7-socket-closed"),
    pytest.param("v6", "network", id="ai6-network-error"),
    pytest.param("v5", "terminated", id="ai5-socket-closed"),
    pytest.param(
        "v5",
        "network",
        id="ai5-network-error",
        marks=pytest.mark.xfail(
            strict=True,
            reason="ai 5 keeps its partial message after a network error and appends the replay to it "
            "(ai 6.0.2xx+ and 7 reset on the replay's start); see docs/decisions/serving.md",
        ),
    ),
]


@pytest.mark.parametrize(("client", "drop"), CASES)
def test_the_real_client_resumes_on_the_other_server(
    servers: tuple[str, str, Path], client: str, drop: str
) -> None:
    clients = require_clients()
    a, b, gate = servers
    gate.unlink(missing_ok=True)
    chat_id = f"team/{uuid.uuid4().hex}"
    command = ["node", str(clients / "resume-client.mjs"), f"{a}/api/chat", f"{b}/api/chat"]
    command += ["--chat", chat_id, "--ai", client, "--drop", drop, "--gate", str(gate)]
    command += ["--cut-at", "".join(FIRST)]  # FIRST's parts may arrive in separate reads
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=clients)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout)

    # A's answer was cut after its first words; the client saw the error a dropped connection gives.
    assert report["requests"][0] == {"method": "POST", "url": f"{a}/api/chat", "status": 200}
    assert texts(report["afterDrop"]["messages"][-1]) == ["".join(FIRST)]
    expected_error = "network error" if drop == "network" else "terminated"
    assert report["drop"]["errors"] == [{"name": "TypeError", "message": expected_error}]
    assert report["drop"]["finish"]["isDisconnect"] is (drop == "network")
    # The reconnect went to B, with the id escaped; B had the rest.
    reconnect = f"{b}/api/chat/{quote(chat_id, safe='')}/stream"
    assert report["requests"][1:] == [{"method": "GET", "url": reconnect, "status": 200}]
    assert report["status"] == "ready" and report["errors"] == []
    assert [m["role"] for m in report["messages"]] == ["user", "assistant"]
    assert texts(report["messages"][-1]) == ["".join(FIRST + REST)]
    assert report["reference"]["status"] == "ready" and report["reference"]["errors"] == []
    assert report["same"], (report["messages"], report["reference"]["messages"])

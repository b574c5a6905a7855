"""The approval protocol of ``docs/serving.md`` ("Approvals over plain HTTP"), run as written: the
documented app under the documented ``uvicorn`` command, each documented ``curl`` block in ``bash``
(with ``jq``), for v5, v6 and v7, approving and declining; and the refusals (finished, unknown and
another chat's run) as 4xx answers with a sentence."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "serving.md"
SECTION = "### Approvals over plain HTTP"


def _section() -> str:
    text = DOC.read_text(encoding="utf-8")
    start = text.index(SECTION)
    end = text.find("\n## ", start)
    return text[start : end if end != -1 else None]


def _blocks() -> list[tuple[str, str]]:
    """``(language, code)`` of each fenced block of the section, in order."""
    found = re.findall(r"```(\w+)[^\n]*\n(.*?)```", _section(), flags=re.S)
    return [(lang, code) for lang, code in found]


def _prose(pattern: str) -> str:
    """An inline-code value the prose gives (a line break inside it read as a space)."""
    flat = re.sub(r"\s+", " ", _section())
    match = re.search(pattern, flat)
    assert match, f"docs/serving.md no longer says {pattern!r}"
    return match.group(1)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Docs:
    """The section's blocks by role, and a shell that runs them against the live server."""

    def __init__(self, cwd: Path, port: int) -> None:
        blocks = _blocks()
        bash = [code for lang, code in blocks if lang == "bash"]
        assert [lang for lang, _ in blocks].count("python") == 1
        # uvicorn; v6/v7 first leg, answer; v5 first leg, answer; v5 answer again
        assert len(bash) == 6, f"expected 6 bash blocks, found {len(bash)}"
        self.app = next(code for lang, code in blocks if lang == "python")
        self.serve, self.first_v7, self.answer_v7, self.first_v5, self.answer_v5, self.again_v5 = bash
        self.cwd, self.port = cwd, port

    def sh(self, *blocks: str, replace: dict[str, str] | None = None) -> str:
        script = "set -euo pipefail\n" + "\n".join(blocks).replace("127.0.0.1:8000", f"127.0.0.1:{self.port}")
        for old, new in (replace or {}).items():
            assert old in script, f"{old!r} is not in the documented blocks"
            script = script.replace(old, new)
        done = subprocess.run(
            ["bash", "-c", script], cwd=self.cwd, capture_output=True, text=True, timeout=60, check=False
        )
        assert done.returncode == 0, done.stderr
        return done.stdout


def _events(sse: str) -> list[dict[str, Any]]:
    lines = [line[len("data: ") :] for line in sse.splitlines() if line.startswith("data: ")]
    assert lines and lines[-1] == "[DONE]", sse[-500:]
    return [json.loads(line) for line in lines[:-1]]


@pytest.fixture(scope="module")
def docs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Docs]:
    if shutil.which("jq") is None or shutil.which("curl") is None:
        if os.environ.get("CI"):
            pytest.fail("curl and jq are needed to run the documented approval protocol")
        pytest.skip("curl and jq are needed to run the documented approval protocol")
    cwd = tmp_path_factory.mktemp("approvals")
    port = _free_port()
    docs = Docs(cwd, port)
    (cwd / "approvals.py").write_text(docs.app, encoding="utf-8")
    command = shlex.split(docs.serve.strip())
    assert command[:2] == ["uvicorn", "approvals:app"], command
    command[command.index("--port") + 1] = str(port)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(cwd)])}
    server = subprocess.Popen(
        [sys.executable, "-m", *command], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    try:
        deadline = time.time() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert server.poll() is None, server.stdout.read().decode() if server.stdout else ""
                assert time.time() < deadline, "the documented uvicorn command did not start"
                time.sleep(0.1)
        yield docs
    finally:
        server.terminate()
        server.wait(10)


@pytest.mark.parametrize("version", ["v7", "v6"])
def test_v6_and_v7_first_leg_ends_with_done_and_no_finish(docs: Docs, version: str) -> None:
    path = {"v7": {}, "v6": {"/api/v7/": "/api/v6/"}}[version]
    docs.sh(docs.first_v7, replace=path)
    events = _events((docs.cwd / "first.sse").read_text(encoding="utf-8"))
    kinds = [e["type"] for e in events]
    assert kinds[-2:] == ["tool-approval-request", "data-tool-call-approval"]
    assert "finish" not in kinds and "finish-step" not in kinds


@pytest.mark.parametrize("version", ["v7", "v6"])
def test_v6_and_v7_approve_with_an_approval_responded_part(docs: Docs, version: str) -> None:
    path = {"v7": {}, "v6": {"/api/v7/": "/api/v6/"}}[version]
    events = _events(docs.sh(docs.first_v7, docs.answer_v7, replace=path))
    first = _events((docs.cwd / "first.sse").read_text(encoding="utf-8"))
    assert events[0] == {"type": "start", "messageId": first[0]["messageId"]}
    output = next(e for e in events if e["type"] == "tool-output-available")
    assert output["output"] == {"restaurant": "Luigi", "people": 4, "confirmation": "LU-4"}
    assert events[-1] == {"type": "finish", "finishReason": "stop"}


@pytest.mark.parametrize("version", ["v7", "v6"])
def test_v6_and_v7_decline_as_the_prose_says(docs: Docs, version: str) -> None:
    decline = _prose(r"To decline instead, send `(\"approval\": [^`]+)`")
    replace = {'"approval": {"id": "$APPROVAL_ID", "approved": true}': decline}
    if version == "v6":
        replace["/api/v7/"] = "/api/v6/"
    events = _events(docs.sh(docs.first_v7, docs.answer_v7, replace=replace))
    kinds = [e["type"] for e in events]
    assert "tool-output-denied" in kinds and "tool-output-available" not in kinds
    text = "".join(e["delta"] for e in events if e["type"] == "text-delta")
    assert "too far" in text
    assert events[-1]["type"] == "finish"


def test_v5_declines_with_resume_data_and_the_second_answer_is_a_409(docs: Docs) -> None:
    events = _events(docs.sh(docs.first_v5, docs.answer_v5))
    first = _events((docs.cwd / "first.sse").read_text(encoding="utf-8"))
    assert first[-1]["type"] == "data-tool-call-approval"
    assert "finish" not in [e["type"] for e in first]
    error = next(e for e in events if e["type"] == "tool-output-error")
    assert error["errorText"] == "Tool call was not approved by the user: too far"
    assert "tool-output-denied" not in [e["type"] for e in events]  # ai@5 would reject it
    assert events[-1]["type"] == "finish"
    again = docs.sh(docs.first_v5, docs.answer_v5, docs.again_v5).splitlines()[-1]
    body, status = again.rsplit(" ", 1)
    assert status == "409"
    run_id = _events((docs.cwd / "first.sse").read_text(encoding="utf-8"))[-1]["data"]["runId"]
    assert json.loads(body) == {
        "error": {
            "name": "ChatRequestError",
            "message": f"run {run_id!r} is not waiting for an answer any more: it has finished or is "
            "being resumed (each suspension is answered once; send a new message to go on)",
            "path": "runId",
        }
    }
    # The answer the docs show (wrapped over comment lines, the run id elided) is the real one.
    comments = [line.lstrip("# ") for line in docs.again_v5.splitlines() if line.startswith("#")]
    assert " ".join(comments) == again.replace(run_id, "…")


def test_v5_approves_without_a_tool_call_id(docs: Docs) -> None:
    approve = _prose(r"`resumeData` is `(\{\"approved\": true\})` to approve")
    events = _events(
        docs.sh(
            docs.first_v5,
            docs.answer_v5,
            replace={
                '"resumeData": {"approved": false, "reason": "too far"}': f'"resumeData": {approve}',
                ', "toolCallId": "$TOOL_CALL_ID"': "",
            },
        )
    )
    assert any(e["type"] == "tool-output-available" for e in events)


def test_unknown_and_another_chats_runs_are_a_403_with_a_sentence(docs: Docs) -> None:
    docs.sh(docs.first_v5)
    first = _events((docs.cwd / "first.sse").read_text(encoding="utf-8"))
    run_id = first[-1]["data"]["runId"]
    url = f"http://127.0.0.1:{docs.port}/api/chat/assistant"
    for chat_id, asked in (("chat-2", "no-such-run"), ("another-chat", run_id)):
        body = {"id": chat_id, "messages": [], "resumeData": {"approved": True}, "runId": asked}
        answer = httpx.post(url, json=body, timeout=10)
        assert answer.status_code == 403
        assert (
            answer.json()["error"]["message"] == f"run {asked!r} is not waiting for an answer from this chat"
        )
    # The refusals left the run waiting for its own chat.
    approved = httpx.post(
        url,
        json={"id": "chat-2", "messages": [], "resumeData": {"approved": True}, "runId": run_id},
        timeout=10,
    )
    assert approved.status_code == 200 and '"tool-output-available"' in approved.text


@pytest.mark.parametrize("version", ["v7", "v6"])
def test_v6_and_v7_answering_twice_is_a_409_with_a_sentence(docs: Docs, version: str) -> None:
    path = {"v7": {}, "v6": {"/api/v7/": "/api/v6/"}}[version]
    out = docs.sh(docs.first_v7, docs.answer_v7, docs.answer_v7, replace=path)
    answered, again = out.rsplit("data: [DONE]", 1)
    assert '"type":"tool-output-available"' in answered
    error = json.loads(again)["error"]
    assert error["path"] == "approvals[0]" and error["name"] == "ChatRequestError"
    assert "is not waiting for an answer any more: it has finished or is being resumed" in error["message"]

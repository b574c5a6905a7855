"""``agentstream to-ui`` run as a real subprocess."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conformance import load, to_wire, vector_files

TEXT = next(p for p in vector_files("aisdk") if p.stem == "text-basic")


def _run(stdin: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentstream", "to-ui", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _input(vector: dict[str, object]) -> str:
    return "".join(json.dumps(c) + "\n" for c in to_wire(vector["input"]))


def test_json_lines() -> None:
    vector = load(TEXT)
    result = _run(_input(vector))
    assert result.returncode == 0, result.stderr
    assert [json.loads(line) for line in result.stdout.splitlines()] == vector["expected"]


def test_sse_body_is_byte_exact() -> None:
    vector = load(TEXT)
    result = _run(_input(vector), "--sse")
    assert result.returncode == 0, result.stderr
    assert result.stdout == vector["expectedSse"]["body"]


def test_options() -> None:
    vector = load(TEXT)
    result = _run(_input(vector), "--no-start", "--no-finish", "--version", "v7")
    types = [json.loads(line)["type"] for line in result.stdout.splitlines()]
    assert "start" not in types and "finish" not in types
    result = _run(_input(vector), "--last-message-id", "m-9")
    assert json.loads(result.stdout.splitlines()[0]) == {"type": "start", "messageId": "m-9"}


def test_bad_line_reports_line_number_after_output() -> None:
    vector = load(TEXT)
    lines = _input(vector).splitlines()
    lines.insert(
        3, '{"type": "text-delta", "runId": "r", "from": "AGENT", "payload": {"id": "t", "text": 5}}'
    )
    result = _run("\n".join(lines) + "\n")
    assert result.returncode == 1
    assert "line 4" in result.stderr and "payload.text" in result.stderr
    produced = [json.loads(line)["type"] for line in result.stdout.splitlines()]
    assert produced == ["start", "start-step", "text-start"]


def test_not_json() -> None:
    result = _run("not json\n")
    assert result.returncode == 1
    assert "line 1" in result.stderr


def test_send_goals() -> None:
    vector = load(next(p for p in vector_files("aisdk") if p.stem == "goal-and-is-task-complete-dropped"))
    dropped = _run(_input(vector))
    assert dropped.returncode == 0, dropped.stderr
    assert "data-goal" not in dropped.stdout
    sent = _run(_input(vector), "--send-goals")
    goals = [json.loads(line) for line in sent.stdout.splitlines() if '"data-goal"' in line]
    assert goals and all(g["id"].startswith("goal-") and "iteration" in g["data"] for g in goals)

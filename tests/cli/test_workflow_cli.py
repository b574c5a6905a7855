"""``agentstream workflow run|resume`` as a user runs them: the demo workflow suspends in one process and is
resumed in another (SQLite file); mistakes are one line with exit 2 (usage) or 1."""

from __future__ import annotations

import json
from pathlib import Path

from agentstream.chunks import decode_chunk

from ._support import agentstream, assert_one_line


def test_demo_workflow_suspends_then_resumes_from_another_process(tmp_path: Path) -> None:
    db = str(tmp_path / "runs.db")
    first = agentstream(
        "workflow", "run", "demo", "--input", '{"topic": "tides"}', "--db", db, "--run-id", "r1"
    )
    assert first.returncode == 0, first.stderr
    assert "▶ gather" in first.stdout and "▶ writer" in first.stdout
    assert "⏸ approve suspended: " in first.stdout
    assert "workflow publish-article run r1: suspended at approve" in first.stderr
    command = next(line for line in first.stderr.splitlines() if line.startswith("resume: "))
    assert f"--db {db}" in command and "--resume-data '{\"approved\": true}'" in command

    second = agentstream(
        "workflow", "resume", "demo", "--db", db, "--run-id", "r1", "--resume-data", '{"approved": true}'
    )
    assert second.returncode == 0, second.stderr
    assert '✓ publish → {"published": true, "topic": "tides"' in second.stdout
    assert "run r1: success" in second.stderr

    third = agentstream(
        "workflow", "resume", "demo", "--db", db, "--run-id", "r1", "--resume-data", '{"approved": true}'
    )
    assert_one_line(third, "workflow", 1, "is success, not suspended")


def test_jsonl_writes_every_chunk(tmp_path: Path) -> None:
    proc = agentstream("workflow", "run", "demo", "--input", '{"topic": "x"}', "--jsonl")
    assert proc.returncode == 0, proc.stderr
    chunks = [decode_chunk(line) for line in proc.stdout.splitlines()]
    assert chunks[0].type == "workflow-start" and chunks[-1].type == "workflow-finish"
    assert json.loads(proc.stdout.splitlines()[-1])["payload"]["workflowStatus"] == "suspended"


def test_a_module_workflow_and_its_failures(tmp_path: Path) -> None:
    (tmp_path / "flows.py").write_text(
        "from agentstream.workflows import create_step, create_workflow\n"
        "def boom(c):\n    raise RuntimeError('out of paper')\n"
        "ok = create_workflow(id='ok').then(create_step(id='double', execute=lambda c: {'v': c.input_data['v'] * 2})).commit()\n"
        "bad = create_workflow(id='bad').then(create_step(id='boom', execute=boom)).commit()\n"
        "not_a_workflow = 3\n"
    )
    ok = agentstream("workflow", "run", "flows:ok", "--input", '{"v": 2}', cwd=tmp_path)
    assert ok.returncode == 0 and '✓ double → {"v": 4}' in ok.stdout
    bad = agentstream("workflow", "run", "flows:bad", "--input", "{}", cwd=tmp_path)
    assert bad.returncode == 1 and "✗ boom: RuntimeError: out of paper" in bad.stdout
    assert bad.stderr.strip().endswith("failed: out of paper") and "Traceback" not in bad.stderr
    assert_one_line(
        agentstream("workflow", "run", "flows:not_a_workflow", "--input", "{}", cwd=tmp_path),
        "workflow",
        2,
        "flows:not_a_workflow is a int; expected a Workflow, a Mastra",
    )


def test_mistakes_are_one_line() -> None:
    assert_one_line(
        agentstream("workflow", "run", "demo", "--input", "{bad"), "workflow", 2, "--input is not valid JSON"
    )
    assert_one_line(
        agentstream("workflow", "run", "demo", "--input", '{"topic": 3}'),
        "workflow",
        2,
        "- topic: Invalid input: expected string, received number",
    )
    assert_one_line(
        agentstream("workflow", "run", "nomodule:x", "--input", "{}"),
        "workflow",
        2,
        "no module named 'nomodule'",
    )
    assert_one_line(
        agentstream("workflow", "resume", "demo", "--run-id", "nope", "--resume-data", "{}"),
        "workflow",
        1,
        "no run nope of workflow 'publish-article'",
    )
    usage = agentstream("workflow", "run", "demo")
    assert usage.returncode == 2 and "--input" in usage.stderr and len(usage.stderr.splitlines()) == 1

"""``agentstream workflow run|resume`` as a user runs them: the demo workflow suspends in one process and is
resumed in another (SQLite file); mistakes are one line with exit 2 (usage) or 1."""

from __future__ import annotations

import json
import shlex
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
    assert f"--db {db}" in command
    assert command.endswith("""--resume-data '{"approved": true, "note": "<note>"}'""")
    assert "resume data: approved: boolean (required), note: string (optional)" in first.stderr

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
    assert bad.stderr.strip().endswith("failed: RuntimeError: out of paper") and "Traceback" not in bad.stderr
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


SHIP = """
from agentstream import create_step, create_workflow

async def approve(context):
    if context.resume_data is None:
        return await context.suspend({"question": f"Ship {context.input_data['item']}?"})
    return {"item": context.input_data["item"], "approved": context.resume_data["approved"]}

workflow = (
    create_workflow(id="ship", input_schema={"type": "object", "properties": {"item": {"type": "string"}},
                                             "required": ["item"]})
    .then(create_step(id="approve", execute=approve,
                      resume_schema={"type": "object", "properties": {"approved": {"type": "boolean"}}}))
    .commit()
)
"""


def test_the_resume_hint_is_built_from_a_schema_without_required(tmp_path: Path) -> None:
    """The README's workflow: the hint names every field, and a step that fails on its resume data
    says which key it missed and that the run cannot be resumed again."""
    (tmp_path / "ship.py").write_text(SHIP, encoding="utf-8")
    base = ("ship:workflow", "--db", str(tmp_path / "runs.db"), "--run-id", "r1")
    first = agentstream("workflow", "run", *base, "--input", '{"item": "p7"}', cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    hint = next(line for line in first.stderr.splitlines() if line.startswith("resume: "))
    assert hint.endswith("""--resume-data '{"approved": true}'""")
    assert "resume data: approved: boolean (optional)" in first.stderr
    assert "fails the run for good" in first.stderr
    empty = agentstream("workflow", "resume", *base, "--step", "approve", "--resume-data", "{}", cwd=tmp_path)
    line = assert_one_line(empty, "workflow", 1)
    assert "KeyError: the step read the key 'approved', which its data does not have" in line
    assert "the run is failed for good" in line and "`agentstream workflow run`" in line
    again = agentstream(
        "workflow", "resume", *base, "--step", "approve", "--resume-data", '{"approved": true}', cwd=tmp_path
    )
    assert_one_line(again, "workflow", 1, "is failed, not suspended")
    hinted = agentstream(
        "workflow", "run", *base[:3], "--run-id", "r2", "--input", '{"item": "p8"}', cwd=tmp_path
    )
    command = next(line for line in hinted.stderr.splitlines() if line.startswith("resume: "))
    resumed = agentstream(*shlex.split(command.removeprefix("resume: "))[1:], cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert '"approved": true' in resumed.stdout

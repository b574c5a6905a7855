"""``agentstream run`` in a real subprocess: demo answer, JSON lines, Ctrl-C → abort chunk + exit 130."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

BG_MARKS = ("[bg ", "⧗ [bg ", "✓ [bg ", "✗ [bg ")
ENV = {k: v for k, v in os.environ.items() if k != "AGENTSTREAM_MODEL"}


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentstream", "run", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=ENV,
    )


def test_demo_answer_streams_text_and_usage() -> None:
    proc = _run("Explain how rainbows form", "--smooth", "none")
    assert proc.returncode == 0, proc.stderr
    assert "offline demo model" in proc.stderr
    assert "refracts" in proc.stdout
    assert "[usage]" in proc.stderr


def test_jsonl_with_tool_call() -> None:
    proc = _run("What is the weather in Oslo?", "--jsonl", "--smooth", "none")
    assert proc.returncode == 0, proc.stderr
    chunks = [json.loads(line) for line in proc.stdout.splitlines()]
    types = [c["type"] for c in chunks]
    assert types[0] == "start" and types[-1] == "finish"
    assert "tool-call" in types and "tool-result" in types
    result = next(c for c in chunks if c["type"] == "tool-result")
    assert result["payload"]["result"]["city"] == "Oslo"
    assert types.count("step-finish") == 2


def test_ctrl_c_aborts_with_130() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentstream", "run", "Please research quantum dots", "--jsonl"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    assert proc.stdout is not None
    seen = []
    deadline = time.monotonic() + 30
    for line in proc.stdout:
        seen.append(json.loads(line)["type"])
        if seen[-1] == "tool-output" or time.monotonic() > deadline:
            break
    proc.send_signal(signal.SIGINT)
    rest, _ = proc.communicate(timeout=30)
    seen += [json.loads(line)["type"] for line in rest.splitlines()]
    assert proc.returncode == 130
    assert "abort" in seen


def test_until_idle_shows_the_background_cycle_and_the_continuation() -> None:
    proc = _run("research tides", "--until-idle", "--smooth", "none")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    lines = out.splitlines()
    started = next(i for i, line in enumerate(lines) if "started in the background" in line)
    running = next(
        i for i, line in enumerate(lines) if line.startswith("⧗ [bg research") and "running" in line
    )
    outputs = [i for i, line in enumerate(lines) if "[bg research" in line and '"status": ' in line]
    completed = next(
        i for i, line in enumerate(lines) if line.startswith("✓ [bg research") and "completed" in line
    )
    continuation = lines.index("── continuation ──")
    assert started < running < outputs[0] < completed < continuation
    assert len(outputs) == 3  # searching, reading, summarising
    placeholder = [i for i, line in enumerate(lines) if "Background task started. Task ID:" in line]
    assert [lines[i].startswith("← research:") for i in placeholder] == [True]  # the tool result only
    # the first turn's answer (background progress lines may cut into its deltas)
    answer = "".join(
        line for line in lines[placeholder[0] + 1 : continuation] if not line.lstrip().startswith(BG_MARKS)
    )
    assert "I've started researching tides; it is running in the background." in answer
    assert "I'll follow up with what I find as soon as it's done." in answer
    rest = "\n".join(lines[continuation:])
    assert "Here is what I found about tides: Three sources agree" in rest
    assert "running in the background" not in rest
    assert "[usage]" in proc.stderr


def test_until_idle_jsonl_has_two_turns() -> None:
    proc = _run("research tides", "--until-idle", "--jsonl")
    assert proc.returncode == 0, proc.stderr
    types = [json.loads(line)["type"] for line in proc.stdout.splitlines()]
    assert types.count("start") == 2 and types[-1] == "finish"
    assert types.index("background-task-started") < types.index("background-task-completed")
    assert types.index("background-task-completed") < len(types) - 1 - types[::-1].index("start")

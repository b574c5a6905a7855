"""``agentstream run`` on a run that stops for the user: asks on a terminal, else --approve /
--decline / --resume answer, and no answer is a one-line error."""

from __future__ import annotations

import json
import os
import subprocess
import sys

ENV = {k: v for k, v in os.environ.items() if k != "AGENTSTREAM_MODEL"}
BOOK = "book a table at Luigi for 4"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentstream", "run", *args, "--delay-ms", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        env=ENV,
        stdin=subprocess.DEVNULL,
    )


def test_approve_runs_the_tool_and_answers() -> None:
    proc = _run(BOOK, "--approve")
    assert proc.returncode == 0, proc.stderr
    assert "? book_table needs approval" in proc.stdout
    assert '← book_table: {"restaurant": "Luigi", "people": 4, "confirmation": ' in proc.stdout
    assert "Your table for 4 at Luigi is booked" in proc.stdout
    assert "[usage]" in proc.stderr


def test_decline_tells_the_model_the_reason() -> None:
    proc = _run(BOOK, "--decline", "too far away")
    assert proc.returncode == 0, proc.stderr
    assert "← book_table: declined" in proc.stdout
    assert "I have not made the booking (too far away)" in proc.stdout
    assert "is booked" not in proc.stdout


def test_no_answer_without_a_terminal_is_one_line() -> None:
    proc = _run(BOOK)
    assert proc.returncode == 2
    assert proc.stderr.splitlines()[-1] == (
        'agentstream run: book_table {"restaurant": "Luigi", "people": 4} needs approval: '
        "run on a terminal, or pass --approve or --decline"
    )
    assert "Traceback" not in proc.stderr


def test_a_suspended_tool_takes_resume_json() -> None:
    proc = _run("pick a time at Luigi", "--resume", '{"time": "19:30"}')
    assert proc.returncode == 0, proc.stderr
    assert '⏸ choose_time is waiting: {"question": "Which time at Luigi?"' in proc.stdout
    assert "19:30 at Luigi it is." in proc.stdout
    missing = _run("pick a time at Luigi")
    assert missing.returncode == 2 and "pass --resume JSON" in missing.stderr.splitlines()[-1]
    wrong = _run("pick a time at Luigi", "--resume", '{"time": "03:00"}')
    assert wrong.returncode == 1 and "time" in wrong.stderr.splitlines()[-1], wrong.stderr
    assert "Traceback" not in wrong.stderr


def test_jsonl_holds_both_legs_of_the_run() -> None:
    proc = _run(BOOK, "--approve", "--jsonl")
    assert proc.returncode == 0, proc.stderr
    chunks = [json.loads(line) for line in proc.stdout.splitlines()]
    types = [c["type"] for c in chunks]
    cut = types.index("tool-call-approval") + 1
    assert types[0] == "start" and "start" not in types[cut:]
    assert types[cut] == "tool-result" and types[-1] == "finish"
    assert {c["runId"] for c in chunks} == {chunks[0]["runId"]}


def test_asks_on_a_terminal() -> None:
    import pty

    main, secondary = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentstream", "run", BOOK, "--delay-ms", "0"],
        stdin=secondary,
        stdout=subprocess.PIPE,
        stderr=secondary,
        env={**ENV, "NO_COLOR": "1"},
    )
    os.close(secondary)
    seen = b""
    while b"[y/N] " not in seen:
        data = os.read(main, 4096)
        assert data, seen
        seen += data
    assert b'Approve book_table {"restaurant": "Luigi", "people": 4}? [y/N] ' in seen
    os.write(main, b"y\n")
    out, _ = proc.communicate(timeout=60)
    os.close(main)
    assert proc.returncode == 0
    assert b"Your table for 4 at Luigi is booked" in out

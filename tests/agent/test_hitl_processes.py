"""A suspended run resumed from other processes sharing the storage (SQLite file, PostgreSQL).

Three processes, one run: the first suspends on an approval, the second approves (the tool runs,
then another tool suspends itself), the third resumes it and the run finishes. Each leg is a fresh
process with a fresh agent object, so everything it needs comes from the storage.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.background.conftest import _drop_schema

ROOT = Path(__file__).parents[2]


@pytest.fixture(params=["sqlite", "postgres"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield str(tmp_path / "runs.db")
        return
    dsn = request.getfixturevalue("pg_dsn")
    schema = f"hitl_{uuid.uuid4().hex[:12]}"
    yield f"{dsn}#{schema}"
    asyncio.run(_drop_schema(dsn, schema))


def leg(target: str, name: str, tmp_path: Path) -> dict[str, Any]:
    out = tmp_path / f"{name}.json"
    proc = subprocess.run(
        [sys.executable, "-m", "tests.agent._hitl_process", target, name, str(out)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": os.pathsep.join((str(ROOT / "src"), str(ROOT)))},
        capture_output=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    result: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return result


def types(result: dict[str, Any]) -> list[str]:
    return [c["type"] for c in result["chunks"]]


def test_a_run_is_resumed_by_other_processes(target: str, tmp_path: Path) -> None:
    first = leg(target, "start", tmp_path)
    assert first["status"] == "suspended"
    assert types(first)[0] == "start" and types(first)[-1] == "tool-call-approval"
    assert first["executions"] == []

    second = leg(target, "approve", tmp_path)
    assert second["status"] == "suspended"
    assert types(second) == ["tool-result", "step-finish", "step-start", "tool-call", "tool-call-suspended"]
    assert second["chunks"][-1]["payload"]["suspendPayload"] == {"question": "Book LH1?"}
    assert second["executions"] == [["transfer", {"amount": 50}], ["book", None]]
    # the model call of this process saw the whole conversation, system message included
    (prompt,) = second["prompts"]
    assert [m["role"] for m in prompt] == ["system", "user", "assistant", "tool"]
    assert prompt[-1]["content"][0]["output"] == {"type": "json", "value": {"sent": 50}}
    assert second["steps"] == 1 and second["usage"]["inputTokens"] == 10

    third = leg(target, "resume", tmp_path)
    assert third["status"] == "success"
    assert "start" not in types(third)
    assert types(third)[:2] == ["tool-result", "step-finish"] and types(third)[-1] == "finish"
    assert third["executions"] == [["book", {"confirmed": True}]]
    assert third["text"] == "Sent and booked."
    assert third["steps"] == 3  # the steps of the whole run, across the three processes
    assert third["usage"]["inputTokens"] == 30
    finish = third["chunks"][-1]["payload"]["output"]["usage"]
    assert finish["inputTokens"] == 30

    # the run is over: a fourth process cannot resume it again
    again = leg(target, "resume", tmp_path)
    assert again["status"] == "failed" and types(again) == ["error"]
    assert "already finished" in again["chunks"][0]["payload"]["error"]["message"]

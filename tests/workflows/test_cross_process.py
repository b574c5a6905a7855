"""A run suspended in one process resumes in another, over a shared SQLite file and a PostgreSQL schema."""

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

ROOT = Path(__file__).parents[2]


@pytest.fixture(params=["sqlite", "postgres"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield str(tmp_path / "runs.db")
        return
    dsn = request.getfixturevalue("pg_dsn")
    schema = f"wfx_{uuid.uuid4().hex[:12]}"
    yield f"{dsn}#{schema}"
    from tests.background.conftest import _drop_schema

    asyncio.run(_drop_schema(dsn, schema))


def _process(target: str, phase: str, run_id: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "tests.workflows._resume_script", target, phase, run_id],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    result: dict[str, Any] = json.loads(done.stdout.decode().strip().splitlines()[-1])
    return result


def test_suspended_in_one_process_resumed_in_another(target: str) -> None:
    first = _process(target, "start", "run-42")
    assert first["chunks"] == [
        "workflow-start",
        "workflow-step-start",
        "workflow-step-output",
        "workflow-step-suspended",
        "workflow-finish",
    ]
    assert first["result"]["status"] == "suspended"
    assert first["result"]["suspendPayload"] == {"approve": {"question": "publish tides?"}}

    second = _process(target, "resume", "run-42")
    assert second["chunks"] == [
        "workflow-start",
        "workflow-step-start",
        "workflow-step-result",
        "workflow-step-start",
        "workflow-step-result",
        "workflow-finish",
    ]
    assert second["result"]["status"] == "success"
    assert second["result"]["result"] == {"published": True, "title": "tides"}
    assert second["result"]["input"] == {"title": "tides"}

    third = subprocess.run(
        [sys.executable, "-m", "tests.workflows._resume_script", target, "resume", "run-42"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert third.returncode != 0 and b"is success, not suspended" in third.stderr

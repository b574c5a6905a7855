"""`agentstream.durable._jobs`: the one DBOS workflow body of chat turns and workflow legs, bound to
the worker that launched, and nothing registered or installed when the package is imported."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentstream.durable._jobs import KINDS, WorkerJobs, bound_jobs
from agentstream.resumable import MemoryStreamStore

SRC = str(Path(__file__).resolve().parents[2] / "src")


def test_importing_the_package_registers_no_workflow_and_installs_no_seam() -> None:
    # In a fresh interpreter: this one has launched workers in other tests.
    code = (
        "import agentstream.durable\n"
        "from agentstream.agent._checkpoints import _seams\n"
        "from dbos._dbos import _get_or_create_dbos_registry\n"
        "names = [n for n in _get_or_create_dbos_registry().workflow_info_map if 'agentstream' in n]\n"
        "assert names == [], names\n"
        "assert _seams == [], _seams\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, "PYTHONPATH": SRC}
    )
    assert done.returncode == 0, done.stderr


def test_the_workflows_run_with_the_jobs_of_the_worker_installed_last() -> None:
    first = WorkerJobs(None, None, tools={"a": object()})
    second = WorkerJobs(None, None, tools={"b": object()})
    first.install()
    second.install()
    try:
        assert bound_jobs() is second  # DBOS runs one launched instance per process: the last one
        first.uninstall()  # a worker that is no longer bound releases nothing
        assert bound_jobs() is second
    finally:
        second.uninstall()
    with pytest.raises(RuntimeError, match=r"no agentstream worker is launched in this process"):
        bound_jobs()


async def test_a_job_on_a_worker_without_a_mastra_fails_naming_what_is_missing() -> None:
    jobs = WorkerJobs(None, MemoryStreamStore())
    for kind in KINDS:
        with pytest.raises(RuntimeError, match=rf"without a Mastra and stream store for {kind} jobs"):
            await jobs.run(kind, {"stream_id": "s1"})


def test_chat_options_and_the_mastra_are_checked_when_the_worker_is_built() -> None:
    with pytest.raises(ValueError, match=r"chat_options: unknown key\(s\) sendStart"):
        WorkerJobs(None, None, {"sendStart": True})
    with pytest.raises(TypeError, match=r"expected a Mastra \(with get_agent\), got dict"):
        WorkerJobs({}, MemoryStreamStore())

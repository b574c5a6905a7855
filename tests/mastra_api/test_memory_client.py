"""The memory routes driven by the real ``@mastra/client-js`` (``flows-memory.mjs``) on an app as
``agentstream serve`` builds it, with an agent whose memory has working memory, with and without
an auth hook; and check.mjs's memory check (7: a chat on a thread, then its thread and messages)
on the demo app."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentstream._app import create_app
from agentstream._mastra import Mastra
from agentstream.agent import Agent
from agentstream.memory import Memory
from agentstream.server import RequestGuard
from agentstream.storage import SQLiteStore
from tests.mastra_api._flows_server import auth
from tests.mastra_api.conftest import (
    check_results,
    demo_app,
    free_port,
    install_mastra_clients,
    run_node,
    serving,
)

SCRIPT = Path(__file__).resolve().parents[1] / "clients" / "mastra-server" / "flows-memory.mjs"


def _app(tmp_path: Path, **options: Any) -> Any:
    memory = Memory(working_memory={"enabled": True})
    agent = Agent(id="helper", name="Helper", instructions="Help.", model="demo", memory=memory)
    mastra = Mastra(agents={"helper": agent}, storage=SQLiteStore(tmp_path / "app.db"))
    return create_app(mastra, delay_in_ms=None, **options)


def _all_passed(stdout: str, stderr: str, numbers: list[int]) -> None:
    checks = check_results(stdout)
    assert sorted(checks) == numbers, stdout + stderr
    failed = {n: text for n, (ok, text) in checks.items() if not ok}
    assert not failed, failed


def test_client_js_memory_without_auth(tmp_path: Path) -> None:
    install_mastra_clients()
    with serving(_app(tmp_path)) as base:
        result = run_node(SCRIPT, "--base-url", base)
    _all_passed(result.stdout, result.stderr, [1, 2, 3, 4, 6])


def test_client_js_memory_with_two_users(tmp_path: Path) -> None:
    install_mastra_clients()
    with serving(_app(tmp_path, guard=RequestGuard(auth=auth))) as base:
        result = run_node(
            SCRIPT,
            "--base-url",
            base,
            "--token",
            "alice-token",
            "--other-token",
            "bob-token",
            "--resource",
            "alice",
        )
    _all_passed(result.stdout, result.stderr, [1, 2, 3, 4, 5, 6])


def test_check_mjs_memory_check_on_the_demo_app() -> None:
    install_mastra_clients()
    with serving(demo_app(free_port())) as base:
        result = run_node("check.mjs", "--base-url", base, "--studio-missing", "not run here")
    seven = check_results(result.stdout)[7]
    assert seven[0], seven[1]

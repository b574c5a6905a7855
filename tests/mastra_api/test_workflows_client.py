"""The workflows routes driven by the real ``@mastra/client-js`` (``flows-workflows.mjs``), on the
demo app as ``agentstream serve`` builds it (its ``publish-article`` workflow), with and without
an auth hook; and check.mjs's workflow check (6)."""

from __future__ import annotations

from pathlib import Path

from agentstream.server import RequestGuard
from tests.mastra_api._flows_server import auth
from tests.mastra_api.conftest import (
    check_results,
    demo_app,
    free_port,
    install_mastra_clients,
    run_node,
    serving,
)

SCRIPT = Path(__file__).resolve().parents[1] / "clients" / "mastra-server" / "flows-workflows.mjs"


def _passed(stdout: str, stderr: str, count: int) -> None:
    checks = check_results(stdout)
    assert sorted(checks) == list(range(1, count + 1)), stdout + stderr
    failed = {n: text for n, (ok, text) in checks.items() if not ok}
    assert not failed, failed


def test_client_js_drives_the_demo_workflow() -> None:
    install_mastra_clients()
    with serving(demo_app(free_port())) as base:
        result = run_node(SCRIPT, "--base-url", base)
        _passed(result.stdout, result.stderr, 5)
        check = run_node("check.mjs", "--base-url", base, "--studio-missing", "not run here")
    six = check_results(check.stdout)[6]
    assert six[0], six[1]


def test_client_js_with_two_users() -> None:
    install_mastra_clients()
    from agentstream._app import create_app

    app = create_app(guard=RequestGuard(auth=auth), delay_in_ms=None)
    with serving(app) as base:
        result = run_node(SCRIPT, "--base-url", base, "--token", "alice-token", "--other-token", "bob-token")
    _passed(result.stdout, result.stderr, 6)

"""The observability routes driven by the real ``@mastra/client-js`` (``flows-observability.mjs``)
on the demo app with its spans recorded (`record_spans`), without and with an auth hook."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentstream._app import create_app
from agentstream._demo import demo_mastra
from agentstream.server import RequestGuard
from agentstream.storage import SQLiteStore
from agentstream.tracing import instrument, record_spans
from tests.mastra_api._flows_server import auth
from tests.mastra_api.conftest import check_results, install_mastra_clients, run_node, serving

SCRIPT = Path(__file__).resolve().parents[1] / "clients" / "mastra-server" / "flows-observability.mjs"


def _run(tmp_path: Path, *args: str, **options: Any) -> dict[int, tuple[bool, str]]:
    install_mastra_clients()
    storage = SQLiteStore(tmp_path / "obs.db")
    record_spans(storage)
    try:
        with serving(create_app(demo_mastra(storage=storage), delay_in_ms=None, **options)) as base:
            result = run_node(SCRIPT, "--base-url", base, *args)
    finally:
        instrument(enabled=False)
    checks = check_results(result.stdout)
    assert checks, result.stdout + result.stderr
    return checks


def test_client_js_reads_traces(tmp_path: Path) -> None:
    checks = _run(tmp_path)
    assert sorted(checks) == [1, 2, 3]
    assert all(ok for ok, _ in checks.values()), checks


def test_client_js_traces_with_two_users(tmp_path: Path) -> None:
    checks = _run(
        tmp_path, "--token", "alice-token", "--other-token", "bob-token", guard=RequestGuard(auth=auth)
    )
    assert sorted(checks) == [1, 2, 3, 4]
    assert all(ok for ok, _ in checks.values()), checks

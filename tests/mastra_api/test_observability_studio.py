"""Mastra Studio (``mastra studio``) in headless Chromium against the demo app as ``agentstream
serve`` builds it (which records its runs' spans while it serves, nothing switched on here): the workflow graph page, the graph of
a suspended run, a memory thread's chat page and the traces list and a trace's page each show
their content; a run started from the workflow page's form is resumed with its resume form to
success; a suspended run is cancelled with the run page's cancel button (``canceled``, as
Mastra's); the agent's Traces tab (enabled by ``observabilityEnabled``) lists its traces; with no
console error and no failed API call (``flows-studio.mjs``; one screenshot per page, checked in
the test's own directory, `studio_shots`, and copied to ``.cache/e2e/mastra-api``)."""

from __future__ import annotations

from pathlib import Path

from agentstream._app import create_app
from agentstream._demo import demo_mastra
from agentstream.storage import SQLiteStore
from tests.mastra_api.conftest import (
    check_results,
    chromium,
    free_port,
    install_mastra_clients,
    run_node,
    serving,
    studio,
    studio_guard,
)

SCRIPT = Path(__file__).resolve().parents[1] / "clients" / "mastra-server" / "flows-studio.mjs"
PAGES = [
    "studio-workflow-graph.png",
    "studio-workflow-run.png",
    "studio-memory-thread.png",
    "studio-traces.png",
    "studio-trace.png",
    "studio-workflow-resumed.png",
    "studio-workflow-canceled.png",
    "studio-agent-traces.png",
]


def test_studio_shows_the_workflow_graph_a_run_a_thread_and_a_trace_resumes_and_cancels_a_run(
    tmp_path: Path, studio_shots: Path
) -> None:
    install_mastra_clients()
    storage = SQLiteStore(tmp_path / "studio.db")
    studio_port = free_port()
    app = create_app(demo_mastra(storage=storage), guard=studio_guard(studio_port), delay_in_ms=None)
    with serving(app) as base, studio(base, studio_port) as url:
        result = run_node(
            SCRIPT,
            *(
                "--base-url",
                base,
                "--studio-url",
                url,
                "--chromium",
                chromium(),
                "--shots",
                str(studio_shots),
            ),
            timeout=420,
        )
    checks = check_results(result.stdout)
    assert sorted(checks) == [1, 2, 3, 4, 5, 6, 7], result.stdout + result.stderr
    failed = {n: text for n, (ok, text) in checks.items() if not ok}
    assert not failed, f"{failed} (screenshots: {studio_shots})"
    for name in PAGES:  # a rendered page, not a blank one
        assert (studio_shots / name).stat().st_size > 10_000, f"{name} (screenshots: {studio_shots})"

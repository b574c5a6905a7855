"""The harness itself, against the real Mastra server: what passes there is what our API must pass.

``check.mjs`` (the real ``@mastra/client-js``, and Studio in headless Chromium) passes every check
against ``reference-server.mjs``; if it did not, a failure against our server would say nothing.
"""

from __future__ import annotations

from tests.mastra_api.conftest import (
    SHOTS,
    check_results,
    chromium,
    free_port,
    reference_server,
    run_node,
    studio,
)


def test_check_mjs_passes_against_the_real_mastra_server() -> None:
    studio_port = free_port()
    with (
        reference_server(cors_origin=f"http://127.0.0.1:{studio_port}") as base,
        studio(base, studio_port) as url,
    ):
        SHOTS.mkdir(parents=True, exist_ok=True)
        shot = SHOTS / "reference-studio-agents.png"
        result = run_node(
            "check.mjs",
            "--base-url",
            base,
            "--studio-url",
            url,
            "--chromium",
            chromium(),
            "--shot",
            str(shot),
        )
    checks = check_results(result.stdout)
    assert sorted(checks) == list(range(1, 9)), result.stdout + result.stderr
    failed = {n: text for n, (ok, text) in checks.items() if not ok}
    assert not failed, failed
    assert result.returncode == 0
    assert shot.stat().st_size > 10_000  # a rendered page, not a blank one

"""`tests/_services.py` and the session check in `tests/conftest.py`: a missing service ends the run
with one line naming it and why, instead of skipping the tests that need it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests import _services

DEAD_PG = "postgresql://postgres@127.0.0.1:1/postgres"
DEAD_REDIS = "redis://127.0.0.1:1/0"


@pytest.fixture
def fresh_checks() -> Iterator[None]:
    """Checks made again (the real services' cached answers are kept out of this test and back after)."""
    _services.problem.cache_clear()
    yield
    _services.problem.cache_clear()


def test_an_unreachable_service_is_one_line_naming_it_and_the_fix(
    monkeypatch: pytest.MonkeyPatch, fresh_checks: None
) -> None:
    monkeypatch.setenv("AGENTSTREAM_TEST_PG_DSN", DEAD_PG)
    monkeypatch.setenv("AGENTSTREAM_TEST_REDIS_URL", DEAD_REDIS)
    message = _services.line(["postgres", "redis", "postgres"])
    assert message is not None and "\n" not in message
    assert message.startswith(f"test service unavailable: postgres: unreachable at {DEAD_PG} (")
    assert "run scripts/postgres.sh; redis: unreachable at redis://127.0.0.1:1/0 (" in message
    assert message.endswith("run scripts/redis.sh")
    assert message.count("postgres: unreachable") == 1  # each service once


def test_a_missing_package_and_an_unknown_name(fresh_checks: None) -> None:
    assert _services.line(["dbos"]) is None  # installed by the dev extra
    with pytest.raises(ValueError, match=r"unknown test service 'mysql'; expected one of \["):
        _services.problem("mysql")


def test_the_run_ends_before_any_test_with_the_line_and_status_3() -> None:
    env = {**os.environ, "AGENTSTREAM_TEST_PG_DSN": DEAD_PG}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "tests/storage/test_contract.py", "-p", "no:cacheprovider"],
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
        cwd=_services.ROOT,
    )
    assert run.returncode == _services.EXIT_SERVICE, run.stdout[-2000:]
    lines = [line for line in run.stdout.splitlines() if "test service unavailable" in line]
    assert len(lines) == 1 and f"postgres: unreachable at {DEAD_PG}" in lines[0], run.stdout[-2000:]
    assert " passed" not in run.stdout and " skipped" not in run.stdout  # nothing ran

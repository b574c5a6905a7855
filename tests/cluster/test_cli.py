"""``agentstream cluster``: its mistakes are one line, and it starts, serves and stops for real."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import httpx
import pytest

from tests.cli._support import agentstream, assert_one_line

from ._app import answer
from .conftest import start_cluster

NO_CHECKOUT = "import agentstream._cli.cluster as c; c._checkout = lambda: None"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--servers", "0"], "--servers: expected a whole number from 1 to 16, got '0'"),
        (["--workers", "17"], "--workers: expected a whole number from 0 to 16, got '17'"),
        (["--workers", "0"], "--workers 0 needs --app"),
        (["--workers", "many"], "--workers: expected a whole number from 0 to 16, got 'many'"),
        (["--port", "70000"], "--port: expected a port between 0 and 65535"),
        (["--startup-timeout", "-1"], "--startup-timeout: expected a number of seconds > 0"),
    ],
)
def test_a_wrong_argument_is_one_line(args: list[str], expected: str) -> None:
    assert_one_line(agentstream("cluster", *args), "cluster", 2, expected)


def test_wrong_service_urls_are_one_line(redis_url: str, pg_dsn: str) -> None:
    proc = agentstream("cluster", "--app", "x:y", "--database-url", "mysql://db/x", "--redis-url", redis_url)
    assert_one_line(proc, "cluster", 2, "--database-url: expected postgresql://…, got 'mysql://db/x'")
    proc = agentstream("cluster", "--app", "x:y", "--database-url", pg_dsn, "--redis-url", "http://r")
    assert_one_line(proc, "cluster", 2, "--redis-url: expected redis://HOST:PORT/DB, got 'http://r'")
    secret = "postgresql://postgres:hunter2@127.0.0.1:1/none"
    proc = agentstream("cluster", "--app", "x:y", "--database-url", secret, "--redis-url", redis_url)
    line = assert_one_line(
        proc, "cluster", 1, "cannot reach PostgreSQL at postgresql://postgres:***@127.0.0.1:1"
    )
    assert "hunter2" not in line
    proc = agentstream(
        "cluster", "--app", "x:y", "--database-url", pg_dsn, "--redis-url", "redis://127.0.0.1:1/0"
    )
    assert_one_line(proc, "cluster", 1, "cannot reach Redis at redis://127.0.0.1:1/0")


def test_without_a_checkout_the_services_and_the_app_must_be_named() -> None:
    proc = agentstream("cluster", prelude=NO_CHECKOUT)
    assert_one_line(proc, "cluster", 2, "the default app", "ships with the source checkout only: pass --app")
    proc = agentstream("cluster", "--app", "mine:mastra", prelude=NO_CHECKOUT)
    assert_one_line(proc, "cluster", 2, "no --database-url given", "pass --database-url")


def test_ports_past_the_last_one_are_refused(redis_url: str, pg_dsn: str, tmp_path: Path) -> None:
    args = ["--app", "x:y", "--database-url", pg_dsn, "--redis-url", redis_url, "--logs", str(tmp_path)]
    proc = agentstream("cluster", "--port", "65535", "--servers", "2", *args)
    assert_one_line(proc, "cluster", 2, "--port 65535 with --servers 2 runs past port 65535")


def test_a_process_failing_at_start_up_stops_everything_in_one_line(
    redis_url: str, durable_db: str, tmp_path: Path
) -> None:
    args = ["--port", "0", "--database-url", durable_db, "--redis-url", redis_url, "--logs", str(tmp_path)]
    proc = agentstream("cluster", "--app", "no_such_module:mastra", *args)
    line = assert_one_line(proc, "cluster", 2, "exited with code 2 while starting: agentstream ")
    assert "no module named 'no_such_module'" in line
    assert f"(log: {tmp_path}/" in line


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_it_serves_a_chat_through_a_worker_and_ctrl_c_stops_every_process(
    redis_url: str, durable_db: str, cluster_env: dict[str, str], tmp_path: Path
) -> None:
    Path(cluster_env["AGENTSTREAM_TEST_GATE"]).touch()
    cluster = start_cluster(
        tmp_path,
        *("--servers", "1", "--workers", "1", "--app", "tests.cluster._app:mastra"),
        *("--database-url", durable_db, "--redis-url", redis_url),
        env=cluster_env,
    )
    try:
        ((url, server),) = cluster.servers.values()
        (worker,) = cluster.workers.values()
        body = {
            "id": "smoke",
            "trigger": "submit-message",
            "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hello?"}]}],
        }
        reply = httpx.post(f"{url}/api/chat", json=body, timeout=120)
        deltas = [
            json.loads(line[6:])
            for line in reply.text.splitlines()
            if line.startswith("data: {") and '"text-delta"' in line
        ]
        assert "".join(d["delta"] for d in deltas) == answer("hello?")
        assert Path(cluster_env["AGENTSTREAM_TEST_TURNS"]).read_text() == f"hello? {worker}\n"
    finally:
        code = cluster.stop(signal.SIGINT)
    assert code == 0, cluster.said()
    assert cluster.said().rstrip().endswith("agentstream cluster: stopped")
    assert not _alive(server) and not _alive(worker)

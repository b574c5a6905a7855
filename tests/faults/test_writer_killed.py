"""The process writing an answer killed mid-answer (a server answering in-process; a worker): its
readers get what was written and then an ``error`` part within seconds (its writer lease runs out),
instead of waiting for the stream's TTL; the counting tool ran once."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from agentstream.server import ANSWER_LOST
from tests.durable.conftest import durable_db

from ._app import FIRST
from ._redis import redis_server
from ._serve import (
    ASGI_CRASH,
    body,
    chunks_of,
    client,
    counted,
    deltas,
    payloads,
    servers,
    worker,
)

__all__ = ["durable_db"]  # the durable tests' fixture: a PostgreSQL database of this test's own


def _lost(chunks: list[dict[str, object]]) -> None:
    kinds = [c["type"] for c in chunks]
    assert kinds[0] == "start" and kinds[-1] == "error" and "finish" not in kinds
    assert chunks[-1]["errorText"] == ANSWER_LOST
    assert [c["delta"] for c in chunks if c["type"] == "text-delta"] == FIRST


def test_a_server_killed_mid_answer_its_resume_on_another_server_ends_with_an_error(tmp_path: Path) -> None:
    with redis_server(tmp_path, aof=False) as redis, servers(tmp_path, redis.url, 2) as [first, second]:
        request = body()
        received: list[str] = []
        with client() as http, http.stream("POST", f"{first.base}/api/chat/counter", json=request) as answer:
            for payload in payloads(answer.iter_lines()):
                received.append(payload)
                if deltas(received) == FIRST:
                    break  # the answer waits at the gate: its server dies now
        first.process.send_signal(signal.SIGKILL)
        first.process.wait(30)
        with (
            client() as http,
            http.stream("GET", f"{second.base}/api/chat/{request['id']}/stream") as resumed,
        ):
            assert resumed.status_code == 200
            chunks = chunks_of(list(payloads(resumed.iter_lines())))
        _lost(chunks)
        assert chunks[: len(received)] == [json.loads(p) for p in received]  # the replay, then the error
        assert counted(tmp_path) == 1
        # The lost answer was ended as its reader was told: nothing to resume, nothing to stop.
        with client() as http:
            assert http.get(f"{second.base}/api/chat/{request['id']}/stream").status_code == 204
            assert http.delete(f"{second.base}/api/chat/{request['id']}/stream").status_code == 204
    assert ASGI_CRASH not in second.log_text()


@pytest.mark.services("dbos", "postgres")
def test_the_only_worker_killed_mid_answer_ends_the_answer_with_an_error(
    tmp_path: Path, durable_db: str
) -> None:
    with (
        redis_server(tmp_path, aof=False) as redis,
        worker(tmp_path, redis.url, durable_db) as turns,
        servers(tmp_path, redis.url, 1, "--durable-db", durable_db) as [server],
    ):
        request = body()
        received: list[str] = []
        with client() as http, http.stream("POST", f"{server.base}/api/chat/counter", json=request) as answer:
            assert answer.status_code == 200
            for payload in payloads(answer.iter_lines()):
                received.append(payload)
                if deltas(received) == FIRST and turns.poll() is None:
                    os.kill(turns.pid, signal.SIGKILL)  # no other worker takes the turn over
                    turns.wait(30)
        _lost(chunks_of(received))
        assert counted(tmp_path) == 1
        with client() as http:  # ended as its reader was told: nothing to resume
            assert http.get(f"{server.base}/api/chat/{request['id']}/stream").status_code == 204
    assert ASGI_CRASH not in server.log_text()

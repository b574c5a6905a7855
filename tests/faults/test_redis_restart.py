"""A real `agentstream serve` process on a Redis stream store of the test's own, and that Redis
restarted or down: the client's answer always ends (complete, or with an ``error`` part), every
request gets an answer (503 with a sentence while Redis is down), the counting tool runs once, and
after Redis is back new chats answer normally."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.durable.conftest import durable_db

from ._app import FIRST, REST
from ._redis import RedisServer, redis_server
from ._serve import (
    ASGI_CRASH,
    Server,
    body,
    chunks_of,
    client,
    counted,
    deltas,
    payloads,
    servers,
    text_of,
    worker,
)

__all__ = ["durable_db"]  # the durable tests' fixture: a PostgreSQL database of this test's own


def _complete(server: Server, tmp: Path) -> None:
    """A new chat answers completely, its tool run once more."""
    before = counted(tmp)
    with client() as http, http.stream("POST", f"{server.base}/api/chat/counter", json=body()) as answer:
        assert answer.status_code == 200
        chunks = chunks_of(list(payloads(answer.iter_lines())))
    assert [c["type"] for c in chunks][-1] == "finish"
    assert text_of(chunks) == "".join(FIRST + REST)
    assert counted(tmp) == before + 1


def _restarted_mid_answer(server: Server, redis: RedisServer, tmp: Path, aof: bool) -> None:
    """A chat whose Redis restarts (down ~1 s) mid-answer ends: complete with AOF, else with an
    ``error`` part after what the client had; its tool ran once; then two new chats answer."""
    request = body()
    received: list[str] = []
    with client() as http, http.stream("POST", f"{server.base}/api/chat/counter", json=request) as answer:
        assert answer.status_code == 200
        for payload in payloads(answer.iter_lines()):
            received.append(payload)
            if deltas(received) == FIRST and not (tmp / "gate").exists():
                redis.restart(down_s=1.0)  # mid-answer: the writer waits at the gate meanwhile
                (tmp / "gate").touch()
    chunks = chunks_of(received)
    kinds = [c["type"] for c in chunks]
    if aof:
        # Nothing was lost: the writer's and the readers' commands were retried across the restart.
        assert kinds[-1] == "finish" and "error" not in kinds
        assert text_of(chunks) == "".join(FIRST + REST)
    else:
        # The stream went with the restart: the client is told, after what it had.
        assert kinds[-1] == "error" and "finish" not in kinds
        assert text_of(chunks) == "".join(FIRST)
    assert counted(tmp) == 1
    with client() as http:  # nothing left running to resume
        assert http.get(f"{server.base}/api/chat/{request['id']}/stream").status_code == 204
    _complete(server, tmp)
    _complete(server, tmp)


@pytest.mark.parametrize("aof", [True, False], ids=["aof", "no-aof"])
def test_a_redis_restart_mid_answer_ends_the_answer_and_new_chats_answer(tmp_path: Path, aof: bool) -> None:
    with redis_server(tmp_path, aof=aof) as redis, servers(tmp_path, redis.url) as [server]:
        _restarted_mid_answer(server, redis, tmp_path, aof)
    assert ASGI_CRASH not in server.log_text()


@pytest.mark.services("dbos", "postgres")
@pytest.mark.parametrize("aof", [True, False], ids=["aof", "no-aof"])
def test_a_redis_restart_mid_answer_on_a_worker_ends_the_answer_and_new_chats_answer(
    tmp_path: Path, durable_db: str, aof: bool
) -> None:
    with (
        redis_server(tmp_path, aof=aof) as redis,
        worker(tmp_path, redis.url, durable_db),
        servers(tmp_path, redis.url, 1, "--durable-db", durable_db) as [server],
    ):
        _restarted_mid_answer(server, redis, tmp_path, aof)
    assert ASGI_CRASH not in server.log_text()


def test_while_redis_is_down_post_get_and_delete_answer_503_and_after_it_returns_chats_answer(
    tmp_path: Path,
) -> None:
    (tmp_path / "gate").touch()
    with redis_server(tmp_path, aof=False) as redis, servers(tmp_path, redis.url) as [server]:
        _complete(server, tmp_path)  # the server's pool has connections, soon stale
        redis.stop()
        chat = body()
        with client() as http:
            refused = [
                http.post(f"{server.base}/api/chat/counter", json=chat),
                http.get(f"{server.base}/api/chat/{chat['id']}/stream"),
                http.delete(f"{server.base}/api/chat/{chat['id']}/stream"),
            ]
        for response in refused:
            assert response.status_code == 503, response.text
            assert response.headers["retry-after"] == "5"
            error = json.loads(response.text)["error"]
            assert error["name"] == "ServiceUnavailableError"
            assert error["message"].startswith("the server's stream store is unreachable")
        assert counted(tmp_path) == 1  # nothing ran
        redis.start()
        # The same chat id was never claimed: it answers now, as do new ones.
        with client() as http, http.stream("POST", f"{server.base}/api/chat/counter", json=chat) as answer:
            chunks = chunks_of(list(payloads(answer.iter_lines())))
        assert text_of(chunks) == "".join(FIRST + REST)
        _complete(server, tmp_path)
    log = server.log_text()
    assert ASGI_CRASH not in log and "Traceback" not in log

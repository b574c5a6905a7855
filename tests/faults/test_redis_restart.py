"""A real `agentstream serve` process on a Redis stream store of the test's own, and that Redis
restarted or down: the client's answer always ends (complete, or with an ``error`` part), every
request gets an answer (503 with a sentence while Redis is down), the counting tool runs once, and
after Redis is back new chats answer normally."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ._app import FIRST, REST
from ._redis import redis_server
from ._serve import ASGI_CRASH, Server, body, chunks_of, client, counted, deltas, payloads, servers, text_of


def _complete(server: Server, tmp: Path) -> None:
    """A new chat answers completely, its tool run once more."""
    before = counted(tmp)
    with client() as http, http.stream("POST", f"{server.base}/api/chat/counter", json=body()) as answer:
        assert answer.status_code == 200
        chunks = chunks_of(list(payloads(answer.iter_lines())))
    assert [c["type"] for c in chunks][-1] == "finish"
    assert text_of(chunks) == "".join(FIRST + REST)
    assert counted(tmp) == before + 1


@pytest.mark.parametrize("aof", [True, False], ids=["aof", "no-aof"])
def test_a_redis_restart_mid_answer_ends_the_answer_and_new_chats_answer(tmp_path: Path, aof: bool) -> None:
    with redis_server(tmp_path, aof=aof) as redis, servers(tmp_path, redis.url) as [server]:
        request = body()
        received: list[str] = []
        with client() as http, http.stream("POST", f"{server.base}/api/chat/counter", json=request) as answer:
            assert answer.status_code == 200
            for payload in payloads(answer.iter_lines()):
                received.append(payload)
                if deltas(received) == FIRST:
                    redis.restart(down_s=1.0)  # mid-answer: the writer waits at the gate meanwhile
                    (tmp_path / "gate").touch()
        chunks = chunks_of(received)
        kinds = [c["type"] for c in chunks]
        if aof:
            # Nothing was lost: the writer's and the reader's commands were retried across the restart.
            assert kinds[-1] == "finish" and "error" not in kinds
            assert text_of(chunks) == "".join(FIRST + REST)
        else:
            # The stream went with the restart: the client is told, after what it had.
            assert kinds[-1] == "error" and "finish" not in kinds
            assert text_of(chunks) == "".join(FIRST)
        assert counted(tmp_path) == 1
        # Resuming finds nothing running: the answer was finished (or lost and ended).
        with client() as http:
            assert http.get(f"{server.base}/api/chat/{request['id']}/stream").status_code == 204
        _complete(server, tmp_path)
        _complete(server, tmp_path)
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

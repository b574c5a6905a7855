"""PostgreSQL faults under chat turns on workers: real servers, real workers, a PostgreSQL server
of the tests' own that they stop and start (`_postgres.OwnPostgres`), the shared Redis.

* PostgreSQL down longer than a lease, two workers: the tool in flight runs once, the answer ends.
* A POST while PostgreSQL is down: 503 with a sentence (the chat's claim released, so a resume
  does not hang), and a normal chat once it is back.
* A worker killed mid tool call: the turn finishes once on the other worker, and the tool's side
  effect, keyed by its idempotency key, is made once although the tool ran twice.
"""

from __future__ import annotations

import os
import signal
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ._cluster import Processes, chat_body, chunk_types, lines, payloads, text_of
from ._pg_app import ANSWER
from ._postgres import OwnPostgres, wait_until

pytestmark = pytest.mark.services("dbos", "redis")

LEASE = 2.0


@pytest.fixture(scope="module")
def own_pg() -> Iterator[OwnPostgres]:
    pg = OwnPostgres()
    pg.start()
    yield pg
    pg.remove()


@pytest.fixture
def cluster(own_pg: OwnPostgres, redis_url: str, tmp_path: Path) -> Iterator[Processes]:
    if not own_pg.running():  # a test that failed with the server stopped
        own_pg.start()
    url = own_pg.create_database(f"faults_{uuid.uuid4().hex[:12]}")
    procs = Processes(url, redis_url, tmp_path)
    yield procs
    procs.stop_all()


class Chat(threading.Thread):
    """One chat POSTed from a thread, its SSE payloads collected until ``[DONE]``."""

    def __init__(self, base: str, chat_id: str) -> None:
        super().__init__(daemon=True)
        self.base, self.chat_id = base, chat_id
        self.status: int | None = None
        self.found: list[str] = []
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with httpx.stream(
                "POST", f"{self.base}/api/chat/payer", json=chat_body(self.chat_id), timeout=120
            ) as r:
                self.status = r.status_code
                self.found = payloads(r.iter_lines())
        except BaseException as exc:  # reported by the assertion on it
            self.error = exc


def _answered(chat: Chat, procs: Processes) -> list[str]:
    chat.join(120)
    assert not chat.is_alive(), f"the answer did not end\n{procs.logs()}"
    assert chat.error is None, f"{chat.error!r}\n{procs.logs()}"
    assert chat.status == 200
    kinds = chunk_types(chat.found)
    assert kinds[0] == "start" and kinds[-1] == "finish" and kinds.count("finish") == 1, kinds
    assert chat.found[-1] == "[DONE]"
    assert text_of(chat.found) == ANSWER
    return kinds


def test_postgres_down_longer_than_a_lease_does_not_run_a_live_workers_tool_again(
    own_pg: OwnPostgres, cluster: Processes, tmp_path: Path
) -> None:
    cluster.worker("--lease-sec", str(LEASE))
    cluster.worker("--lease-sec", str(LEASE))
    base = cluster.server()
    chat = Chat(base, f"chat-{uuid.uuid4().hex}")
    chat.start()
    wait_until(lambda: len(lines(tmp_path / "runs")) == 1, 60, "the tool to start")
    own_pg.stop()
    # Four leases without a database: every lease has expired on the database's clock.
    threading.Event().wait(4 * LEASE)
    own_pg.start()
    # Two more leases with it back: a survivor that took the live worker over would have re-run
    # the turn (and the tool) by now.
    threading.Event().wait(2 * LEASE)
    (tmp_path / "gate").touch()
    _answered(chat, cluster)
    assert len(lines(tmp_path / "runs")) == 1, cluster.logs()
    assert len(lines(tmp_path / "effects")) == 1


def test_a_post_while_postgres_is_down_is_refused_with_503_and_the_chat_works_once_it_is_back(
    own_pg: OwnPostgres, cluster: Processes, tmp_path: Path
) -> None:
    cluster.worker("--lease-sec", str(LEASE))
    base = cluster.server()
    (tmp_path / "gate").touch()
    own_pg.stop()
    try:
        chat_id = f"chat-{uuid.uuid4().hex}"
        refused = httpx.post(f"{base}/api/chat/payer", json=chat_body(chat_id), timeout=60)
        assert refused.status_code == 503, refused.text
        assert refused.headers["retry-after"] == "5"
        error = refused.json()["error"]
        assert error["name"] == "ServiceUnavailable"
        assert "database cannot take this chat turn right now" in error["message"]
        # The claim was released: a resume of the chat finds no answer running (no hang).
        resumed = httpx.get(f"{base}/api/chat/{chat_id}/stream", timeout=60)
        assert resumed.status_code == 204, resumed.text
    finally:
        own_pg.start()
    chat = Chat(base, f"chat-{uuid.uuid4().hex}")
    chat.start()
    _answered(chat, cluster)
    assert len(lines(tmp_path / "effects")) == 1


def test_a_worker_killed_mid_tool_call_has_the_turn_finished_once_and_the_effect_made_once(
    cluster: Processes, tmp_path: Path
) -> None:
    first = cluster.worker("--lease-sec", str(LEASE))
    second = cluster.worker("--lease-sec", str(LEASE))
    base = cluster.server()
    chat = Chat(base, f"chat-{uuid.uuid4().hex}")
    chat.start()
    wait_until(lambda: len(lines(tmp_path / "runs")) == 1, 60, "the tool to start")
    pid, key = lines(tmp_path / "runs")[0].split(" ", 1)
    victim, survivor = (first, second) if int(pid) == first.pid else (second, first)
    assert int(pid) == victim.pid
    os.kill(victim.pid, signal.SIGKILL)
    wait_until(lambda: len(lines(tmp_path / "runs")) == 2, 60, "the other worker to run the call again")
    (tmp_path / "gate").touch()
    _answered(chat, cluster)
    runs = [line.split(" ", 1) for line in lines(tmp_path / "runs")]
    assert runs == [[pid, key], [str(survivor.pid), key]]  # the same call, the same key
    assert lines(tmp_path / "effects") == [f"{key} 500"]  # the effect once

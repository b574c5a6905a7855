"""The issue's load test: 300 concurrent chats through two servers and two workers (Redis and
PostgreSQL on loopback); one worker and one server are killed with SIGKILL while every answer is
half-way, and no answer is lost or duplicated: the clients resume on the surviving server.

The model (`tests.cluster._app`) streams half of each answer, then waits for a gate file: the kill
happens while all 300 turns are mid-answer, and the gate opens once every client of the killed
server has reconnected to the other one. No timing decides anything; the deadlines only turn a hang
into a failure.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from ._app import answer
from .conftest import start_cluster

CHATS = 300
HANG_S = 300  # a hang guard, not an assertion on speed


@dataclass
class Chat:
    id: str
    question: str
    home: int  # the server it POSTs to
    chunks: list[dict[str, Any]] = field(default_factory=list)
    half_way: asyncio.Event = field(default_factory=asyncio.Event)
    resumed: asyncio.Event = field(default_factory=asyncio.Event)
    resumes: int = 0
    gone: bool = False  # a resume found nothing active before the answer finished

    @property
    def finished(self) -> bool:
        return any(chunk.get("type") == "finish" for chunk in self.chunks)

    @property
    def text(self) -> str:
        return "".join(c["delta"] for c in self.chunks if c.get("type") == "text-delta")


async def _read(response: httpx.Response, chat: Chat) -> None:
    async for line in response.aiter_lines():
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        chunk = json.loads(line.removeprefix("data: "))
        chat.chunks.append(chunk)
        if chunk.get("type") == "text-delta":
            chat.half_way.set()


async def _converse(client: httpx.AsyncClient, chat: Chat, urls: list[str]) -> None:
    """POST the question; when the connection drops before the finish, resume the way the AI SDK's
    ``resumeStream()`` does (``GET <api>/<chat id>/stream``), keeping our place with ``?after=``."""
    body = {
        "id": chat.id,
        "trigger": "submit-message",
        "messages": [
            {"id": f"u-{chat.id}", "role": "user", "parts": [{"type": "text", "text": chat.question}]}
        ],
    }
    try:
        async with client.stream("POST", f"{urls[chat.home]}/api/chat", json=body) as response:
            assert response.status_code == 200, (chat.id, response.status_code)
            await _read(response, chat)
    except httpx.TransportError:
        pass
    for attempt in range(1, 20):
        if chat.finished:
            return
        url = urls[(chat.home + attempt) % len(urls)]
        try:
            stream = f"{url}/api/chat/{chat.id}/stream"
            async with client.stream("GET", stream, params={"after": len(chat.chunks)}) as response:
                if response.status_code == 204:
                    chat.gone = True
                    return
                assert response.status_code == 200, (chat.id, response.status_code)
                chat.resumes += 1
                chat.resumed.set()
                await _read(response, chat)
        except httpx.TransportError:
            await asyncio.sleep(0.1)  # that server is down; the next attempt goes to the other


def _turns(path: Path) -> list[tuple[str, int]]:
    lines = path.read_text().splitlines() if path.exists() else []
    return [(line.rsplit(" ", 1)[0], int(line.rsplit(" ", 1)[1])) for line in lines]


async def _wait(what: str, events: list[asyncio.Event], chats: list[Chat]) -> None:
    try:
        async with asyncio.timeout(HANG_S):
            await asyncio.gather(*(event.wait() for event in events))
    except TimeoutError:
        done = sum(event.is_set() for event in events)
        raise AssertionError(f"hung waiting for {what}: {done}/{len(events)}") from None


async def test_300_chats_survive_a_killed_worker_and_a_killed_server(
    durable_db: str, redis_url: str, cluster_env: dict[str, str], tmp_path: Path
) -> None:
    cluster = start_cluster(
        tmp_path,
        "--app", "tests.cluster._app:mastra",
        "--database-url", durable_db,
        "--redis-url", redis_url,
        "--worker-arg=--no-smooth",
        "--worker-arg=--lease-sec=3",
        "--worker-arg=--poll-sec=0.05",
        env=cluster_env,
    )  # fmt: skip
    try:
        urls = [url for url, _ in cluster.servers.values()]
        dead_server = cluster.servers["server 1"][1]  # its clients are the chats with home 0
        dead_worker, survivor = cluster.workers["worker 1"], cluster.workers["worker 2"]
        run = os.urandom(4).hex()
        chats = [Chat(f"load-{run}-{i}", f"question {i} of run {run}", i % 2) for i in range(CHATS)]
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
        async with httpx.AsyncClient(timeout=httpx.Timeout(120, connect=30), limits=limits) as client:
            talks = [asyncio.ensure_future(_converse(client, chat, urls)) for chat in chats]
            try:
                await _wait("every answer to be half-way", [c.half_way for c in chats], chats)
                os.kill(dead_worker, signal.SIGKILL)
                os.kill(dead_server, signal.SIGKILL)
                orphans = [c.resumed for c in chats if c.home == 0]
                await _wait("the killed server's clients to resume", orphans, chats)
                Path(cluster_env["AGENTSTREAM_TEST_GATE"]).touch()
                async with asyncio.timeout(HANG_S):
                    await asyncio.gather(*talks)
            finally:
                for talk in talks:
                    talk.cancel()
    finally:
        Path(cluster_env["AGENTSTREAM_TEST_GATE"]).touch()
        stopped = cluster.stop()

    assert [c.id for c in chats if c.gone] == []
    assert [c.id for c in chats if not c.finished] == []
    for chat in chats:
        kinds = Counter(chunk["type"] for chunk in chat.chunks)
        once = ("start", "text-start", "text-end", "finish")
        assert [kinds[k] for k in once] == [1, 1, 1, 1], (chat.id, kinds)
        assert chat.text == answer(chat.question), chat.id  # every delta once, in order
    assert all(c.resumes >= 1 for c in chats if c.home == 0)
    turns = _turns(Path(cluster_env["AGENTSTREAM_TEST_TURNS"]))
    by_process = Counter(pid for _, pid in turns)
    assert set(by_process) == {dead_worker, survivor}, by_process  # both workers, no server
    taken_over = {q for q, pid in turns if pid == dead_worker}
    assert taken_over <= {q for q, pid in turns if pid == survivor}  # the survivor finished them
    assert {q for q, _ in turns} == {c.question for c in chats}
    for pid in (dead_worker, dead_server):
        assert f"(pid {pid}) was killed by SIGKILL" in cluster.said()
    assert stopped == 0, cluster.said()

"""Chat answers run on `agentstream worker --app` processes while `agentstream serve --durable-db`
processes stream them from Redis: real processes, a fresh PostgreSQL database per test."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from tests.resumable._gated_app import FIRST, REST

from .conftest import PYTHONPATH, ROOT, Workers

APP = "tests.durable._chat_app:mastra"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def servers(workers: Workers, redis: str, count: int = 1) -> Iterator[list[str]]:
    """``count`` `agentstream serve` processes (started at once) handing chat turns to the workers
    of ``workers``' database."""
    env = {**os.environ, "PYTHONPATH": PYTHONPATH, "AGENTSTREAM_TEST_GATE": str(workers.tmp / "gate")}
    started: list[tuple[subprocess.Popen[bytes], str, Path]] = []
    try:
        for _ in range(count):
            port = _free_port()
            command = [sys.executable, "-m", "agentstream", "serve", "--app", APP, "--port", str(port)]
            command += ["--durable-db", workers.url, "--stream-store", redis]
            log = workers.tmp / f"server-{port}.log"
            process = subprocess.Popen(
                command, cwd=ROOT, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT
            )
            started.append((process, f"http://127.0.0.1:{port}", log))
        for process, base, log in started:
            _wait_until_serving(process, base, log)
        yield [base for _, base, _ in started]
    finally:
        for process, _, _ in started:
            process.terminate()
        for process, _, _ in started:
            process.wait(30)


def _wait_until_serving(process: subprocess.Popen[bytes], base: str, log: Path) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            httpx.get(f"{base}/api/agents", timeout=5)
            return
        except httpx.TransportError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"agentstream serve did not start: {log.read_text()}") from None
            time.sleep(0.1)


@contextlib.contextmanager
def server(workers: Workers, redis: str) -> Iterator[str]:
    with servers(workers, redis) as [base]:
        yield base


def chat_worker(workers: Workers, redis: str, *extra: str) -> subprocess.Popen[bytes]:
    return workers.start("--app", APP, "--stream-store", redis, *extra, tools=None)


def body(text: str, chat_id: str | None = None) -> dict[str, Any]:
    return {
        "id": chat_id or f"chat-{uuid.uuid4().hex}",
        "trigger": "submit-message",
        "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": text}]}],
    }


def frames(lines: Iterator[str]) -> Iterator[str]:
    """The SSE ``data:`` payloads, up to and including ``[DONE]``."""
    for line in lines:
        if line.startswith("data: "):
            yield line.removeprefix("data: ")
            if line == "data: [DONE]":
                return


def check_answer(payloads: list[str], text: str) -> list[dict[str, Any]]:
    """One well-formed answer: one start first, one finish last, then [DONE]; the text is ``text``."""
    assert payloads[-1] == "[DONE]"
    chunks = [json.loads(p) for p in payloads[:-1]]
    kinds = [c["type"] for c in chunks]
    assert kinds[0] == "start" and kinds.count("start") == 1
    assert kinds[-1] == "finish" and kinds.count("finish") == 1
    assert "".join(c["delta"] for c in chunks if c["type"] == "text-delta") == text
    return chunks


def queue_names(url: str) -> set[str]:
    """The DBOS queues registered on the database (a takeover queue exists only while it carries work)."""
    with psycopg.connect(url, autocommit=True) as conn:
        return {row[0] for row in conn.execute("SELECT name FROM dbos.queues").fetchall()}


def workflow_rows(url: str, limit: float = 30.0) -> list[tuple[str, str, str, str]]:
    """The turns' DBOS workflows once none is still running: a client reads the stream's end
    before the worker's workflow has recorded its own (the store is finished first); the limit only
    turns a hang into a failure that shows the rows."""
    deadline = time.monotonic() + limit
    while True:
        with psycopg.connect(url) as conn:
            rows = conn.execute(
                "SELECT workflow_uuid, status, executor_id, serialization FROM dbos.workflow_status"
            ).fetchall()
        if all(row[1] not in ("PENDING", "ENQUEUED") for row in rows) or time.monotonic() > deadline:
            return [tuple(row) for row in rows]
        time.sleep(0.05)


async def in_process_answer(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The same request answered by `create_app` in this process (no worker, memory store)."""
    from agentstream._app import create_app
    from tests.durable._chat_app import mastra

    app = create_app(mastra())
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        async with client.stream("POST", "/api/chat/demo", json=request) as answer:
            lines = [line async for line in answer.aiter_lines()]
    payloads = list(frames(iter(lines)))
    return [json.loads(p) for p in payloads[:-1]]


async def test_a_chat_answer_runs_on_a_worker_and_streams_through_the_server(
    workers: Workers, redis_url: str
) -> None:
    worker = chat_worker(workers, redis_url)
    request = body("What's the weather in Berlin?")
    with server(workers, redis_url) as base, httpx.Client(timeout=60) as client:
        with client.stream("POST", f"{base}/api/chat/demo", json=request) as answer:
            assert answer.status_code == 200
            payloads = list(frames(answer.iter_lines()))
    chunks = check_answer(
        payloads, "In Berlin it is currently 6°C and overcast. Let me know if you would like more detail."
    )
    expected = await in_process_answer(body("What's the weather in Berlin?"))
    # Identical to the answer produced in-process, but for the message id (random per answer).
    assert chunks[1:] == expected[1:]
    assert chunks[0].keys() == expected[0].keys()
    [(_, status, executor, serialization)] = workflow_rows(workers.url)
    assert status == "SUCCESS"
    assert executor.split(":")[1] == str(worker.pid)  # ran in the worker process
    assert serialization == "portable_json"  # the turn is stored as JSON, not pickle


async def test_a_worker_killed_mid_answer_is_taken_over_and_no_chunk_is_written_twice(
    workers: Workers, redis_url: str
) -> None:
    import redis

    gate = workers.tmp / "gate"
    first = chat_worker(workers, redis_url, "--lease-sec", "1.5")
    request = body("Weather?")
    with server(workers, redis_url) as base, httpx.Client(timeout=90) as client:
        with client.stream("POST", f"{base}/api/chat/gated", json=request) as answer:
            payloads: list[str] = []
            second = None
            for payload in frames(answer.iter_lines()):
                payloads.append(payload)
                deltas = [json.loads(p).get("delta") for p in payloads if p != "[DONE]"]
                if second is None and [d for d in deltas if d] == FIRST:
                    # Mid-answer: the first worker waits at the gate. It dies; another takes over.
                    os.kill(first.pid, signal.SIGKILL)
                    first.wait()
                    # An idle worker polls no takeover queue: none is registered until a takeover.
                    assert "agentstream-chat" not in queue_names(workers.url)
                    second = chat_worker(workers, redis_url, "--lease-sec", "1.5")
                    gate.touch()
    chunks = check_answer(payloads, "".join(FIRST + REST))
    assert second is not None
    # The takeover queue carried the turn and, with nothing left on it, is deleted again.
    deadline = time.monotonic() + 60
    while "agentstream-chat" in queue_names(workers.url):
        assert time.monotonic() < deadline, "the takeover queue was never deleted"
        time.sleep(0.1)
    [(workflow_id, status, executor, _)] = workflow_rows(workers.url)
    assert status == "SUCCESS" and executor.split(":")[1] == str(second.pid)
    # In Redis: every chunk number once, in order, exactly what the client got.
    with redis.Redis.from_url(redis_url) as r:
        entries = r.xrange(f"agentstream:stream:{workflow_id}")
    ids = [entry_id.decode() for entry_id, fields in entries if b"c" in fields]
    assert ids == [f"0-{n + 2}" for n in range(len(chunks))]
    assert [json.loads(fields[b"c"]) for _, fields in entries if b"c" in fields] == chunks


async def test_a_second_server_resumes_an_answer_a_worker_is_writing(
    workers: Workers, redis_url: str
) -> None:
    gate = workers.tmp / "gate"
    chat_worker(workers, redis_url)
    request = body("Weather?")
    with servers(workers, redis_url, 2) as [one, two], httpx.Client(timeout=60) as client:
        with client.stream("POST", f"{one}/api/chat/gated", json=request) as answer:
            for payload in frames(answer.iter_lines()):
                if FIRST[-1] in payload:
                    break  # the page reloads mid-answer
        payloads: list[str] = []
        with client.stream("GET", f"{two}/api/chat/{request['id']}/stream") as resumed:
            assert resumed.status_code == 200
            for payload in frames(resumed.iter_lines()):
                payloads.append(payload)
                if FIRST[-1] in payload:
                    gate.touch()  # the replay reached the live end: now the worker goes on
        assert client.get(f"{two}/api/chat/{request['id']}/stream").status_code == 204
    check_answer(payloads, "".join(FIRST + REST))


REFUSED = [
    ("/api/chat/nope", body("hi"), 404, "Agent nope not found"),
    ("/api/chat/demo", {"id": "c", "messages": "hi"}, 400, "messages"),
    ("/api/chat/demo", {"id": "c", "messages": []}, 400, "the request has no message to answer"),
    (
        "/api/chat/demo",
        {"id": "c", "messages": [{"id": "s", "role": "system", "parts": [{"type": "text", "text": "x"}]}]},
        400,
        "system messages from the client are refused",
    ),
    ("/api/chat/demo", {**body("hi"), "id": "x" * 300}, 400, "expected an id of at most 256 characters"),
]


def test_a_refused_request_is_answered_by_the_server_and_never_enqueued(
    workers: Workers, redis_url: str
) -> None:
    with server(workers, redis_url) as base:
        for path, request_body, status, message in REFUSED:
            answer = httpx.post(f"{base}{path}", json=request_body, timeout=30)
            assert answer.status_code == status, (path, request_body)
            assert answer.headers["content-type"] == "application/json"
            assert message in answer.json()["error"]["message"]
    assert workflow_rows(workers.url) == []


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["serve", "--durable-db", "postgresql://x/y", "--stream-store", "memory"],
            "--durable-db needs --stream-store redis://",
        ),
        (
            ["worker", "--database-url", "sqlite:///x.db"],
            "nothing to run: name the TOOLS, or a Mastra with --app",
        ),
        (["worker", "--app", APP, "--database-url", "sqlite:///x.db"], "--app needs --stream-store redis://"),
        (
            ["worker", "--app", APP, "--stream-store", "memory", "--database-url", "sqlite:///x.db"],
            "--stream-store: expected a redis://host:port/db URL shared with the servers",
        ),
        (
            [
                "worker",
                "--app",
                "tests.durable._app:tools",
                "--stream-store",
                "redis://127.0.0.1:1/0",
                "--database-url",
                "x",
            ],
            "is a dict; expected a Mastra",
        ),
    ],
)
def test_command_line_mistakes(argv: list[str], message: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTSTREAM_")}
    env["PYTHONPATH"] = f"{ROOT / 'src'}:{ROOT}"
    result = subprocess.run(
        [sys.executable, "-m", "agentstream", *argv],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2, result.stderr
    assert message in result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


async def test_a_new_answer_for_the_chat_cancels_the_turn_running_on_a_worker(
    workers: Workers, redis_url: str
) -> None:
    chat_worker(workers, redis_url)
    first_request = body("Weather?")
    with server(workers, redis_url) as base, httpx.Client(timeout=60) as client:
        with client.stream("POST", f"{base}/api/chat/gated", json=first_request) as first:
            payloads: list[str] = []
            for payload in frames(first.iter_lines()):
                payloads.append(payload)
                if FIRST[-1] in payload:
                    # The gate stays shut: only the cancellation can end this answer.
                    second_request = body("What's the weather in Berlin?", first_request["id"])
                    second = client.post(f"{base}/api/chat/demo", json=second_request)
                    assert second.status_code == 200 and '"type":"finish"' in second.text
    kinds = [json.loads(p)["type"] for p in payloads[:-1]]
    assert payloads[-1] == "[DONE]" and "abort" in kinds
    assert not any(REST[0] in p for p in payloads)
    statuses = sorted(status for _, status, _, _ in workflow_rows(workers.url))
    assert statuses == ["CANCELLED", "SUCCESS"]


def test_a_turn_cancelled_before_any_worker_started_it_ends_its_stream(
    workers: Workers, redis_url: str
) -> None:
    """No worker runs while the first turn is queued, so it cannot start; a second answer for the
    chat cancels it, and the server ends its stream (the POST and a resume of it both end)."""
    first_request = body("Weather?")
    chat = first_request["id"]
    with server(workers, redis_url) as base, httpx.Client(timeout=60) as client:
        with (
            client.stream("POST", f"{base}/api/chat/gated", json=first_request) as first,
            client.stream("GET", f"{base}/api/chat/{chat}/stream") as resumed,
        ):
            assert first.status_code == resumed.status_code == 200  # both follow the queued turn
            with client.stream("POST", f"{base}/api/chat/demo", json=body("Berlin?", chat)) as second:
                assert second.status_code == 200
                first_payloads = list(frames(first.iter_lines()))
                resumed_payloads = list(frames(resumed.iter_lines()))
                chat_worker(workers, redis_url)  # only now: it takes the second turn alone
                second_payloads = list(frames(second.iter_lines()))
    expected = ['{"type":"start"}', '{"type":"abort"}', '{"type":"finish"}', "[DONE]"]
    assert [p.replace(" ", "") for p in first_payloads] == expected
    assert resumed_payloads == first_payloads
    kinds = [json.loads(p)["type"] for p in second_payloads[:-1]]
    assert kinds[0] == "start" and kinds[-1] == "finish" and "abort" not in kinds
    # The cancelled turn was taken back from the inbox: it never became a DBOS workflow.
    statuses = sorted(status for _, status, _, _ in workflow_rows(workers.url))
    assert statuses == ["SUCCESS"]
    with psycopg.connect(workers.url) as conn:
        assert conn.execute("SELECT count(*) FROM agentstream_durable_inbox").fetchone() == (0,)


async def test_a_stop_through_another_server_ends_the_answer_a_worker_is_writing(
    workers: Workers, redis_url: str
) -> None:
    chat_worker(workers, redis_url)
    request = body("Weather?")
    stream = f"/api/chat/{request['id']}/stream"
    with servers(workers, redis_url, 2) as [one, two], httpx.Client(timeout=60) as client:
        with client.stream("POST", f"{one}/api/chat/gated", json=request) as answer:
            payloads: list[str] = []
            for payload in frames(answer.iter_lines()):
                payloads.append(payload)
                if FIRST[-1] in payload:
                    # The gate stays shut: only the stop can end this answer.
                    stopped = client.delete(f"{two}{stream}")
                    assert stopped.status_code == 204, stopped.text
        assert client.get(f"{two}{stream}").status_code == 204  # nothing left to resume
    kinds = [json.loads(p)["type"] for p in payloads[:-1]]
    assert payloads[-1] == "[DONE]" and kinds[-2:] == ["abort", "finish"]
    assert not any(REST[0] in p for p in payloads)
    assert [status for _, status, _, _ in workflow_rows(workers.url)] == ["CANCELLED"]
    # The worker says so in one line, not as an error with a traceback (DBOS's own wording).
    log = workers.tmp / "worker-0.log"
    deadline = time.monotonic() + 30
    while "was cancelled; its run stopped" not in log.read_text():
        assert time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.05)
    assert "Traceback" not in log.read_text() and "ERROR" not in log.read_text()


async def test_the_request_context_travels_with_the_turn_to_the_worker(
    workers: Workers, redis_url: str
) -> None:
    """The server builds each principal's context; the worker's run reads the same context."""
    from starlette.applications import Starlette

    from agentstream.durable import DurableChat
    from agentstream.resumable import RedisStreamStore
    from agentstream.server import RequestGuard, chat_route
    from tests.durable._chat_app import mastra
    from tests.security._support import x_user

    tenants = {"ada": "acme", "bob": "globex"}

    def context(request: Any, principal: object) -> dict[str, Any]:
        return {"tenant": tenants[str(principal)], "user": str(principal)}

    worker = chat_worker(workers, redis_url)
    store = RedisStreamStore.from_url(redis_url, block_ms=100)
    runner = DurableChat(workers.url)
    app_mastra = mastra()
    route = chat_route(
        app_mastra,
        "/chat/{agent_id}",
        stream_store=store,
        runner=runner,
        request_context=context,
        guard=RequestGuard(auth=x_user),
    )
    transport = httpx.ASGITransport(app=Starlette(routes=[route]))
    answers: dict[str, str] = {}
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1", timeout=60) as client:
            for user in ("ada", "bob"):
                headers = {"x-user": user}
                async with client.stream("POST", "/chat/tenant", json=body("hi"), headers=headers) as answer:
                    assert answer.status_code == 200
                    payloads = [p async for p in _aframes(answer.aiter_lines())]
                chunks = [json.loads(p) for p in payloads[:-1]]
                answers[user] = "".join(c["delta"] for c in chunks if c["type"] == "text-delta")
    finally:
        runner.close()
        await store.aclose()
    assert answers == {"ada": "You serve acme for ada.", "bob": "You serve globex for bob."}
    rows = workflow_rows(workers.url)
    assert len(rows) == 2 and all(status == "SUCCESS" for _, status, _, _ in rows)
    # both ran in the worker process, from turns stored as JSON (the context with them)
    assert {executor.split(":")[1] for _, _, executor, _ in rows} == {str(worker.pid)}
    assert {serialization for _, _, _, serialization in rows} == {"portable_json"}


def test_a_context_that_is_not_json_cannot_travel_to_a_worker() -> None:
    from agentstream.server._route import _portable_context

    assert _portable_context({"tenant": "acme", "limits": {"rpm": 10}}) == {
        "tenant": "acme",
        "limits": {"rpm": 10},
    }
    with pytest.raises(TypeError, match=r"request_context\['since'\] is a datetime, not JSON"):
        import datetime

        _portable_context({"since": datetime.datetime.now()})


async def _aframes(lines: Any) -> Any:
    async for line in lines:
        if line.startswith("data: "):
            yield line.removeprefix("data: ")
            if line == "data: [DONE]":
                return

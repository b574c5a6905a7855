"""Connections cannot exhaust the server (issue 22, item 3): attacks on loopback against a real
``serving_config`` server process, bounded in count and time, with short limits set for the test.

* 1,100 idle sockets under ``ulimit -n 1024``: a legitimate chat still completes (the newcomer
  takes the place of the connection that waited longest for a request head);
* 300 slowloris connections (a header line every 0.4 s) are closed at the head deadline;
* 200 endless chunked bodies are closed at the body deadline (a 408), a fast one at once (413);
* every connection busy: a newcomer is a JSON 503;
* 300 authenticated bodies stalled just under 1 MiB: the server's RSS stays within 50 MiB of idle.

Each attack runs against both protocols `serving_config` may pick: httptools (the default where it
is installed) and h11.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentstream.server import ConnectionLimits
from agentstream.server._protocols import httptools_available
from tests.security._support import BODY

ROOT = Path(__file__).resolve().parents[2]
AUTH = b"authorization: Bearer t\r\n"
MiB = 1024 * 1024


_HTTP = ["h11"]  # the protocol of the test running (the ``http`` fixture)


@pytest.fixture(autouse=True, params=["httptools", "h11"])
def http(request: pytest.FixtureRequest) -> Iterator[str]:
    if request.param == "httptools" and not httptools_available():
        pytest.skip("httptools is not installed (the server extra installs it)")
    _HTTP[0] = request.param
    yield request.param


@contextlib.contextmanager
def serving(limits: dict[str, Any], *, nofile: int | None = None) -> Iterator[tuple[int, int]]:
    """A server process with ``limits`` on the ``http`` fixture's protocol; yields its port and
    pid, and stops it."""
    limits = {**limits, "http": _HTTP[0]}

    def limit_files() -> None:
        if nofile is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

    env = {**os.environ, "AGENTSTREAM_TEST_LIMITS": json.dumps(limits)}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT), env.get("PYTHONPATH", "")])
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.security._limits_server"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        preexec_fn=limit_files,  # the point: the server process's own open-file limit
        text=True,
    )
    try:
        assert process.stdout is not None
        port = int(process.stdout.readline())
        yield port, process.pid
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(autouse=True)
def enough_files() -> Iterator[None]:
    """The attacking side (this process) needs more than 1,100 sockets."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = min(hard, 4096)
    if wanted < 2500:
        pytest.skip(f"this test process may open {hard} files, the attacks need 2500")
    resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    yield
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


async def chat(port: int, timeout: float = 15) -> float:
    """A legitimate chat, from connect to ``[DONE]``; returns how long it took."""
    started = time.monotonic()
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=timeout) as client:
        r = await client.post("/api/chat", json=BODY, headers={"authorization": "Bearer t"})
    assert r.status_code == 200, r.text
    assert '"type":"finish"' in r.text and r.text.rstrip().endswith("data: [DONE]")
    return time.monotonic() - started


async def connect(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection("127.0.0.1", port)


async def closed_within(reader: asyncio.StreamReader, seconds: float) -> bytes | None:
    """What the server sent before closing, or ``None`` if it kept the connection ``seconds``."""
    received = b""
    try:
        async with asyncio.timeout(seconds):
            while chunk := await reader.read(65536):
                received += chunk
    except TimeoutError:
        return None
    except (ConnectionResetError, BrokenPipeError):
        pass
    return received


def close_all(writers: list[asyncio.StreamWriter]) -> None:
    for writer in writers:
        writer.transport.abort()


def vm_rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


async def test_a_chat_completes_past_1100_idle_sockets_under_ulimit_1024() -> None:
    # A long head deadline: it is the connection cap, not a timeout, that makes room.
    with serving({"header_timeout_s": 60}, nofile=1024) as (port, _pid):
        await chat(port)
        writers = []
        for _ in range(1100):
            _reader, writer = await connect(port)
            writers.append(writer)
        await asyncio.sleep(0.5)
        try:
            took = await chat(port, timeout=20)
        finally:
            close_all(writers)
        await chat(port)  # and the server is still well
    assert took < 10


async def test_slowloris_connections_are_closed_at_the_head_deadline_and_a_chat_completes() -> None:
    with serving({"header_timeout_s": 1.0}) as (port, _pid):
        streams = [await connect(port) for _ in range(300)]
        for _reader, writer in streams:
            writer.write(b"POST /api/chat HTTP/1.1\r\nhost: 127.0.0.1\r\n")

        async def trickle() -> None:
            for n in range(20):  # one header line each 0.4 s, for at most 8 s
                await asyncio.sleep(0.4)
                for _reader, writer in streams:
                    if not writer.is_closing():
                        with contextlib.suppress(ConnectionError):
                            writer.write(f"x-pad-{n}: y\r\n".encode())

        sender = asyncio.create_task(trickle())
        started = time.monotonic()
        try:
            took = await chat(port)
            answers = await asyncio.gather(*(closed_within(reader, 6) for reader, _ in streams))
        finally:
            sender.cancel()
            close_all([w for _, w in streams])
        elapsed = time.monotonic() - started
    assert all(answer is not None for answer in answers), "a slowloris connection was kept open"
    assert sum(answer.startswith(b"HTTP/1.1 408") for answer in answers if answer) >= 290
    assert elapsed < 6 and took < 5


async def test_endless_chunked_bodies_are_closed_at_the_body_deadline() -> None:
    head = b"POST /api/chat HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
    head += AUTH + b"transfer-encoding: chunked\r\n\r\n"
    with serving({"body_timeout_s": 1.5}) as (port, _pid):
        streams = [await connect(port) for _ in range(200)]
        for _reader, writer in streams:
            writer.write(head + b"1\r\n[\r\n")

        async def trickle() -> None:
            for _ in range(30):
                await asyncio.sleep(0.2)
                for _reader, writer in streams:
                    if not writer.is_closing():
                        with contextlib.suppress(ConnectionError):
                            writer.write(b"1\r\n \r\n")

        sender = asyncio.create_task(trickle())
        try:
            answers = await asyncio.gather(*(closed_within(reader, 6) for reader, _ in streams))
        finally:
            sender.cancel()
            close_all([w for _, w in streams])
        # A fast endless body: refused at max_body_bytes (413) and closed, not read on for nothing.
        reader, writer = await connect(port)
        writer.write(head)
        flood = asyncio.create_task(_flood(writer))
        fast = await closed_within(reader, 5)
        flood.cancel()
        writer.transport.abort()
        await chat(port)
    assert all(answer is not None for answer in answers), "an endless body was kept open"
    assert sum(answer.startswith(b"HTTP/1.1 408") for answer in answers if answer) >= 190
    assert fast is not None and fast.startswith(b"HTTP/1.1 413")


async def _flood(writer: asyncio.StreamWriter) -> None:
    chunk = b"4000\r\n" + b" " * 0x4000 + b"\r\n"
    with contextlib.suppress(ConnectionError):
        for _ in range(2000):  # at most 32 MiB
            writer.write(chunk)
            await writer.drain()


async def test_a_client_still_sending_reads_its_413_late() -> None:
    # The server stops reading a body it refused; closing with the rest unread would reset the
    # connection, and the client's kernel would drop the 413 it had not read yet.
    head = b"POST /api/chat HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
    head += AUTH + b"transfer-encoding: chunked\r\n\r\n"
    with serving({}) as (port, _pid):
        reader, writer = await connect(port)
        writer.write(head)
        flood = asyncio.create_task(_flood(writer))
        await asyncio.sleep(0.3)  # the 413 is sent meanwhile, and the client keeps sending
        answer = await closed_within(reader, 5)
        flood.cancel()
        writer.transport.abort()
    assert answer is not None and answer.startswith(b"HTTP/1.1 413"), answer


async def test_a_newcomer_when_every_connection_is_busy_is_a_json_503() -> None:
    head = b"POST /api/chat HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
    head += AUTH + b"content-length: 100\r\n\r\n{"
    with serving({"max_connections": 20, "body_timeout_s": 30}) as (port, _pid):
        busy = [await connect(port) for _ in range(20)]
        for _reader, writer in busy:
            writer.write(head)  # each one busy sending its body
        await asyncio.sleep(0.5)
        reader, writer = await connect(port)
        refused = await closed_within(reader, 5)
        writer.transport.abort()
        close_all([w for _, w in busy])
        await asyncio.sleep(0.3)
        await chat(port)  # room again once they are gone
    assert refused is not None and refused.startswith(b"HTTP/1.1 503")
    head_text, _, body = refused.partition(b"\r\n\r\n")
    assert b"retry-after: 1" in head_text
    assert "connection limit (20 connections" in json.loads(body)["error"]["message"]


async def test_an_idle_keep_alive_connection_is_closed_and_an_over_long_head_refused() -> None:
    with serving({"keep_alive_s": 0.5, "max_header_bytes": 4096}) as (port, _pid):
        reader, writer = await connect(port)
        writer.write(b"GET /api/agents HTTP/1.1\r\nhost: 127.0.0.1\r\n" + AUTH + b"\r\n")
        answer = await closed_within(reader, 3)
        writer.transport.abort()
        reader, writer = await connect(port)
        # A head still incomplete past max_header_bytes (what a server would have to buffer).
        writer.write(b"GET /api/agents HTTP/1.1\r\nhost: 127.0.0.1\r\nx-pad: " + b"y" * 8192)
        too_long = await closed_within(reader, 3)
        writer.transport.abort()
    assert answer is not None and answer.startswith(b"HTTP/1.1 200")
    assert too_long is not None and too_long.startswith(b"HTTP/1.1 400")


async def test_a_kept_alive_connection_idle_past_the_head_deadline_serves_its_next_request() -> None:
    # A busy client reads a response late and then reuses its connection at once: a head deadline
    # counted from the response's end closed it under that client's request (bench_cluster's
    # httpx.ReadError). Idle between requests is the keep-alive timeout's business alone.
    request = b"GET /api/agents HTTP/1.1\r\nhost: 127.0.0.1\r\n" + AUTH + b"\r\n"
    with serving({"header_timeout_s": 0.3, "keep_alive_s": 30}) as (port, _pid):
        reader, writer = await connect(port)
        writer.write(request)
        first = await reader.readuntil(b"\r\n\r\n")
        await reader.readexactly(int(first.lower().split(b"content-length: ")[1].split(b"\r\n")[0]))
        await asyncio.sleep(1.0)  # idle well past header_timeout_s, well within keep_alive_s
        writer.write(request)
        second = await reader.readuntil(b"\r\n\r\n")
        writer.transport.abort()
    assert first.startswith(b"HTTP/1.1 200") and second.startswith(b"HTTP/1.1 200")


async def test_pipelined_requests_are_answered_in_order_and_the_connection_stays_open() -> None:
    # llhttp parses a request sent behind one being answered at once (h11 only after the answer):
    # the second is queued, timed from its own start, and answered after the first.
    first = b"GET /api/agents HTTP/1.1\r\nhost: 127.0.0.1\r\n" + AUTH + b"\r\n"
    second = b"GET /api/chat/info HTTP/1.1\r\nhost: 127.0.0.1\r\n" + AUTH + b"\r\n"
    with serving({"header_timeout_s": 0.5, "keep_alive_s": 30}) as (port, _pid):
        reader, writer = await connect(port)
        writer.write(first + second)
        answers = []
        for _ in range(2):
            head = await reader.readuntil(b"\r\n\r\n")
            size = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
            answers.append((head, await reader.readexactly(size)))
        await asyncio.sleep(1.0)  # idle past header_timeout_s: kept alive, not timed out
        writer.write(second)
        third = await reader.readuntil(b"\r\n\r\n")
        writer.transport.abort()
    assert [head.split(b"\r\n")[0] for head, _ in answers] == [b"HTTP/1.1 200 OK"] * 2
    assert b'"echo"' in answers[0][1] and b'"agents"' in answers[1][1]
    assert third.startswith(b"HTTP/1.1 200")


def test_the_keep_alive_default_outlasts_httpx_s_own_idle_expiry() -> None:
    # httpx (the Python clients) drops an idle connection after 5 s; a server closing at the same
    # moment races its next request on that connection.
    assert ConnectionLimits().keep_alive_s > httpx.Limits().keepalive_expiry


async def test_rss_under_300_stalled_bodies_just_under_1_mib_stays_within_50_mib_of_idle() -> None:
    size = MiB - 1024
    head = b"POST /api/chat HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
    head += AUTH + f"content-length: {size}\r\n\r\n".encode()
    with serving({"body_timeout_s": 20}) as (port, pid):
        for _ in range(3):
            await chat(port)
        idle = vm_rss(pid)
        peak = idle
        streams = [await connect(port) for _ in range(300)]

        async def stall(writer: asyncio.StreamWriter) -> None:
            with contextlib.suppress(ConnectionError):
                writer.write(head)
                for _ in range(size // 65536):  # all but the last few KiB, then nothing
                    writer.write(b" " * 65536)
                    await writer.drain()

        senders = asyncio.gather(*(stall(w) for _, w in streams))
        deadline = time.monotonic() + 20
        while not senders.done() and time.monotonic() < deadline:
            peak = max(peak, vm_rss(pid))
            await asyncio.sleep(0.05)
        for _ in range(20):  # and while they stall
            peak = max(peak, vm_rss(pid))
            await asyncio.sleep(0.05)
        senders.cancel()
        close_all([w for _, w in streams])
        await chat(port)
    assert peak - idle < 50 * MiB, f"RSS grew by {(peak - idle) / MiB:.1f} MiB"


async def test_a_legitimate_body_near_the_size_limit_still_goes_through() -> None:
    """The read-ahead and budget limits slow no one down: a 900 KB chat body, ten at once."""
    body = {**BODY, "pad": " " * 900_000}
    with serving({}) as (port, _pid):
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=20) as client:
            answers = await asyncio.gather(
                *(
                    client.post("/api/chat", json=body, headers={"authorization": "Bearer t"})
                    for _ in range(10)
                )
            )
    assert [a.status_code for a in answers] == [200] * 10
    assert all(a.text.rstrip().endswith("data: [DONE]") for a in answers)

"""``agentstream serve``'s connection-limit flags: refused values are one line + exit 2, given
values are the limits the live server enforces."""

from __future__ import annotations

import signal
import socket
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from ._support import assert_one_line, clean_env
from .test_serve_cli import SCRIPT, _serving, project, serve

__all__ = ["project"]  # the fixture, shared with test_serve_cli


@pytest.mark.parametrize(
    ("args", "parts"),
    [
        (["--header-timeout", "0"], ["--header-timeout", "> 0", "'0'"]),
        (["--body-timeout", "soon"], ["--body-timeout", "seconds", "'soon'"]),
        (["--keep-alive", "nan"], ["--keep-alive", "'nan'"]),
        (["--graceful-shutdown", "-1"], ["--graceful-shutdown", "'-1'"]),
        (["--max-connections", "0"], ["--max-connections", ">= 1", "'0'"]),
        (["--max-header-bytes", "1.5"], ["--max-header-bytes", "whole number", "'1.5'"]),
        (["--max-body-bytes", "lots"], ["--max-body-bytes", "'lots'"]),
        (["--max-buffered-bytes", "100", "--max-body-bytes", "1000"], ["--max-buffered-bytes 100", "1000"]),
        (["--max-connections", "100000000"], ["--max-connections 100000000", "ulimit -n"]),
    ],
)
def test_a_bad_limit_is_one_line_and_exit_2(project: Path, args: list[str], parts: list[str]) -> None:
    proc = serve(project, "--app", "myproject:helper", "--port", "0", *args)
    assert_one_line(proc, "serve", 2, *parts)


def test_the_flags_are_the_limits_the_server_enforces(project: Path) -> None:
    proc, url = _serving(
        project,
        "--app",
        "myproject:helper",
        "--header-timeout",
        "0.5",
        "--max-body-bytes",
        "2000",
        "--max-buffered-bytes",
        "4000",
    )
    try:
        address = urlsplit(url)
        with socket.create_connection((address.hostname, address.port), timeout=20) as slow:
            slow.sendall(b"GET /api/agents HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # never finishes its head
            answer = slow.recv(4096)
        assert answer.startswith(b"HTTP/1.1 408 "), answer
        assert b"within 0.5 s" in answer, answer
        big = httpx.post(
            f"{url}api/chat",
            content=b'{"messages": []}' + b" " * 3000,
            headers={"content-type": "application/json"},
            timeout=30,
        )
        assert big.status_code == 413, big.text
        assert "2000 bytes" in big.json()["error"]["message"]
        assert httpx.get(f"{url}api/agents", timeout=30).status_code == 200
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert "Traceback" not in err


def test_max_connections_is_the_cap(project: Path) -> None:
    """``--max-connections 4``: a fifth connection while four are busy reading bodies gets the 503."""
    proc, url = _serving(
        project, "--app", "myproject:helper", "--max-connections", "4", "--body-timeout", "60"
    )
    held: list[socket.socket] = []
    try:
        address = urlsplit(url)
        for _ in range(4):  # busy: a head read by the server, the body still coming
            sock = socket.create_connection((address.hostname, address.port), timeout=20)
            sock.sendall(
                b"POST /api/chat HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\n"
                b"content-length: 100\r\nexpect: 100-continue\r\n\r\n"
            )
            # The 100 says the app reads the body: the connection is busy, not waiting for a head
            # (one still waiting would be evicted for the newcomer, by design).
            assert sock.recv(4096).startswith(b"HTTP/1.1 100 ")
            sock.sendall(b"{")
            held.append(sock)
        refused = httpx.get(f"{url}api/agents", timeout=30)
        assert refused.status_code == 503, refused.text
        assert "connection limit (4 connections" in refused.json()["error"]["message"]
    finally:
        for sock in held:
            sock.close()
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)


def test_serve_help_lists_the_limits() -> None:
    out = subprocess.run(
        [str(SCRIPT), "serve", "--help"], capture_output=True, text=True, env=clean_env(), timeout=60
    )
    assert out.returncode == 0
    for flag in (
        "--header-timeout",
        "--body-timeout",
        "--keep-alive",
        "--max-connections",
        "--max-buffered-bytes",
    ):
        assert flag in out.stdout

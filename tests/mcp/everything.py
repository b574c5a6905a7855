"""The reference server ``@modelcontextprotocol/server-everything`` (installed by scripts/mcp.sh),
launched the way a recording's ``server.launch`` says: over stdio by the client, or over
streamable HTTP as a process of its own on a free loopback port."""

from __future__ import annotations

import os
import re
import shlex
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
CACHE = REPO / ".cache" / "mcp"
ENTRY = CACHE / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
RECORDED_LAUNCH = (
    "node --import <oracle>/mcp-server-preload.mjs "
    "<oracle>/node_modules/@modelcontextprotocol/server-everything/dist/index.js stdio"
)


def ensure_installed() -> None:
    """Install the server (idempotent, quick when present); the test fails if it cannot be."""
    if ENTRY.exists() and (CACHE / "mcp-server-preload.mjs").exists():
        return
    done = subprocess.run(["bash", str(REPO / "scripts" / "mcp.sh")], capture_output=True, text=True)
    if done.returncode != 0 or not ENTRY.exists():
        message = f"scripts/mcp.sh failed: {done.stderr[-2000:]}"
        pytest.fail(message, pytrace=False)  # a missing service fails the run, never skips


def parse_launch(launch: str) -> tuple[list[str], dict[str, str]]:
    """``"node ... stdio (started by MCPClient)"`` → argv with ``<oracle>`` resolved, and the
    ``KEY=value`` settings of the parenthesis (``PORT=<port>``)."""
    command, _, note = launch.partition(" (")
    argv = [part.replace("<oracle>", str(CACHE)) for part in shlex.split(command)]
    settings = dict(re.findall(r"([A-Z_]+)=(\S+?)[;)]", note))
    return argv, settings


def stdio_config(launch: str = RECORDED_LAUNCH) -> dict[str, Any]:
    argv, _ = parse_launch(launch)
    return {"command": argv[0], "args": argv[1:], "env": {"TZ": "UTC"}}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def http_server(launch: str, port: int | None = None) -> Iterator[str]:
    """Run the server over streamable HTTP (on ``port``, else a free one); yields its URL; the
    process is killed on exit."""
    argv, settings = parse_launch(launch)
    port = port or free_port()
    env = {"PATH": os.environ.get("PATH", ""), "TZ": "UTC"}
    env.update({k: v.replace("<port>", str(port)) for k, v in settings.items()})
    env.setdefault("PORT", str(port))
    process = subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                if process.poll() is not None:
                    output = process.stdout.read() if process.stdout else ""
                    raise RuntimeError(f"server-everything exited: {output}") from None
                time.sleep(0.1)
        else:
            raise RuntimeError("server-everything did not listen within 30 s")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.kill()
        process.wait(timeout=10)
        if process.stdout:
            process.stdout.close()

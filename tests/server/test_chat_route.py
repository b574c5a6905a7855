"""``handle_chat_stream`` and ``chat_route`` with a real Agent, a scripted model and the real clients."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import subprocess
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette

from agentstream._abort import AbortController
from agentstream.agent import Agent
from agentstream.ai_sdk import ChatRequestError, handle_chat_stream
from agentstream.server import chat_route
from agentstream.server._route import SSEStreamResponse
from agentstream.testing import ScriptedModel
from tests.ai_sdk._support import require_clients

try:
    from agentstream import Mastra  # type: ignore[attr-defined]
except ImportError:
    from agentstream._mastra import Mastra

USAGE = {"inputTokens": 3, "outputTokens": 2, "totalTokens": 5}


def text_step(*deltas: str, wait: bool = False) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = [
        {"type": "stream-start", "warnings": []},
        {"type": "text-start", "id": "t1"},
    ]
    parts += [{"type": "text-delta", "id": "t1", "delta": d} for d in deltas]
    if wait:
        parts.append({"$waitForAbort": True})
    parts += [{"type": "text-end", "id": "t1"}, {"type": "finish", "finishReason": "stop", "usage": USAGE}]
    return parts


def mastra_with(model: Any, agent_id: str = "weather") -> Mastra:
    return Mastra(agents={agent_id: Agent(id=agent_id, instructions="Be brief.", model=model)})


def body(*messages: dict[str, Any], trigger: str = "submit-message") -> dict[str, Any]:
    return {"id": "chat-1", "messages": list(messages), "trigger": trigger}


USER = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Weather in Berlin?"}]}


async def test_handle_chat_stream() -> None:
    model = ScriptedModel([text_step("Sunny ", "today.")])
    stream = await handle_chat_stream(mastra=mastra_with(model), agent_id="weather", params=body(USER))
    parts = [p async for p in stream]
    assert [p["type"] for p in parts] == [
        "start",
        "start-step",
        "text-start",
        "text-delta",
        "text-delta",
        "text-end",
        "finish-step",
        "finish",
    ]
    assert parts[-1] == {"type": "finish", "finishReason": "stop"}
    prompt = model.calls[0].prompt
    assert prompt[0] == {"role": "system", "content": "Be brief."}
    assert prompt[1]["role"] == "user" and prompt[1]["content"][0]["text"] == "Weather in Berlin?"


async def test_continuation_and_regenerate() -> None:
    assistant = {"id": "a1", "role": "assistant", "parts": [{"type": "text", "text": "Old answer"}]}
    model = ScriptedModel([text_step("x"), text_step("y")])
    mastra = mastra_with(model)
    stream = await handle_chat_stream(mastra=mastra, agent_id="weather", params=body(USER, assistant))
    parts = [p async for p in stream]
    assert parts[0] == {"type": "start", "messageId": "a1"}
    assert model.calls[0].prompt[-1]["role"] == "assistant"
    stream = await handle_chat_stream(
        mastra=mastra, agent_id="weather", params=body(USER, assistant, trigger="regenerate-message")
    )
    parts = [p async for p in stream]
    assert parts[0]["messageId"] != "a1"
    assert model.calls[1].prompt[-1]["role"] == "user"


async def test_request_errors() -> None:
    mastra = mastra_with(ScriptedModel([]))
    with pytest.raises(ChatRequestError) as info:
        await handle_chat_stream(mastra=mastra, agent_id="nope", params=body(USER))
    assert info.value.status_code == 404 and "Agent nope not found" in str(info.value)
    bad = {"id": "u", "role": "user", "parts": [{"type": "foo"}]}
    with pytest.raises(ChatRequestError) as info:
        await handle_chat_stream(mastra=mastra, agent_id="weather", params=body(USER, bad))
    assert info.value.status_code == 400
    assert str(info.value).startswith("messages[1].parts[0].type: expected one of")
    with pytest.raises(ChatRequestError, match="Messages must be an array"):
        await handle_chat_stream(mastra=mastra, agent_id="weather", params={"messages": "hi"})


def _over(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver")


async def test_route_http_errors_are_400_json() -> None:
    app = Starlette(routes=[chat_route(mastra_with(ScriptedModel([])))])
    client = _over(app)
    r = await client.post("/chat/weather", content=b"{", headers={"content-type": "application/json"})
    assert r.status_code == 400 and "not valid JSON" in r.json()["error"]["message"]
    r = await client.post("/chat/weather", json=body({"id": "u", "role": "robot", "parts": []}))
    assert r.status_code == 400
    assert r.json()["error"]["path"] == "messages[0].role"
    r = await client.post("/chat/ghost", json=body(USER))
    assert r.status_code == 404 and r.json() == {
        "error": {"name": "ChatRequestError", "message": "Agent ghost not found"}
    }


async def test_route_streams_sse() -> None:
    app = Starlette(routes=[chat_route(mastra_with(ScriptedModel([text_step("Hi")])))])
    r = await _over(app).post("/chat/weather", json=body(USER))
    assert r.status_code == 200
    assert r.headers["content-type"] == "text/event-stream"
    assert r.headers["x-vercel-ai-ui-message-stream"] == "v1"
    assert r.text.endswith("data: [DONE]\n\n")
    assert '"delta":"Hi"' in r.text


class _BlockForbidden:
    """An output-stream processor that blocks the answer at the delta holding "forbidden"."""

    id = "banned-words"

    async def process_output_stream(self, *, part: Any, abort: Any, **_: Any) -> Any:
        if getattr(part.payload, "text", None) and "forbidden" in part.payload.text:
            abort("Banned word detected")
        return part


async def test_route_closes_the_text_of_a_blocked_answer() -> None:
    """Over HTTP a tripwire-blocked answer still ends its text part (``text-end`` before
    ``data-tripwire``): every ``text-start`` of the SSE body is closed, then ``finish``."""
    model = ScriptedModel([text_step("Paris is sunny, ", "forbidden words", "never sent")])
    agent = Agent(id="weather", model=model, output_processors=[_BlockForbidden()])
    app = Starlette(routes=[chat_route(Mastra(agents={"weather": agent}))])
    r = await _over(app).post("/chat/weather", json=body(USER))
    assert r.status_code == 200
    frames = [line[len("data: ") :] for line in r.text.split("\n\n") if line.startswith("data: {")]
    parts = [json.loads(frame) for frame in frames]
    kinds = [p["type"] for p in parts]
    assert kinds[-5:] == ["text-start", "text-delta", "text-end", "data-tripwire", "finish"]
    assert [p["id"] for p in parts if p["type"] == "text-start"] == [
        p["id"] for p in parts if p["type"] == "text-end"
    ]
    assert parts[-2]["data"]["reason"] == "Banned word detected"
    assert "never sent" not in r.text and r.text.endswith("data: [DONE]\n\n")


async def test_fastapi_style_mount() -> None:
    import fastapi

    app = fastapi.FastAPI()
    app.router.routes.append(
        chat_route(mastra_with(ScriptedModel([text_step("Hi")])), "/api/chat", agent="weather")
    )
    r = await _over(app).post("/api/chat", json=body(USER))
    assert r.status_code == 200 and r.text.endswith("data: [DONE]\n\n")


def test_heartbeat_validation() -> None:
    mastra = mastra_with(ScriptedModel([]))
    for bad in (float("nan"), float("inf"), 2_147_483_648):
        with pytest.raises(ValueError):
            chat_route(mastra, heartbeat_ms=bad)
    chat_route(mastra, heartbeat_ms=0)
    chat_route(mastra, heartbeat_ms=-5)


async def _slow() -> AsyncIterator[dict[str, Any]]:
    yield {"type": "start", "messageId": "m1"}
    await asyncio.sleep(0.12)
    yield {"type": "finish"}


async def _call(response: SSEStreamResponse, *, disconnect_after: int | None = None) -> list[bytes]:
    sent: list[bytes] = []
    bodies = 0
    gate = asyncio.Event()

    async def receive() -> dict[str, Any]:
        await gate.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        nonlocal bodies
        if message["type"] == "http.response.body":
            sent.append(message["body"])
            bodies += 1
            if disconnect_after is not None and bodies >= disconnect_after:
                gate.set()

    await response({"type": "http"}, receive, send)
    return sent


@pytest.mark.looptime
async def test_heartbeat_frames() -> None:
    sent = await _call(SSEStreamResponse(_slow(), heartbeat_ms=30))
    assert sent[0] == b'data: {"type":"start","messageId":"m1"}\n\n'
    assert b": ping\n\n" in sent[1:-2]
    assert sent[-2:] == [b"data: [DONE]\n\n", b""]
    sent = await _call(SSEStreamResponse(_slow(), heartbeat_ms=0))
    assert b": ping\n\n" not in sent


@pytest.mark.looptime
async def test_no_ping_while_frames_flow_and_never_two_sends_at_once() -> None:
    async def frames() -> AsyncIterator[dict[str, Any]]:
        for i in range(50):
            yield {"type": "text-delta", "id": "t", "delta": str(i)}

    sent = await _call(SSEStreamResponse(frames(), heartbeat_ms=60_000))
    assert b": ping\n\n" not in sent and len(sent) == 52

    # A slow client: one write blocks well past the 10 ms interval. The heartbeat must not write
    # while it is blocked (ASGI sends are not concurrent-safe), and pings resume once idle.
    in_send = False
    bodies: list[bytes] = []

    async def send(message: dict[str, Any]) -> None:
        nonlocal in_send
        assert not in_send, "two sends at once"
        in_send = True
        try:
            if message.get("body") == b'data: {"type":"slow"}\n\n':
                await asyncio.sleep(0.1)
            bodies.append(message.get("body", b""))
        finally:
            in_send = False

    async def receive() -> dict[str, Any]:
        await asyncio.Event().wait()
        return {"type": "http.disconnect"}

    async def slow_then_idle() -> AsyncIterator[dict[str, Any]]:
        yield {"type": "slow"}
        await asyncio.sleep(0.1)
        yield {"type": "done"}

    await SSEStreamResponse(slow_then_idle(), heartbeat_ms=10)({"type": "http"}, receive, send)
    slow = bodies.index(b'data: {"type":"slow"}\n\n')
    assert b": ping\n\n" in bodies[slow:]
    assert bodies[-2:] == [b"data: [DONE]\n\n", b""]


@pytest.mark.parametrize("heartbeat_ms", [0, 10])
async def test_disconnect_aborts_the_run_and_leaves_no_task(heartbeat_ms: int) -> None:
    model = ScriptedModel([text_step("one ", wait=True)])
    mastra = mastra_with(model)
    controller = AbortController()
    stream = await handle_chat_stream(
        mastra=mastra, agent_id="weather", params=body(USER), abort_signal=controller.signal
    )
    before = asyncio.all_tasks()
    # The client disconnects right after the first text-delta frame (4th body message).
    sent = await asyncio.wait_for(
        _call(
            SSEStreamResponse(stream, controller=controller, heartbeat_ms=heartbeat_ms), disconnect_after=4
        ),
        5,
    )
    assert b'"delta":"one "' in b"".join(sent)
    assert controller.signal.aborted
    assert model.calls[0].options["abort_signal"].aborted
    await asyncio.sleep(0)
    assert asyncio.all_tasks() <= before


# --- live server + the real AI SDK clients ------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def serve(model: ScriptedModel) -> Iterator[str]:
    import uvicorn

    app = Starlette(routes=[chat_route(mastra_with(model), "/api/chat", agent="weather", heartbeat_ms=50)])
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.time() + 10
    while not server.started and time.time() < deadline:
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}/api/chat"
    finally:
        server.should_exit = True
        thread.join(5)


@pytest.fixture
def live_server() -> Iterator[tuple[str, ScriptedModel]]:
    model = ScriptedModel([text_step("Sunny ", "in ", "Berlin.")])
    with serve(model) as url:
        yield url, model


@pytest.mark.parametrize("client", ["v7", "v6", "v5", "v6-strict"])
def test_real_clients_against_live_route(live_server: tuple[str, ScriptedModel], client: str) -> None:
    clients = require_clients()
    url, _ = live_server
    result = subprocess.run(
        ["node", str(clients / "node-client.mjs"), url, "--prompt", "Weather?", "--ai", client, "--strict"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=clients,
    )
    report = json.loads(result.stdout)
    assert result.returncode == 0, (result.stderr, report["error"], report["checks"])
    assert report["assistantText"] == "Sunny in Berlin."
    assert report["status"] == "ready"


def test_live_disconnect_aborts() -> None:
    model = ScriptedModel([text_step("one ", wait=True)])
    with serve(model) as url:
        with httpx.Client(timeout=10) as client, client.stream("POST", url, json=body(USER)) as r:
            for line in r.iter_lines():
                if "one " in line:
                    break
        deadline = time.time() + 5
        while time.time() < deadline and not model.calls[0].options["abort_signal"].aborted:
            time.sleep(0.02)
        assert model.calls[0].options["abort_signal"].aborted


@pytest.mark.parametrize("client", ["v7", "v6", "v5", "v6-strict"])
def test_real_clients_ignore_heartbeats(client: str) -> None:
    from tests.ai_sdk._support import replay

    frames = [
        b'data: {"type":"start","messageId":"m1"}\n\n',
        b": ping\n\n",
        b'data: {"type":"start-step"}\n\n',
        b'data: {"type":"text-start","id":"t"}\n\n',
        b": ping\n\n",
        b'data: {"type":"text-delta","id":"t","delta":"Hi"}\n\n',
        b'data: {"type":"text-end","id":"t"}\n\n',
        b'data: {"type":"finish-step"}\n\n',
        b": ping\n\n",
        b'data: {"type":"finish","finishReason":"stop"}\n\n',
        b"data: [DONE]\n\n",
    ]
    code, report = replay(b"".join(frames), client, strict=True)
    assert code == 0, report["error"]
    assert report["assistantMessage"]["parts"][-1] == {"type": "text", "text": "Hi", "state": "done"}

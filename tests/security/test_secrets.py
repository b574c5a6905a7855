"""Secrets never reach a client or a model: attacks through a real provider endpoint and chat_route.

A loopback "provider" echoes the API key back in every spelling an error body can take; tools
raise with keys in their messages. The SSE bytes the client receives, and the request bodies the
model receives, are searched for the key in each spelling (and for a prefix long enough to matter).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import quote, quote_plus

import httpx
import pytest
from starlette.applications import Starlette

from agentstream import Agent, tool
from agentstream._mastra import Mastra
from agentstream.chunks import chunk_to_dict
from agentstream.models import OpenAIChatModel
from agentstream.server import chat_route
from tests.models.conftest import ReplayServer, Reply

# A key whose JSON and URL spellings differ from the raw one ("/" → "\/", "+" "=" "&" → %XX).
KEY = "sk-proj/ATTACK+key=0123456789&abcdef"
ENV_KEY = "wx-live-98765432109876543210"
RUN_ID = "run-attack-1"
USER = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Weather in Berlin?"}]}
TOOL_CALL = (
    'data: {"id":"c1","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":'
    '[{"index":0,"id":"call-1","type":"function","function":{"name":"weather","arguments":"{\\"city\\":'
    '\\"Berlin\\"}"}}]},"finish_reason":null}]}\n\n'
    'data: {"id":"c1","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}'
    "\n\ndata: [DONE]\n\n"
)
ANSWER = (
    'data: {"id":"c2","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Sorry."},'
    '"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
)


def spellings(secret: str) -> list[str]:
    json_escaped = json.dumps(secret)[1:-1]
    return [
        secret,
        json_escaped,
        json_escaped.replace("/", "\\/"),
        json.dumps(json_escaped.replace("/", "\\/"))[1:-1],  # quoted once more inside JSON
        quote(secret, safe=""),
        quote_plus(secret),
        re.sub("%[0-9A-F]{2}", lambda m: m.group(0).lower(), quote(secret, safe="")),  # %2f
        secret[:12],  # what a length limit cutting the key in half would leave
    ]


def assert_absent(secret: str, data: bytes | str, where: str) -> None:
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    for form in spellings(secret):
        assert form not in text, f"{form!r} (a spelling of the key) is in {where}"


@pytest.fixture
async def provider() -> AsyncIterator[ReplayServer]:
    srv = ReplayServer()
    await srv.start()
    try:
        yield srv
    finally:
        await srv.stop()


async def chat(agent: Agent, **route: Any) -> tuple[int, bytes]:
    app = Starlette(routes=[chat_route(Mastra(agents={agent.id: agent}), **route)])
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://testserver"
    ) as client:
        response = await client.post(
            f"/chat/{agent.id}",
            json={"id": "chat-1", "messages": [USER], "trigger": "submit-message", "runId": RUN_ID},
        )
    return response.status_code, response.content


def sse_parts(raw: bytes) -> list[dict[str, Any]]:
    events = [
        block.removeprefix("data: ") for block in raw.decode().split("\n\n") if block.startswith("data: ")
    ]
    return [json.loads(e) for e in events if e != "[DONE]"]


def openai(provider: ReplayServer) -> OpenAIChatModel:
    sleeps: list[float] = []

    async def no_sleep(delay: float) -> None:
        sleeps.append(delay)

    return OpenAIChatModel("gpt-4o", base_url=provider.url + "/v1", api_key=KEY, sleep=no_sleep)


async def test_401_echoing_the_key_in_every_spelling(
    provider: ReplayServer, caplog: pytest.LogCaptureFixture
) -> None:
    escaped = json.dumps(KEY)[1:-1].replace("/", "\\/")  # as PHP and some proxies write JSON
    body = (
        '{"error": {"message": "Incorrect API key provided: '
        + escaped
        + ". Retry with ?key="
        + quote(KEY, safe="")
        + '", "type": "invalid_request_error", "param": "'
        + escaped
        + '",'
        ' "code": "invalid_api_key"}, "echo": "' + KEY + '"}'
    )
    provider.replies.append(
        Reply(status=401, content_type="application/json", body=body, headers={"x-request-id": "req-7f3a"})
    )
    agent = Agent(id="weather", instructions="Be brief.", model=openai(provider))
    with caplog.at_level(logging.INFO, logger="agentstream"):
        status, raw = await chat(agent)

    assert status == 200
    assert_absent(KEY, raw, "the SSE body")
    [error] = [p for p in sse_parts(raw) if p["type"] == "error"]
    assert error["errorText"] == "openai (status 401): Incorrect API key provided: ***. Retry with ?key=***"
    text = raw.decode()
    for upstream in (
        provider.url,
        "/v1/chat/completions",
        "req-7f3a",
        "invalid_request_error",
        "responseBody",
    ):
        assert upstream not in text  # no URL, no headers, no body
    assert KEY in provider.received[0].headers["authorization"]  # the key itself was really sent

    # The server log has what the client does not: run id, URL, status, headers and body, redacted.
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert_absent(KEY, logged, "the server log")
    [record] = [r for r in caplog.records if r.getMessage().startswith(f"run {RUN_ID} failed")]
    message = record.getMessage()
    assert record.levelno == logging.ERROR and record.name.startswith("agentstream")
    assert provider.url + "/v1/chat/completions" in message and "status: 401" in message
    assert "req-7f3a" in message and "invalid_request_error" in message
    assert len(provider.received) == 1  # a 401 is not retried


async def test_long_non_json_body_is_redacted_before_it_is_cut(provider: ReplayServer) -> None:
    # 490 characters, then the key: a 500-character cut would leave its first 10 characters.
    page = "<html>" + "x" * 484 + KEY + "y" * 200 + "</html>"
    provider.replies.append(Reply(status=401, content_type="text/html", body=page))
    agent = Agent(id="weather", instructions="Be brief.", model=openai(provider))
    _, raw = await chat(agent)
    assert_absent(KEY, raw, "the SSE body")
    assert KEY[:10] not in raw.decode()
    [error] = [p for p in sse_parts(raw) if p["type"] == "error"]
    assert error["errorText"].startswith("openai (status 401): <html>xxx")
    assert "***" in error["errorText"]


async def test_a_tool_raising_with_secrets_reaches_neither_client_nor_model(
    provider: ReplayServer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("WEATHER_API_KEY", ENV_KEY)  # a tool's own key, configured in the environment

    @tool
    async def weather(city: str) -> dict[str, Any]:
        """Current weather for a city."""
        raise RuntimeError(
            f"GET https://wx.example/v1?city={city}&appid={quote(ENV_KEY)} failed; "
            f"fallback provider rejected {json.dumps(KEY)}"
        )

    provider.replies += [Reply(body=TOOL_CALL), Reply(body=ANSWER)]
    agent = Agent(id="weather", instructions="Be brief.", model=openai(provider), tools=[weather])
    with caplog.at_level(logging.WARNING, logger="agentstream"):
        _, raw = await chat(agent)

    for secret in (KEY, ENV_KEY):
        assert_absent(secret, raw, "the SSE body")
        # what the model received: the second request carries the tool result
        assert_absent(secret, json.dumps(provider.received[1].body), "the model's prompt")
        assert_absent(secret, "\n".join(r.getMessage() for r in caplog.records), "the server log")
    [tool_error] = [p for p in sse_parts(raw) if p["type"] == "tool-output-error"]
    assert tool_error["errorText"] == (
        'RuntimeError: GET https://wx.example/v1?city=Berlin&appid=*** failed; fallback provider rejected "***"'
    )
    [result] = [m for m in provider.received[1].body["messages"] if m["role"] == "tool"]
    assert result["content"] == tool_error["errorText"].removeprefix("RuntimeError: ")
    assert any(
        r.getMessage().startswith(f"run {RUN_ID}: tool weather failed") and "Traceback" in r.getMessage()
        for r in caplog.records
    )


async def test_on_tool_error_masks_what_client_and_model_see(provider: ReplayServer) -> None:
    @tool
    async def weather(city: str) -> dict[str, Any]:
        """Current weather for a city."""
        raise PermissionError(f"db password hunter2-is-not-registered for {city}")

    provider.replies += [Reply(body=TOOL_CALL), Reply(body=ANSWER)]
    agent = Agent(
        id="weather",
        instructions="Be brief.",
        model=openai(provider),
        tools=[weather],
        default_options={"on_tool_error": lambda e: f"weather is unavailable ({type(e).__name__})"},
    )
    _, raw = await chat(agent)
    assert b"hunter2" not in raw and "hunter2" not in json.dumps(provider.received[1].body)
    [tool_error] = [p for p in sse_parts(raw) if p["type"] == "tool-output-error"]
    assert tool_error["errorText"] == "Error: weather is unavailable (PermissionError)"
    [result] = [m for m in provider.received[1].body["messages"] if m["role"] == "tool"]
    assert result["content"] == "weather is unavailable (PermissionError)"


async def test_a_custom_client_on_error_still_gets_a_redacted_provider_error(provider: ReplayServer) -> None:
    provider.replies.append(
        Reply(
            status=403,
            content_type="application/json",
            body=json.dumps({"error": {"message": f"bad {KEY}"}}).replace("/", "\\/"),
        )
    )
    seen: list[Any] = []

    def on_error(error: Any) -> str:
        seen.append(error)
        return f"{error} | {error.response_body} | {error.url}"  # an app that shows too much

    agent = Agent(id="weather", instructions="Be brief.", model=openai(provider))
    _, raw = await chat(agent, on_error=on_error)
    assert_absent(KEY, raw, "the SSE body")
    assert seen and "***" in seen[0].response_body


# --- the redaction primitives -------------------------------------------------------------------


def test_redact_covers_every_spelling_and_runs_before_the_cut() -> None:
    from agentstream._secrets import redact, register_secret, shorten

    register_secret(KEY)
    for form in spellings(KEY)[:-1]:
        assert redact(f"<{form}>") == "<***>"
    assert shorten("x" * 490 + KEY, 500) == "x" * 490 + "***"
    register_secret("short")  # placeholders such as "ollama" or "none" are not secrets
    assert redact("a short text") == "a short text"


def test_safe_url_drops_credentials() -> None:
    from agentstream._secrets import safe_url

    url = f"https://user:{ENV_KEY}@llm.internal/v1/chat?api-key={ENV_KEY}&api-version=2024-06&token=abc"
    assert safe_url(url) == "https://llm.internal/v1/chat?api-key=***&api-version=2024-06&token=***"


# --- the real server: what the browser gets vs. what the operator's log gets ---------------------

APP_MODULE = """
import os
from agentstream import Agent, Mastra
from agentstream.models import OpenAIChatModel

model = OpenAIChatModel("gpt-4o", base_url=os.environ["PROVIDER_URL"] + "/v1", api_key=os.environ["LEAKY_KEY"])
mastra = Mastra(agents={"weather": Agent(id="weather", instructions="Be brief.", model=model)})
"""


async def test_serve_logs_the_upstream_error_and_sends_the_client_one_line(
    provider: ReplayServer, tmp_path: Any
) -> None:
    import asyncio
    import os
    import socket
    import sys

    escaped = json.dumps(KEY)[1:-1].replace("/", "\\/")
    provider.replies.append(
        Reply(
            status=401,
            content_type="application/json",
            body='{"error": {"message": "Incorrect API key provided: ' + escaped + '"}}',
        )
    )
    (tmp_path / "leaky_app.py").write_text(APP_MODULE, encoding="utf-8")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "PROVIDER_URL": provider.url, "LEAKY_KEY": KEY}
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "agentstream",
        "serve",
        "--app",
        "leaky_app:mastra",
        "--port",
        str(port),
        "--no-smooth",
        env=env,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
            for _ in range(300):  # wait for the server to listen (no timing asserted)
                try:
                    await client.get("/api/agents")
                    break
                except httpx.TransportError:
                    await asyncio.sleep(0.05)
            response = await client.post(
                "/api/chat/weather",
                json={"id": "chat-1", "messages": [USER], "trigger": "submit-message", "runId": RUN_ID},
            )
    finally:
        proc.terminate()
        _, stderr = await asyncio.wait_for(proc.communicate(), 30)
    log = stderr.decode()
    assert_absent(KEY, response.content, "the SSE body")
    assert_absent(KEY, log, "the server's stderr")
    [error] = [p for p in sse_parts(response.content) if p["type"] == "error"]
    assert error["errorText"] == "openai (status 401): Incorrect API key provided: ***"
    assert provider.url not in response.text
    assert f"ERROR:  agentstream.runs: run {RUN_ID} failed" in log
    assert f"url: {provider.url}/v1/chat/completions" in log and "status: 401" in log
    assert "response body: " in log and "***" in log


async def test_a_background_tool_raising_with_a_secret_reaches_neither_client_nor_model(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from agentstream.testing import ScriptedModel
    from agentstream.tools import Tool, ToolContext
    from tests.background.test_public_api import call, text

    monkeypatch.setenv("WEATHER_API_KEY", ENV_KEY)

    async def leaky(args: dict[str, Any], ctx: ToolContext) -> Any:
        raise RuntimeError(f"upstream refused key {ENV_KEY} for {args['q']}")

    schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    model = ScriptedModel([call("c1", "x"), text("Started."), text("It failed.")])
    leaky_tool = Tool(id="lookup", description="d", input_schema=schema, execute=leaky, background=True)
    agent = Agent(id="a", model=model, tools=[leaky_tool])
    caplog.set_level(logging.WARNING, logger="agentstream.background")
    async with Mastra(agents={"a": agent}, background_tasks=True):
        output = agent.stream("go", until_idle=True)
        chunks = [c async for c in output.full_stream]
    failed = [c for c in chunks if c.type == "background-task-failed"]
    assert failed, [c.type for c in chunks]
    assert "upstream refused key ***" in json.dumps(failed[0].payload.error)
    streamed = json.dumps([chunk_to_dict(c) for c in chunks])
    for spelling in spellings(ENV_KEY):
        assert_absent(spelling, streamed, "the stream")
        assert_absent(spelling, json.dumps([c.prompt for c in model.calls]), "the model's prompts")
    assert "upstream refused key ***" in caplog.text  # logged on the server, redacted too
    assert_absent(ENV_KEY, caplog.text, "the server log")

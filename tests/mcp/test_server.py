"""`MCPServer` driven by the official Python SDK client, over real HTTP on loopback and over stdio
(``agentstream mcp serve`` as a subprocess), checked against the recorded ``@mastra/mcp`` server
(``conformance/mcp/server-*.json``): the tool list and every ``tools/call`` result."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from agentstream.mcp import MCPClient, MCPServer
from agentstream.server import RequestGuard
from mcp import Client, StdioServerParameters
from tests.agent.test_conformance import _matches
from tests.conformance import CONFORMANCE, load, to_wire

from .everything import free_port
from .oracle_server import build

REPO = Path(__file__).resolve().parents[2]
VECTOR = load(CONFORMANCE / "mcp" / "server-sdk-client.json")
# What the recorded agent answer (the JSON of Mastra's whole generate() result) must agree on.
AGENT_KEYS = ("text", "usage", "finishReason", "toolCalls", "toolResults")
# Run-specific values in a workflow result: the run id and the step clock.
RUN_SPECIFIC = re.compile(r"^(runId|startedAt|endedAt)$")


@asynccontextmanager
async def serving(server: MCPServer, guard: RequestGuard | None = None) -> AsyncIterator[str]:
    port = free_port()
    config = uvicorn.Config(server.http_app(guard=guard), host="127.0.0.1", port=port, log_level="warning")
    http = uvicorn.Server(config)
    task = asyncio.create_task(http.serve())
    while not http.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        http.should_exit = True
        await asyncio.wait_for(task, 15)


def _without_run_specifics(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_run_specifics(v) for k, v in value.items() if not RUN_SPECIFIC.match(k)}
    if isinstance(value, list):
        return [_without_run_specifics(v) for v in value]
    return value


def _dump(value: Any) -> Any:
    return value.model_dump(mode="json", by_alias=True, exclude_none=True)


def _check_call(name: str, expected: dict[str, Any], actual: dict[str, Any]) -> None:
    assert actual.get("isError", False) == expected["isError"], name
    assert actual.get("structuredContent") == expected.get("structuredContent"), name
    (exp_item,), (act_item,) = expected["content"], actual["content"]
    assert act_item["type"] == exp_item["type"] == "text"
    if name.startswith("ask_"):
        exp_answer, act_answer = json.loads(exp_item["text"]), json.loads(act_item["text"])
        for key in AGENT_KEYS:
            assert act_answer[key] == exp_answer[key], f"{name}.{key}"
    elif name.startswith("run_") or exp_item["text"].startswith("{"):
        exp_json, act_json = json.loads(exp_item["text"]), json.loads(act_item["text"])
        assert _without_run_specifics(act_json) == _without_run_specifics(exp_json), name
    else:
        assert act_item["text"] == exp_item["text"], name


async def _replay(client: Client) -> None:
    connect = VECTOR["calls"][0]
    assert client.server_info is not None
    assert _dump(client.server_info) == {**connect["serverVersion"], **_dump(client.server_info)}
    assert client.server_info.name == connect["serverVersion"]["name"]
    assert client.server_info.version == connect["serverVersion"]["version"]
    assert client.instructions == connect["instructions"]
    assert client.server_capabilities.tools is not None
    for call in VECTOR["calls"][1:]:
        expected = to_wire(call["returned"])
        if call["call"] == "listTools":
            listed = [_dump(t) for t in (await client.list_tools()).tools]
            _matches(expected["tools"], listed, "tools/list")
        else:
            assert call["call"] == "callTool", call["call"]
            (request,) = call["args"]
            result = _dump(await client.call_tool(request["name"], request["arguments"]))
            _check_call(request["name"], expected, result)


async def test_the_python_sdk_client_sees_the_recorded_server_over_http() -> None:
    async with serving(build(VECTOR)) as url, Client(url) as client:
        assert client.protocol_version == "2026-07-28"
        await _replay(client)


async def test_a_2025_era_client_is_served_too() -> None:
    """Deliberate divergence (docs/decisions/issue-25-mcp-server.md): Mastra's 2.0 server refuses a
    2025-11-25 ``initialize`` (``server-sdk-v1-client-rejected``); ours negotiates it."""
    rejected = load(CONFORMANCE / "mcp" / "server-sdk-v1-client-rejected.json")
    assert "Unsupported protocol version: 2025-11-25" in rejected["calls"][0]["error"]["$error"]["message"]
    async with serving(build(VECTOR)) as url, Client(url, mode="legacy") as client:
        assert client.protocol_version == "2025-11-25"
        await _replay(client)


async def test_the_server_over_stdio_via_the_cli() -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "agentstream", "mcp", "serve", "--app", "tests.mcp.oracle_app:server"],
        env={"PYTHONPATH": f"{REPO / 'src'}:{REPO}"},
        cwd=str(REPO),
    )
    async with Client(params) as client:
        await _replay(client)


async def test_an_agents_answer_streams_as_progress_notifications() -> None:
    seen: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, message))

    async with serving(build(VECTOR)) as url, Client(url) as client:
        result = await client.call_tool("ask_helper", {"message": "Sunny?"}, progress_callback=on_progress)
    assert seen == [(1, "Yes, it is sunny in Paris.")]
    assert json.loads(result.content[0].text)["text"] == "Yes, it is sunny in Paris."  # type: ignore[union-attr]


async def test_our_client_uses_our_server_and_the_guard_refuses_what_it_should() -> None:
    def auth(request: Any) -> object | None:
        return "u1" if request.headers.get("authorization") == "Bearer good" else None

    async with serving(build(VECTOR), RequestGuard(auth=auth, max_body_bytes=4096)) as url:
        async with MCPClient(
            servers={"oracle": {"url": url, "headers": {"authorization": "Bearer good"}}}
        ) as ours:
            tools = await ours.list_tools()
            assert sorted(tools) == [
                "oracle_ask_helper",
                "oracle_fail",
                "oracle_run_double",
                "oracle_shout",
                "oracle_weather",
            ]
            assert await tools["oracle_weather"].execute({"city": "Oslo"}, None) == {  # type: ignore[arg-type]
                "city": "Oslo",
                "temperatureC": 21,
                "conditions": "sunny",
            }
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        async with httpx.AsyncClient() as http:
            assert (await http.post(url, json=body)).status_code == 401
            foreign = {"authorization": "Bearer good", "origin": "https://evil.example"}
            assert (await http.post(url, json=body, headers=foreign)).status_code == 403
            big = {"authorization": "Bearer good", "content-type": "application/json"}
            assert (await http.post(url, content=b"x" * 5000, headers=big)).status_code == 413
            assert (await http.post(url.replace("/mcp", "/other"), json=body)).status_code == 404


async def test_an_httpx_auth_signs_every_request() -> None:
    """The ``auth`` seam (the SDK's ``OAuthClientProvider`` plugs in here, its ``storage`` holding tokens)."""
    import httpx2

    class Bearer(httpx2.Auth):
        def __init__(self) -> None:
            self.signed = 0

        def auth_flow(self, request: httpx2.Request) -> Any:
            self.signed += 1
            request.headers["authorization"] = "Bearer good"
            yield request

    def auth(request: Any) -> object | None:
        return "u1" if request.headers.get("authorization") == "Bearer good" else None

    bearer = Bearer()
    async with serving(build(VECTOR), RequestGuard(auth=auth)) as url:
        async with MCPClient(servers={"oracle": {"url": url, "auth": bearer}}) as ours:
            assert "oracle_shout" in await ours.list_tools()
    assert bearer.signed >= 2
    with pytest.raises(TypeError, match=r"servers\['x'\].auth must be an httpx2.Auth"):
        MCPClient(servers={"x": {"url": "http://h/mcp", "auth": "token"}})


def test_bad_server_definitions_name_the_problem() -> None:
    with pytest.raises(TypeError, match=r"MCPServer tools\['x'\] must be a Tool"):
        MCPServer(name="s", version="1", tools={"x": object()})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match="non-empty name and version"):
        MCPServer(name="", version="1")


async def test_resources_and_prompts_reach_our_client() -> None:
    from .conformance_server import build as build_conformance

    async with serving(build_conformance()) as url, MCPClient(servers={"c": {"url": url}}) as ours:
        listed = await ours.resources.list()
        assert [r["uri"] for r in listed["c"]] == [
            "test://static-text",
            "test://static-binary",
            "test://watched-resource",
        ]
        (template,) = (await ours.resources.templates())["c"]
        assert template["uriTemplate"] == "test://template/{id}/data"
        text = await ours.resources.read("c", "test://template/7/data")
        assert json.loads(text["contents"][0]["text"])["id"] == "7"
        blob = await ours.resources.read("c", "test://static-binary")
        assert blob["contents"][0]["mimeType"] == "image/png" and blob["contents"][0]["blob"]
        await ours.resources.subscribe("c", "test://watched-resource")  # a listen stream (2026-07-28)
        assert ours._subs("c").current is not None and ours._subs("c").current.alive
        prompts = (await ours.prompts.list())["c"]
        assert "test_prompt_with_arguments" in [p["name"] for p in prompts]
        got = await ours.prompts.get("c", "test_prompt_with_arguments", {"arg1": "x", "arg2": "y"})
        assert got["messages"][0]["content"]["text"] == "Prompt with arguments: arg1='x', arg2='y'"
        with pytest.raises(Exception, match="missing required argument"):
            await ours.prompts.get("c", "test_prompt_with_arguments", {"arg1": "x"})


async def test_tools_elicit_log_and_complete_through_context_mcp() -> None:
    """``context.mcp`` (Mastra's ``MCPToolExecutionContext``): a tool served by `MCPServer` asks the
    calling client's user (elicitation), logs at the level the client set, and prompts complete."""
    from .conformance_server import build as build_conformance

    asked: list[dict[str, Any]] = []
    logs: list[Any] = []

    async def on_elicitation(server_name: str, request: dict[str, Any]) -> dict[str, Any]:
        asked.append(request)
        return {"action": "accept", "content": {"username": "ada", "email": "ada@example.com"}}

    async def on_log(server_name: str, params: Any) -> None:
        logs.append(params)

    async with serving(build_conformance()) as url:
        async with MCPClient(
            servers={"c": {"url": url}}, on_elicitation=on_elicitation, on_log=on_log
        ) as ours:
            tools = await ours.list_tools()
            answer = await tools["c_test_elicitation"].execute({"message": "Who are you?"}, None)  # type: ignore[arg-type]
            assert "action=accept" in json.dumps(answer) and "ada@example.com" in json.dumps(answer)
            assert asked and asked[0]["message"] == "Who are you?"
            assert asked[0]["requestedSchema"]["required"] == ["username", "email"]
            await tools["c_test_tool_with_logging"].execute({}, None)  # type: ignore[arg-type]
            texts = [entry.data for entry in logs if entry.level == "info"]
            assert texts[-3:] == [
                "Tool execution started",
                "Tool processing data",
                "Tool execution completed",
            ]
        async with MCPClient(servers={"c": {"url": url}}) as plain:
            tools = await plain.list_tools()
            from agentstream.mcp import MCPToolError

            with pytest.raises(MCPToolError, match="does not support elicitation"):
                await tools["c_test_elicitation"].execute({"message": "x"}, None)  # type: ignore[arg-type]
            with pytest.raises(MCPToolError, match="does not support sampling"):
                await tools["c_test_sampling"].execute({"prompt": "hi"}, None)  # type: ignore[arg-type]
    async with serving(build_conformance()) as url, Client(url) as sdk:
        completed = await sdk.complete(
            {"type": "ref/prompt", "name": "test_prompt_with_arguments"}, {"name": "arg1", "value": "par"}
        )
        assert completed.completion.values == ["paris", "park", "party"]
        assert completed.completion.total == 3 and completed.completion.has_more is False

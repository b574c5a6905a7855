"""Every recorded ``@mastra/mcp`` client scenario (``conformance/mcp/client-*.json``) replayed
against the real ``server-everything``, over the transport the recording used.

Each case is built from the vector alone: the server launch line, the ``calls`` (client method,
args, expected value) and the optional ``agentRun`` (an agent on a scripted model whose tools are
the listed MCP tools), so a new recording dropped into the folder runs without code changes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import pytest

from agentstream.agent import Agent
from agentstream.chunks import chunk_to_dict, to_jsonable
from agentstream.mcp import MCPClient, MCPTool
from agentstream.testing import ScriptedModel
from tests.agent.test_conformance import _check_chunks, _check_prompts, _matches
from tests.conformance import load, to_wire, vector_files

from .everything import ensure_installed, http_server, stdio_config


def _kept_error_messages(
    expected: list[dict[str, Any]], chunks: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The one deliberate difference (tests/agent/test_conformance.py ``KEEP_MESSAGE``): Mastra's
    ``JSON.stringify`` drops a JS Error's own ``message``, we keep it. Where a recorded
    ``tool-error`` lacks it, ours must be exactly the message of the recorded cause (what the MCP
    server said); everything else is compared as recorded."""
    for exp, act in zip(expected, chunks, strict=False):
        if exp.get("type") != "tool-error" or act.get("type") != "tool-error":
            continue
        recorded, ours = exp["payload"].get("error") or {}, act["payload"].get("error") or {}
        if "message" not in recorded and "message" in ours:
            assert ours["message"] == (recorded.get("cause") or {}).get("message"), ours
            recorded["message"] = ours["message"]
        details = recorded.get("details") or {}
        if "model" in details and "model" not in (ours.get("details") or {}):
            assert details.pop("model") == "mock-model-id"  # the scripted model's id
    return expected


FROZEN_MS = 946684800000
SAME_INSTRUCTIONS = "<same as getServerInstructions().{server}>"

VECTORS = [p for p in vector_files("mcp") if load(p)["kind"] == "mcp-client"]


@contextmanager
def _server_config(vector: dict[str, Any]) -> Iterator[dict[str, Any]]:
    server = vector["server"]
    if server["transport"] == "stdio":
        yield stdio_config(server["launch"])
        return
    assert "http" in server["transport"].lower(), server["transport"]
    with http_server(server["launch"]) as url:
        yield {"url": url}


@asynccontextmanager
async def _client(vector: dict[str, Any]) -> AsyncIterator[MCPClient]:
    name = vector["server"]["serverName"]
    with _server_config(vector) as config:
        client = MCPClient(servers={name: config}, id="oracle-mcp")
        try:
            yield client
        finally:
            await client.disconnect()


def describe(tool: MCPTool, key: str) -> dict[str, Any]:
    """A listed tool as the recordings describe it (README "Format")."""
    metadata = dict(tool.mcp_metadata)
    if metadata.get("serverInstructions") is not None:
        metadata["serverInstructions"] = SAME_INSTRUCTIONS.format(server=tool.server_name)
    out: dict[str, Any] = {
        "key": key,
        "id": tool.id,
        "description": tool.description,
        "inputSchema": tool.input_schema,
        "requireApproval": tool.require_approval,
        "hasToModelOutput": tool.to_model_output is not None,
        "mcpMetadata": metadata,
    }
    if tool.output_schema is not None:
        out["outputSchema"] = tool.output_schema
    if tool.annotations is not None:
        out["mcp"] = {"annotations": tool.annotations}
    return out


def _definitions(listing: dict[str, dict[str, dict[str, Any]]]) -> Any:
    for server, tools in listing.items():
        for tool in tools.values():
            if tool["server"].get("instructions") is not None:
                tool["server"]["instructions"] = SAME_INSTRUCTIONS.format(server=server)
    return listing


async def _perform(client: MCPClient, call: dict[str, Any]) -> Any:
    name, args = call["call"], call.get("args", [])
    if name == "listTools":
        return [describe(t, key) for key, t in (await client.list_tools()).items()]
    if name == "listToolsets":
        sets = await client.list_toolsets()
        return {server: [describe(t, key) for key, t in tools.items()] for server, tools in sets.items()}
    if name == "listToolDefinitions":
        return _definitions(await client.list_tool_definitions())
    if name == "getServerProtocolVersions":
        return await client.get_server_protocol_versions()
    if name == "getServerInstructions":
        return await client.get_server_instructions()
    if name == "tool.execute":
        tool = (await client.list_tools())[call["tool"]]
        parsed, error = tool.validation_error(args[0] if args else {})
        return error if error is not None else await tool.execute(parsed, None)  # type: ignore[arg-type]
    group, _, method = name.partition(".")
    if group in ("resources", "prompts"):
        return await getattr(getattr(client, group), method)(*args)
    raise AssertionError(f"the vector calls {name!r}, which this test does not know")


async def _agent_run(client: MCPClient, run: dict[str, Any]) -> None:
    spec = run["agent"]
    listed = await client.list_tools()
    model = ScriptedModel(run["modelSteps"])
    agent = Agent(
        id=spec["id"],
        name=spec["name"],
        instructions=spec["instructions"],
        model=model,
        tools={key: listed[key] for key in spec["tools"]},
    )
    prompt = run["call"].split("agent.stream(", 1)[1].split('", {', 1)[0].strip('"')
    output = agent.stream(prompt, run_id="run-1", clock=lambda: FROZEN_MS)
    chunks = [chunk_to_dict(c) async for c in output.full_stream]
    _check_chunks(_kept_error_messages(to_wire(run["expectedChunks"]), chunks), chunks)
    assert len(model.calls) == len(run["modelCalls"])
    _check_prompts(model, run["modelCalls"])
    for exp_call in run["modelCalls"]:
        offered = to_jsonable(model.calls[exp_call["index"]].options.get("tools"))
        _matches(to_wire(exp_call["otherOptions"]["tools"]), offered, "modelCalls.tools")
    results = to_wire(run["results"])
    assert await output.text == results["text"]
    assert await output.finish_reason == results["finishReason"]
    assert to_jsonable(await output.usage) == results["usage"]
    _matches(results["toolCalls"], to_jsonable(await output.tool_calls), "results.toolCalls")
    _matches(results["toolResults"], to_jsonable(await output.tool_results), "results.toolResults")
    assert len(await output.steps) == results["stepsLength"]


@pytest.mark.parametrize("path", [pytest.param(p, id=p.stem) for p in VECTORS])
async def test_client_vector(path: Path) -> None:
    ensure_installed()
    vector = load(path)
    async with _client(vector) as client:
        for i, call in enumerate(vector["calls"]):
            where = f"calls[{i}] {call['call']}"
            if "error" in call:
                with pytest.raises(Exception) as caught:
                    await _perform(client, call)
                assert to_wire(call["error"])["message"] in str(caught.value), where
                continue
            _matches(to_wire(call["returned"]), to_jsonable(await _perform(client, call)), where)
        if "agentRun" in vector:
            await _agent_run(client, vector["agentRun"])

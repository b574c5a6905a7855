"""Sub-agents as tools: the ``agent-<name>`` tool, its nested stream, errors, cancellation, usage."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from agentstream._abort import AbortController
from agentstream.agent import Agent, SubAgentError
from agentstream.agent._delegation import AGENT_TOOL_INPUT_SCHEMA, strip_parent_tool_parts
from agentstream.chunks import DataChunk, ToolError, ToolOutput, ToolResult, chunk_to_dict
from agentstream.testing import ScriptedModel
from agentstream.tools import Tool, ToolContext
from tests.conformance import load, vector_files


def _call(
    args: dict[str, Any], name: str = "agent-researcher", call_id: str = "call-1"
) -> list[dict[str, Any]]:
    return [
        {"type": "stream-start", "warnings": []},
        {"type": "tool-call", "toolCallId": call_id, "toolName": name, "input": json.dumps(args)},
        {"type": "finish", "finishReason": "tool-calls", "usage": {"inputTokens": 10, "outputTokens": 8}},
    ]


def _text(text: str, usage: tuple[int, int] = (7, 6)) -> list[dict[str, Any]]:
    return [
        {"type": "stream-start", "warnings": []},
        {"type": "text-start", "id": "t"},
        {"type": "text-delta", "id": "t", "delta": text},
        {"type": "text-end", "id": "t"},
        {
            "type": "finish",
            "finishReason": "stop",
            "usage": {"inputTokens": usage[0], "outputTokens": usage[1]},
        },
    ]


def _pair(
    sub_steps: list[Any], parent_steps: list[Any], **sub_kwargs: Any
) -> tuple[Agent, ScriptedModel, ScriptedModel]:
    sub_model = ScriptedModel(sub_steps, model_id="sub")
    parent_model = ScriptedModel(parent_steps)
    sub = Agent(
        id="researcher-agent",
        name="Researcher",
        description="Researches a topic",
        instructions="You research topics.",
        model=sub_model,
        **sub_kwargs,
    )
    parent = Agent(id="boss", instructions="You lead.", model=parent_model, agents={"researcher": sub})
    return parent, parent_model, sub_model


def test_the_tool_is_what_mastra_sends_to_the_model() -> None:
    """Name, description and input schema exactly as the recording's model received them."""
    (path,) = [p for p in vector_files("agent") if p.stem == "sub-agent-tool"]
    (recorded,) = load(path)["modelCalls"][0]["otherOptions"]["tools"]
    assert AGENT_TOOL_INPUT_SCHEMA == recorded["inputSchema"]


async def test_tool_definition_and_default_description() -> None:
    sub = Agent(id="plain", model=ScriptedModel([_text("hi")]))
    parent_model = ScriptedModel([_call({"prompt": "go"}, "agent-plain"), _text("ok")])
    parent = Agent(id="p", model=parent_model, agents={"plain": sub})
    await parent.stream("x").consume_stream()
    (tool,) = parent_model.calls[0].options["tools"]
    assert tool == {
        "type": "function",
        "name": "agent-plain",
        "description": "Agent: plain",
        "inputSchema": AGENT_TOOL_INPUT_SCHEMA,
    }


async def test_nested_chunks_result_and_what_the_model_sees() -> None:
    parent, parent_model, sub_model = _pair(
        [_text("Paris is the capital.")],
        [
            _call({"prompt": "Find facts", "instructions": "Be short.", "maxSteps": "4"}),
            _text("Done.", (40, 7)),
        ],
    )
    output = parent.stream("Tell me about Paris", run_id="run-1")
    chunks = [c async for c in output.full_stream]
    nested = [c for c in chunks if isinstance(c, ToolOutput)]
    inner = [c.payload.output for c in nested]
    assert [o["type"] for o in inner] == [
        "start", "step-start", "text-start", "text-delta", "text-end", "step-finish", "finish",
    ]  # fmt: skip
    assert all(c.run_id == "run-1" and c.payload.tool_name == "agent-researcher" for c in nested)
    assert {o["runId"] for o in inner} != {"run-1"}  # the sub-run has its own id
    assert inner[-1]["payload"]["output"]["usage"]["inputTokens"] == 7
    (result,) = [c for c in chunks if isinstance(c, ToolResult)]
    assert result.payload.result["text"] == "Paris is the capital."
    assert result.payload.result["subAgentToolResults"] == []
    assert result.payload.provider_metadata == {
        "mastra": {"modelOutput": {"type": "text", "value": "Paris is the capital."}}
    }
    # the sub-agent: its instructions + the model's extra ones, the parent's context, the prompt
    sub_prompt = sub_model.calls[0].prompt
    assert sub_prompt[0] == {"role": "system", "content": "You research topics.\n\nBe short."}
    assert sub_prompt[1] == {"role": "system", "content": "You lead."}
    assert sub_prompt[-1]["content"][0]["text"] == "Find facts"
    # the parent's next call sees only the text
    tool_message = parent_model.calls[1].prompt[-1]
    assert tool_message["content"][0]["output"] == {"type": "text", "value": "Paris is the capital."}
    # Mastra's usage leaves the sub-run out (recorded); the nested finish carries it
    assert (await output.usage).input_tokens == 50


async def test_sub_agent_tool_results_are_reported() -> None:
    async def lookup(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        return {"found": args["q"]}

    tool = Tool(id="lookup", description="d", input_schema={"type": "object"}, execute=lookup)
    parent, _, _ = _pair(
        [_call({"q": "tides"}, "lookup", "sub-call"), _text("Tides are tidal.")],
        [_call({"prompt": "research tides"}), _text("ok")],
        tools=[tool],
    )
    output = parent.stream("tides")
    (result,) = [c async for c in output.full_stream if isinstance(c, ToolResult)]
    assert result.payload.result["subAgentToolResults"] == [
        {"toolName": "lookup", "toolCallId": "sub-call", "result": {"found": "tides"}, "args": {"q": "tides"}}
    ]


async def test_data_chunks_of_the_sub_run_pass_through_unwrapped() -> None:
    async def progress(args: dict[str, Any], ctx: ToolContext) -> str:
        ctx.writer.custom({"type": "data-progress", "data": {"pct": 50}})
        return "half"

    tool = Tool(id="progress", description="d", input_schema={"type": "object"}, execute=progress)
    parent, _, _ = _pair(
        [_call({}, "progress", "sub-call"), _text("done")],
        [_call({"prompt": "go"}), _text("ok")],
        tools=[tool],
    )
    chunks = [c async for c in parent.stream("x").full_stream]
    data = [c for c in chunks if isinstance(c, DataChunk)]
    assert [chunk_to_dict(c) for c in data] == [{"type": "data-progress", "data": {"pct": 50}}]


async def test_a_failing_sub_agent_is_the_tools_error() -> None:
    parent, parent_model, _ = _pair(
        [{"throws": {"name": "APICallError", "message": "quota exceeded"}}],
        [_call({"prompt": "go"}), _text("Sorry.")],
    )
    output = parent.stream("x")
    chunks = [c async for c in output.full_stream]
    (error,) = [c for c in chunks if isinstance(c, ToolError)]
    message = str(error.payload.error)
    assert "Failed agent tool execution for researcher" in message and "quota exceeded" in message
    assert isinstance(error.payload.error, SubAgentError)
    assert chunk_to_dict(error)["payload"]["error"]["name"] == "SubAgentError"
    # the sub-run's own error chunk is visible nested, and the parent went on
    nested_types = [c.payload.output["type"] for c in chunks if isinstance(c, ToolOutput)]
    assert "error" in nested_types
    assert await output.text == "Sorry."
    assert parent_model.calls[1].prompt[-1]["content"][0]["output"]["type"] == "error-text"


async def test_bad_max_steps_is_a_clear_tool_error() -> None:
    parent, _, sub_model = _pair([_text("x")], [_call({"prompt": "go", "maxSteps": 1}), _text("ok")])
    chunks = [c async for c in parent.stream("x").full_stream]
    (error,) = [c for c in chunks if isinstance(c, ToolError)]
    assert "maxSteps: expected an integer of at least 3, got 1" in str(error.payload.error)
    assert sub_model.calls == []


async def test_sub_run_streams_live_and_a_parent_abort_stops_it() -> None:
    """The nested text-delta reaches the parent's stream while the sub-run is still going (its model
    then waits for the abort); aborting the parent aborts the sub-run and leaves no task behind."""
    held = [
        {"type": "stream-start", "warnings": []},
        {"type": "text-start", "id": "t"},
        {"type": "text-delta", "id": "t", "delta": "partial"},
        {"$waitForAbort": True},
    ]
    parent, parent_model, sub_model = _pair([held], [_call({"prompt": "go"}), _text("never")])
    controller = AbortController()
    output = parent.stream("x", abort_signal=controller.signal)
    seen: list[str] = []
    async for chunk in output.full_stream:
        seen.append(chunk.type)
        if isinstance(chunk, ToolOutput) and chunk.payload.output["type"] == "text-delta":
            controller.abort()
    assert "tool-output" in seen and seen[-1] == "finish" and "abort" in seen
    assert len(parent_model.calls) == 1 and len(sub_model.calls) == 1
    assert output.status == "canceled"
    await asyncio.sleep(0)
    assert asyncio.all_tasks() == {asyncio.current_task()}


async def test_closing_the_parent_output_cancels_the_sub_run() -> None:
    held = [{"type": "stream-start", "warnings": []}, {"$waitForAbort": True}]
    parent, _, sub_model = _pair([held], [_call({"prompt": "go"}), _text("never")])
    output = parent.stream("x")
    async for chunk in output.full_stream:
        if isinstance(chunk, ToolOutput) and chunk.payload.output["type"] == "step-start":
            break
    await output.aclose()
    await asyncio.sleep(0)
    assert asyncio.all_tasks() == {asyncio.current_task()}
    assert len(sub_model.calls) == 1


def test_strip_parent_tool_parts() -> None:
    messages = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": [{"type": "text", "text": "u"}]},
        {
            "role": "assistant",
            "content": [{"type": "tool-call", "toolCallId": "c", "toolName": "t", "input": {}}],
        },
        {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "c", "toolName": "t"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "a"},
                {"type": "tool-call", "toolCallId": "d", "toolName": "t", "input": {}},
            ],
        },
    ]
    assert strip_parent_tool_parts(messages) == [
        messages[0],
        messages[1],
        {"role": "assistant", "content": [{"type": "text", "text": "a"}]},
    ]


async def test_thread_and_resource_ids() -> None:
    parent, _, _ = _pair(
        [_text("a")], [_call({"prompt": "go", "threadId": "t1", "resourceId": "u1"}), _text("ok")]
    )
    (result,) = [c async for c in parent.stream("x").full_stream if isinstance(c, ToolResult)]
    assert result.payload.result["subAgentThreadId"].startswith("t1-")
    assert result.payload.result["subAgentResourceId"] == "u1-researcher"
    parent, _, _ = _pair([_text("a")], [_call({"prompt": "go"}), _text("ok")])
    (result,) = [c async for c in parent.stream("x").full_stream if isinstance(c, ToolResult)]
    assert result.payload.result["subAgentResourceId"] == "boss-researcher"  # no Mastra: the parent's slug


def test_bad_configuration_is_refused() -> None:
    model = ScriptedModel([])
    sub = Agent(id="s", model=model)
    with pytest.raises(TypeError, match=r"agents\['x'\]: expected an Agent, got str"):
        Agent(id="p", model=model, agents={"x": "nope"})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match="agents: names must be non-empty strings"):
        Agent(id="p", model=model, agents={"": sub})
    clash = Tool(id="agent-s", description="", input_schema={"type": "object"}, execute=lambda a, c: None)
    with pytest.raises(ValueError, match="'agent-s' clashes"):
        Agent(id="p", model=model, tools=[clash], agents={"s": sub})
    with pytest.raises(TypeError, match=r"workflows\['w'\]: expected a workflow"):
        Agent(id="p", model=model, workflows={"w": object()})


@pytest.mark.parametrize("include", [False, True])
async def test_chat_stream_shows_sub_agent_progress_only_when_asked(include: bool) -> None:
    from agentstream import Mastra
    from agentstream.ai_sdk import handle_chat_stream

    parent, _, _ = _pair([_text("Facts.")], [_call({"prompt": "go"}), _text("ok")])
    body = {"messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}]}
    stream = await handle_chat_stream(
        mastra=Mastra(agents={"boss": parent}),
        agent_id="boss",
        params=body,
        include_sub_agent_metadata=include,
    )
    types = [p["type"] async for p in stream]
    agent_parts = [t for t in types if t.startswith("data-tool-agent")]
    if include:
        assert agent_parts[-1] == "data-tool-agent" and "data-tool-agent-step" in agent_parts
        assert types.index("data-tool-agent") < types.index("tool-output-available")
    else:
        assert agent_parts == []


async def test_usage_with_sub_runs_adds_every_nested_run() -> None:
    from agentstream.agent import usage_with_sub_runs

    leaf = Agent(id="leaf", model=ScriptedModel([_text("deep", (100, 200))]))
    middle = Agent(
        id="middle",
        model=ScriptedModel([_call({"prompt": "deeper"}, "agent-leaf"), _text("mid", (7, 6))]),
        agents={"leaf": leaf},
    )
    top = Agent(
        id="top",
        model=ScriptedModel([_call({"prompt": "go"}, "agent-middle"), _text("top", (40, 7))]),
        agents={"middle": middle},
    )
    output = top.stream("x")
    own = await output.total_usage
    assert (own.input_tokens, own.output_tokens) == (50, 15)  # Mastra's: the parent's calls only
    assert (await usage_with_sub_runs(output)).to_wire() == {
        "inputTokens": 50 + (10 + 7) + 100,
        "outputTokens": 15 + (8 + 6) + 200,
        "totalTokens": 65 + 31 + 300,
    }

"""Workflows as tools: the ``workflow-<name>`` tool, its nested workflow stream, its UI parts."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from agentstream._abort import AbortController
from agentstream.agent import Agent, usage_with_sub_runs
from agentstream.agent._delegation import AGENT_TOOL_INPUT_SCHEMA, workflow_input_schema
from agentstream.ai_sdk import to_ai_sdk_stream
from agentstream.chunks import ToolError, ToolOutput, ToolResult
from agentstream.testing import ScriptedModel
from agentstream.workflows import StepContext, Workflow, create_step, create_workflow

NAME_SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "properties": {"name": {"type": "string"}},
    "required": ["name"],
}


def _call(args: dict[str, Any], name: str = "workflow-greet") -> list[dict[str, Any]]:
    return [
        {"type": "stream-start", "warnings": []},
        {"type": "tool-call", "toolCallId": "call-1", "toolName": name, "input": json.dumps(args)},
        {"type": "finish", "finishReason": "tool-calls", "usage": {"inputTokens": 3, "outputTokens": 2}},
    ]


def _text(text: str) -> list[dict[str, Any]]:
    return [
        {"type": "stream-start", "warnings": []},
        {"type": "text-start", "id": "t"},
        {"type": "text-delta", "id": "t", "delta": text},
        {"type": "text-end", "id": "t"},
        {"type": "finish", "finishReason": "stop", "usage": {"inputTokens": 4, "outputTokens": 5}},
    ]


def _greet(fail: bool = False) -> Workflow:
    async def hello(ctx: StepContext) -> dict[str, Any]:
        if fail:
            raise RuntimeError("no greeting today")
        return {"greeting": f"Hello, {ctx.input_data['name']}!"}

    step = create_step(id="hello", input_schema=NAME_SCHEMA, execute=hello)
    return (
        create_workflow(id="greet-wf", description="Greets someone", input_schema=NAME_SCHEMA)
        .then(step)
        .commit()
    )


RESUME_FIELDS = ("suspendedToolCallId", "suspendedToolRunId", "resumeData")


def _parent(workflow: Workflow, steps: list[Any]) -> tuple[Agent, ScriptedModel]:
    model = ScriptedModel(steps)
    return Agent(id="boss", instructions="Lead.", model=model, workflows={"greet": workflow}), model


async def test_tool_definition() -> None:
    parent, model = _parent(_greet(), [_call({"inputData": {"name": "Ada"}}), _text("ok")])
    await parent.stream("x").consume_stream()
    (tool,) = model.calls[0].options["tools"]
    schema = {k: v for k, v in NAME_SCHEMA.items() if k != "$schema"}
    assert tool == {
        "type": "function",
        "name": "workflow-greet",
        "description": "Greets someone",
        # Mastra's: {inputData} plus the resume fields its tool builder gives every resumable tool,
        # alike the sub-agent tool's (the sub-agent-tool recording)
        "inputSchema": {
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "properties": {
                "inputData": schema,
                **{k: AGENT_TOOL_INPUT_SCHEMA["properties"][k] for k in RESUME_FIELDS},
            },
            "required": ["inputData"],
            "additionalProperties": False,
        },
    }
    untyped = create_workflow(id="w")
    assert workflow_input_schema(untyped)["properties"]["inputData"] == {
        "type": "object",
        "additionalProperties": True,
    }


async def test_nested_workflow_chunks_and_result() -> None:
    parent, model = _parent(_greet(), [_call({"inputData": {"name": "Ada"}}), _text("Greeted.")])
    chunks = [c async for c in parent.stream("greet Ada").full_stream]
    inner = [c.payload.output for c in chunks if isinstance(c, ToolOutput)]
    types = [o["type"] for o in inner]
    assert types[0] == "workflow-start" and types[-1] == "workflow-finish"
    assert "workflow-step-result" in types and "workflow-step-finish" not in types
    assert inner[-1]["payload"]["workflowStatus"] == "success"
    (result,) = [c for c in chunks if isinstance(c, ToolResult)]
    assert result.payload.result == {"result": {"greeting": "Hello, Ada!"}, "runId": inner[0]["runId"]}
    tool_message = model.calls[1].prompt[-1]["content"][0]
    assert tool_message["output"] == {"type": "json", "value": result.payload.result}


async def test_failed_workflow_is_an_error_result() -> None:
    parent, _ = _parent(_greet(fail=True), [_call({"inputData": {"name": "Ada"}}), _text("Sorry.")])
    chunks = [c async for c in parent.stream("x").full_stream]
    (result,) = [c for c in chunks if isinstance(c, ToolResult)]
    assert result.payload.result["error"] == "no greeting today"
    assert set(result.payload.result) == {"error", "runId"}


async def test_bad_input_is_the_tools_validation_error() -> None:
    parent, model = _parent(_greet(), [_call({"inputData": {"nom": "Ada"}}), _text("ok")])
    chunks = [c async for c in parent.stream("x").full_stream]
    assert not [c for c in chunks if isinstance(c, ToolOutput)]  # the run never started
    results = [c for c in chunks if isinstance(c, (ToolResult, ToolError))]
    assert len(results) == 1
    text = json.dumps(model.calls[1].prompt[-1]["content"][0]["output"])
    assert "name" in text


async def test_agent_step_usage_nests_inside_the_workflow() -> None:
    writer = Agent(id="writer", model=ScriptedModel([_text("A poem.")]))
    step = create_step(writer)
    workflow = create_workflow(id="poem").then(step).commit()
    parent, _ = _parent(workflow, [_call({"inputData": {"prompt": "write"}}), _text("ok")])
    output = parent.stream("x")
    chunks = [c async for c in output.full_stream]
    inner = [c.payload.output for c in chunks if isinstance(c, ToolOutput)]
    step_outputs = [o["payload"]["output"] for o in inner if o["type"] == "workflow-step-output"]
    assert step_outputs[-1]["type"] == "finish"
    assert inner[-1]["payload"]["output"]["usage"]["inputTokens"] == 4
    (result,) = [c for c in chunks if isinstance(c, ToolResult)]
    assert result.payload.result["result"] == {"text": "A poem."}
    assert (await usage_with_sub_runs(output)).input_tokens == (
        3 + 4
    ) + 4  # the parent's two calls + the step's


async def test_workflow_tool_ui_parts_are_on_by_default() -> None:
    # @mastra/ai-sdk turns a workflow tool's tool-output into data-tool-workflow parts with its default
    # options; includeSubAgentMetadata governs the sub-agent parts only (transformers.ts)
    parent, _ = _parent(_greet(), [_call({"inputData": {"name": "Ada"}}), _text("ok")])
    output = parent.stream("x")
    plain = [p async for p in to_ai_sdk_stream(output)]
    with_meta = [p async for p in to_ai_sdk_stream(output, include_sub_agent_metadata=True)]
    nested = [p for p in plain if p["type"].startswith("data-tool-workflow")]
    assert [p["type"] for p in nested] == [
        "data-tool-workflow",  # workflow-start
        "data-tool-workflow",  # step start
        "data-tool-workflow",  # step result: the snapshot ...
        "data-tool-workflow-step",  # ... and the step with its output
        "data-tool-workflow",  # finish
    ]
    assert nested[-1]["data"]["status"] == "success"
    assert nested[3]["data"]["step"]["output"] == {"greeting": "Hello, Ada!"}
    assert with_meta == plain


async def test_parent_abort_cancels_the_workflow_run() -> None:
    started = asyncio.Event()

    async def wait(ctx: StepContext) -> dict[str, Any]:
        started.set()
        await ctx.abort_signal.wait()
        return {"stopped": True}

    workflow = create_workflow(id="slow").then(create_step(id="wait", execute=wait)).commit()
    parent, model = _parent(workflow, [_call({"inputData": {}}), _text("never")])
    controller = AbortController()
    output = parent.stream("x", abort_signal=controller.signal)
    inner_types = []
    async for chunk in output.full_stream:
        if isinstance(chunk, ToolOutput):
            inner_types.append(chunk.payload.output["type"])
            if chunk.payload.output["type"] == "workflow-step-start":
                controller.abort()
    assert started.is_set() and output.status == "canceled" and len(model.calls) == 1
    await asyncio.sleep(0)
    assert asyncio.all_tasks() == {asyncio.current_task()}

"""``prepare_step``: per-step model, tools, tool choice and prompt (Mastra's ``prepareStep``)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentstream import Agent, RequestContext
from agentstream.testing import ScriptedModel
from agentstream.tools import Tool, ToolContext
from agentstream.tracing import InstrumentationSettings

SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
USAGE = {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}


def _call(name: str, call_id: str = "c1") -> list[dict[str, Any]]:
    return [
        {"type": "stream-start", "warnings": []},
        {"type": "tool-call", "toolCallId": call_id, "toolName": name, "input": json.dumps({"q": "x"})},
        {"type": "finish", "finishReason": "tool-calls", "usage": USAGE},
    ]


def _text(text: str) -> list[dict[str, Any]]:
    return [
        {"type": "stream-start", "warnings": []},
        {"type": "text-start", "id": "t"},
        {"type": "text-delta", "id": "t", "delta": text},
        {"type": "text-end", "id": "t"},
        {"type": "finish", "finishReason": "stop", "usage": USAGE},
    ]


def _tool(name: str, ran: list[str]) -> Tool:
    async def execute(args: dict[str, Any], ctx: ToolContext) -> Any:
        ran.append(name)
        return {"from": name}

    return Tool(id=name, description=f"the {name} tool", input_schema=SCHEMA, execute=execute)


async def test_the_model_switches_for_one_step() -> None:
    main = ScriptedModel([_call("lookup"), _text("main again")], provider="acme", model_id="main")
    strong = ScriptedModel([_text("strong answer")], provider="acme", model_id="strong")
    seen: list[tuple[int, int, str]] = []

    def prepare(*, step_number: int, steps: list[Any], model: Any, **_: Any) -> Any:
        seen.append((step_number, len(steps), model.model_id))
        return {"model": strong} if step_number == 1 else None

    ran: list[str] = []
    agent = Agent(id="a", model=main, tools=[_tool("lookup", ran)])
    output = agent.stream("q", prepare_step=prepare)
    finishes = [c async for c in output.full_stream if c.type == "step-finish"]
    assert await output.text == "strong answer"
    assert (len(main.calls), len(strong.calls)) == (1, 1)
    assert seen == [(0, 0, "main"), (1, 1, "main")]  # 0-based steps; `model` is the agent's
    assert [f.payload.metadata["modelMetadata"]["modelId"] for f in finishes] == ["main", "strong"]
    # the switched call got the conversation so far
    assert [m["role"] for m in strong.calls[0].prompt] == ["user", "assistant", "tool"]


async def test_active_tools_and_tool_choice_for_one_step() -> None:
    model = ScriptedModel([_call("search"), _text("done")])
    ran: list[str] = []
    tools = [_tool("search", ran), _tool("delete", ran)]

    def prepare(*, step_number: int, **_: Any) -> Any:
        if step_number == 0:
            return {"active_tools": ["search"], "tool_choice": "required"}
        return {"tool_choice": "none"}

    agent = Agent(id="a", model=model, tools=tools)
    assert await agent.stream("q", prepare_step=prepare).text == "done"
    first, second = (c.options for c in model.calls)
    assert [t["name"] for t in first["tools"]] == ["search"]
    assert first["tool_choice"] == {"type": "required"}
    assert [t["name"] for t in second["tools"]] == ["search", "delete"]  # back to the run's tools
    assert second["tool_choice"] == {"type": "none"}
    assert ran == ["search"]


async def test_a_tool_left_out_of_the_step_does_not_run() -> None:
    model = ScriptedModel([_call("delete"), _text("done")])
    ran: list[str] = []
    agent = Agent(id="a", model=model, tools=[_tool("search", ran), _tool("delete", ran)])
    output = agent.stream("q", prepare_step=lambda **_: {"active_tools": ["search"]})
    chunks = [c async for c in output.full_stream]
    assert ran == []  # the model asked for a tool the step did not offer
    [error] = [c for c in chunks if c.type == "tool-error"]
    assert "delete" in str(error.payload.error)


async def test_a_step_s_own_tools_run() -> None:
    model = ScriptedModel([_call("translate"), _text("done")])
    ran: list[str] = []
    extra = _tool("translate", ran)
    agent = Agent(id="a", model=model, tools=[_tool("search", ran)])

    def prepare(*, step_number: int, tools: dict[str, Tool], **_: Any) -> Any:
        return {"tools": {**tools, "translate": extra}} if step_number == 0 else None

    assert await agent.stream("q", prepare_step=prepare).text == "done"
    assert ran == ["translate"]
    assert [t["name"] for t in model.calls[0].options["tools"]] == ["search", "translate"]


async def test_system_and_messages_for_one_call_only() -> None:
    model = ScriptedModel([_call("search"), _text("done")])
    ran: list[str] = []

    async def prepare(*, step_number: int, messages: list[Any], system_messages: list[Any], **_: Any) -> Any:
        assert system_messages == [{"role": "system", "content": "Be brief."}]
        if step_number == 0:
            return {"system_messages": ["Use the search tool."], "messages": messages[-1:]}
        return None

    agent = Agent(id="a", model=model, instructions="Be brief.", tools=[_tool("search", ran)])
    assert await agent.stream(["earlier", "now"], prepare_step=prepare).text == "done"
    first, second = (c.prompt for c in model.calls)
    assert first[0] == {"role": "system", "content": "Use the search tool."}
    assert [m["role"] for m in first] == ["system", "user"]
    # the next call has the run's own system message and its whole history
    assert second[0] == {"role": "system", "content": "Be brief."}
    assert [m["role"] for m in second] == ["system", "user", "user", "assistant", "tool"]


async def test_request_context_and_provider_options() -> None:
    model = ScriptedModel([_text("hi")])
    contexts: list[Any] = []

    def prepare(*, request_context: RequestContext, **_: Any) -> Any:
        contexts.append(request_context.get("tier"))
        return {"provider_options": {"openai": {"user": request_context.get("user")}}}

    agent = Agent(id="a", model=model)
    context = RequestContext({"tier": "gold", "user": "u-1"})
    await agent.stream("q", prepare_step=prepare, request_context=context).text
    assert contexts == ["gold"]
    assert model.calls[0].options["provider_options"] == {"openai": {"user": "u-1"}}


@pytest.mark.parametrize(
    ("result", "message"),
    [
        ({"modle": "x"}, "unknown key(s) modle"),
        ("not a mapping", "must return None or a mapping"),
        ({"model": 42}, "expected a model string or a LanguageModel"),
    ],
)
async def test_a_bad_result_is_an_error_chunk(result: Any, message: str) -> None:
    agent = Agent(id="a", model=ScriptedModel([_text("never")]))
    output = agent.stream("q", prepare_step=lambda **_: result)
    errors = [c for c in [c async for c in output.full_stream] if c.type == "error"]
    assert errors and message in str(errors[0].payload.error)


def test_prepare_step_must_be_callable() -> None:
    agent = Agent(id="a", model=ScriptedModel([_text("x")]))
    with pytest.raises(TypeError, match="prepare_step must be a function"):
        agent.stream("q", prepare_step="nope")  # type: ignore[arg-type]


async def test_a_switched_call_is_traced_under_its_own_model() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    main = ScriptedModel([_call("lookup")], provider="acme", model_id="main")
    strong = ScriptedModel([_text("ok")], provider="acme", model_id="strong")
    ran: list[str] = []
    agent = Agent(
        id="a",
        model=main,
        tools=[_tool("lookup", ran)],
        instrument=InstrumentationSettings(tracer_provider=provider),
    )
    output = agent.stream(
        "q", prepare_step=lambda *, step_number, **_: {"model": strong} if step_number else None
    )
    assert await output.text == "ok"
    chats = [s.name for s in exporter.get_finished_spans() if s.name.startswith("chat ")]
    assert chats == ["chat main", "chat strong"]
    provider.shutdown()

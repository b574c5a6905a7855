"""Dynamic agents: fields that are functions of the run's request context (``agent/_dynamic.py``)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agentstream import Agent, RequestContext, Tool, ToolContext
from agentstream.testing import ScriptedModel

USAGE = {"inputTokens": 3, "outputTokens": 2, "totalTokens": 5}


def _call(name: str, call_id: str = "c1") -> list[dict[str, Any]]:
    return [
        {"type": "stream-start", "warnings": []},
        {"type": "tool-call", "toolCallId": call_id, "toolName": name, "input": "{}"},
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


def _tool(name: str, seen: list[Any], **kw: Any) -> Tool:
    async def run(args: dict[str, Any], context: ToolContext) -> Any:
        seen.append((name, dict(context.request_context)))
        context.request_context.set("last_tool", name)
        return {"tool": name, "tenant": context.request_context.get("tenant")}

    return Tool(id=name, description=name, input_schema={"type": "object"}, execute=run, **kw)


async def test_each_field_is_resolved_once_per_run_from_its_request_context() -> None:
    seen: list[Any] = []
    calls: list[str] = []
    models = {
        "acme": ScriptedModel([_call("acme_report"), _text("acme done")], model_id="acme-model"),
        "globex": ScriptedModel([_text("globex done")], model_id="globex-model"),
    }
    tools = {"acme": [_tool("acme_report", seen)], "globex": [_tool("globex_lookup", seen)]}

    def instructions(request_context: RequestContext) -> str:
        calls.append("instructions")
        return f"You serve {request_context['tenant']}."

    async def model(request_context: RequestContext) -> Any:
        calls.append("model")
        await asyncio.sleep(0)
        return models[request_context["tenant"]]

    agent = Agent(
        id="support",
        instructions=instructions,
        model=model,
        tools=lambda ctx: tools[ctx["tenant"]],
    )
    acme = agent.stream("report", request_context={"tenant": "acme"})
    globex = agent.stream("lookup", request_context=RequestContext(tenant="globex"))
    assert (await acme.text, await globex.text) == ("acme done", "globex done")
    assert calls.count("instructions") == 2 and calls.count("model") == 2  # once per run
    first = models["acme"].calls[0]
    assert first.prompt[0] == {"role": "system", "content": "You serve acme."}
    assert [t["name"] for t in first.options["tools"]] == ["acme_report"]
    assert models["globex"].calls[0].prompt[0] == {"role": "system", "content": "You serve globex."}
    assert [t["name"] for t in models["globex"].calls[0].options["tools"]] == ["globex_lookup"]
    assert seen == [("acme_report", {"tenant": "acme"})]  # the tool saw its run's context
    steps = await acme.steps
    assert steps[0].response["modelId"] == "acme-model"


async def test_a_tool_s_set_is_seen_by_the_next_tool_of_the_run() -> None:
    seen: list[Any] = []
    model = ScriptedModel([_call("first"), _call("second", "c2"), _text("ok")])
    agent = Agent(id="a", model=model, tools=[_tool("first", seen), _tool("second", seen)])
    context = RequestContext(tenant="t")
    assert await agent.stream("go", request_context=context).text == "ok"
    assert seen == [("first", {"tenant": "t"}), ("second", {"tenant": "t", "last_tool": "first"})]
    assert context.has("last_tool") and context.get("last_tool") == "second"


async def test_a_dynamic_agent_s_suspended_call_is_approved_through_the_agent() -> None:
    seen: list[Any] = []
    model = ScriptedModel([_call("pay"), _text("paid")])
    agent = Agent(
        id="a",
        model=lambda ctx: model,
        tools=lambda ctx: [_tool("pay", seen, require_approval=True)],
    )
    first = agent.stream("pay", request_context={"tenant": "acme"}, run_id="r1")
    assert await first.finish_reason == "suspended"
    leg = agent.approve_tool_call(run_id="r1", tool_call_id="c1", request_context={"tenant": "acme"})
    assert await leg.text == "paid"
    assert seen == [("pay", {"tenant": "acme"})]


async def test_dynamic_default_options_may_not_hold_output_callbacks() -> None:
    agent = Agent(
        id="a",
        model=ScriptedModel([_text("x")]),
        default_options=lambda ctx: {"max_steps": 2, "on_finish": print},
    )
    with pytest.raises(TypeError, match="a dynamic default_options may not set on_finish"):
        await agent.stream("hi").text


async def test_a_failing_function_names_its_field() -> None:
    def broken(request_context: RequestContext) -> str:
        raise KeyError("tenant")

    agent = Agent(id="a", model=ScriptedModel([_text("x")]), instructions=broken)
    with pytest.raises(KeyError, match="agent 'a': its dynamic instructions failed"):
        await agent.stream("hi").text


def test_wrong_values_and_functions_are_refused() -> None:
    with pytest.raises(TypeError, match="takes no argument"):
        Agent(id="a", model="demo", instructions=lambda: "x")
    agent = Agent(id="b", model=lambda request_context: "demo")
    with pytest.raises(TypeError, match="its model is a function of the request context"):
        agent.model  # noqa: B018
    with pytest.raises(TypeError, match="request_context must be a mapping"):
        Agent(id="c", model="demo").stream("hi", request_context=["tenant"])  # type: ignore[arg-type]


async def test_a_resolved_value_is_checked_as_the_constructor_checks_it() -> None:
    agent = Agent(id="a", model=ScriptedModel([_text("x")]), tools=lambda ctx: ["not a tool"])
    with pytest.raises(TypeError, match="agent 'a': tools must be Tool objects"):
        await agent.stream("hi").text

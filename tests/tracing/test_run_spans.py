"""The span tree of traced runs: tools, provider errors, aborts, content on and off, the switches."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from opentelemetry.trace import StatusCode

from agentstream import AbortController, AbortError, Agent
from agentstream.agent import LoopHooks
from agentstream.models import APICallError
from agentstream.testing import ScriptedModel
from agentstream.tools import Tool, ToolContext
from agentstream.tracing import instrument

from .conftest import Spans

USAGE = {"inputTokens": 7, "outputTokens": 3, "totalTokens": 10}
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


def tool_step() -> list[dict[str, Any]]:
    return [
        {"type": "stream-start", "warnings": []},
        {"type": "response-metadata", "id": "resp-1", "modelId": "mock-model-2024"},
        {"type": "tool-call", "toolCallId": "call-1", "toolName": "weather", "input": '{"city": "Oslo"}'},
        {"type": "finish", "finishReason": "tool-calls", "usage": USAGE},
    ]


def text_step(text: str = "Sunny in Oslo.", *, wait: bool = False) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = [
        {"type": "stream-start", "warnings": []},
        {"type": "text-start", "id": "t"},
        {"type": "text-delta", "id": "t", "delta": text},
    ]
    if wait:
        parts.append({"$waitForAbort": True})
    return [
        *parts,
        {"type": "text-end", "id": "t"},
        {"type": "finish", "finishReason": "stop", "usage": {"inputTokens": 20, "outputTokens": 5}},
    ]


def weather(fail: bool = False) -> Tool:
    async def execute(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        if fail:
            raise RuntimeError("weather service down")
        return {"city": args["city"], "temperatureC": 21}

    return Tool(id="weather", description="Current weather for a city.", input_schema=SCHEMA, execute=execute)


def agent(model: ScriptedModel, spans: Spans | None, *, content: bool = False, **kw: Any) -> Agent:
    instrument_opt: Any = spans.settings(content) if spans is not None else kw.pop("instrument", None)
    return Agent(
        id="helper",
        name="Helper",
        model=model,
        tools=[weather(kw.pop("fail", False))],
        instrument=instrument_opt,
        **kw,
    )


async def test_tool_using_run_span_tree_and_attributes(spans: Spans) -> None:
    model = ScriptedModel([tool_step(), text_step()], provider="openai.chat", model_id="gpt-x")
    output = agent(model, spans).stream("Weather in Oslo?")
    assert await output.text == "Sunny in Oslo."

    assert spans.tree() == (
        "invoke_agent Helper",
        [("chat gpt-x", []), ("execute_tool weather", []), ("chat gpt-x", [])],
    )
    run = spans.named("invoke_agent Helper")
    assert run.attributes is not None
    assert dict(run.attributes) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.id": "helper",
        "gen_ai.agent.name": "Helper",
        "gen_ai.request.model": "gpt-x",
        "gen_ai.provider.name": "openai",
        "agentstream.run_id": output.run_id,
        "gen_ai.usage.input_tokens": 27,
        "gen_ai.usage.output_tokens": 8,
        "gen_ai.response.finish_reasons": ("stop",),
    }
    first, tool_span, second = spans.children(run)
    assert dict(first.attributes or {}) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-x",
        "gen_ai.provider.name": "openai",
        "gen_ai.system": "openai",
        "gen_ai.response.id": "resp-1",
        "gen_ai.response.model": "mock-model-2024",
        "gen_ai.usage.input_tokens": 7,
        "gen_ai.usage.output_tokens": 3,
        "gen_ai.response.finish_reasons": ("tool-calls",),
    }
    assert second.attributes is not None and second.attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert dict(tool_span.attributes or {}) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "weather",
        "gen_ai.tool.call.id": "call-1",
        "gen_ai.tool.type": "function",
        "gen_ai.tool.description": "Current weather for a city.",
    }
    # the tool ran between the two model calls; every span closed and none recorded an error
    assert first.end_time is not None and tool_span.start_time is not None
    assert first.end_time <= tool_span.start_time
    assert all(s.status.status_code is StatusCode.UNSET for s in spans.finished)
    assert {s.context.trace_id for s in spans.finished if s.context} == {run.context.trace_id}  # type: ignore[union-attr]


async def test_content_is_recorded_only_when_asked(spans: Spans) -> None:
    await agent(ScriptedModel([tool_step(), text_step()]), spans).stream("Weather in Oslo?").text
    for span in spans.finished:
        keys = set(span.attributes or {})
        assert not keys & {
            "gen_ai.input.messages",
            "gen_ai.output.messages",
            "gen_ai.tool.call.arguments",
            "gen_ai.tool.call.result",
        }, span.name
    spans.exporter.clear()

    await (
        agent(ScriptedModel([tool_step(), text_step()]), spans, content=True).stream("Weather in Oslo?").text
    )
    run = spans.named("invoke_agent Helper")
    assert run.attributes is not None
    prompt = json.loads(str(run.attributes["gen_ai.input.messages"]))
    assert prompt[-1]["role"] == "user" and "Weather in Oslo?" in json.dumps(prompt[-1])
    assert json.loads(str(run.attributes["gen_ai.output.messages"])) == [
        {"role": "assistant", "parts": [{"type": "text", "content": "Sunny in Oslo."}]}
    ]
    tool_span = spans.named("execute_tool weather")
    assert tool_span.attributes is not None
    assert json.loads(str(tool_span.attributes["gen_ai.tool.call.arguments"])) == {"city": "Oslo"}
    assert json.loads(str(tool_span.attributes["gen_ai.tool.call.result"])) == {
        "city": "Oslo",
        "temperatureC": 21,
    }
    first, _, second = spans.children(run)
    assert json.loads(str((first.attributes or {})["gen_ai.output.messages"])) == [
        {
            "role": "assistant",
            "parts": [
                {"type": "tool_call", "id": "call-1", "name": "weather", "arguments": '{"city": "Oslo"}'}
            ],
        }
    ]
    second_prompt = json.loads(str((second.attributes or {})["gen_ai.input.messages"]))
    assert [m["role"] for m in second_prompt][-2:] == ["assistant", "tool"]


async def test_provider_error_is_recorded_on_the_model_and_run_spans(spans: Spans) -> None:
    error = APICallError(
        "Rate limit reached", url="https://api.example/v1", provider="openai", status_code=429
    )
    output = agent(ScriptedModel([{"throws": error}]), spans).stream("hi")
    assert "error" in [chunk.type async for chunk in output.full_stream]

    assert spans.tree() == ("invoke_agent Helper", [("chat mock-model-id", [])])
    run = spans.named("invoke_agent Helper")
    chat = spans.named("chat mock-model-id")
    for span in (chat, run):
        assert span.status.status_code is StatusCode.ERROR
        assert span.status.description == "openai (status 429): Rate limit reached"
        assert span.attributes is not None and span.attributes["error.type"] == "APICallError"
        (event,) = [e for e in span.events if e.name == "exception"]
        assert event.attributes is not None
        assert event.attributes["exception.type"] == "APICallError"
        assert event.attributes["exception.message"] == "openai (status 429): Rate limit reached"


async def test_error_part_in_the_stream_fails_the_call_span(spans: Spans) -> None:
    step = [
        {"type": "stream-start", "warnings": []},
        {"type": "error", "error": {"name": "AI_APICallError", "message": "overloaded"}},
    ]
    assert "error" in [c.type async for c in agent(ScriptedModel([step]), spans).stream("hi").full_stream]
    chat = spans.named("chat mock-model-id")
    assert chat.status.status_code is StatusCode.ERROR and chat.status.description == "overloaded"
    assert (chat.attributes or {})["error.type"] == "AI_APICallError"
    assert "agentstream.aborted" not in (chat.attributes or {})  # ended by its error, not cut short
    assert spans.named("invoke_agent Helper").status.status_code is StatusCode.ERROR


async def test_tool_error_fails_the_tool_span_only(spans: Spans) -> None:
    await agent(ScriptedModel([tool_step(), text_step()]), spans, fail=True).stream("hi").text
    tool_span = spans.named("execute_tool weather")
    assert tool_span.status.status_code is StatusCode.ERROR
    assert tool_span.status.description == "weather service down"
    assert spans.named("invoke_agent Helper").status.status_code is StatusCode.UNSET


async def test_aborted_run_ends_every_span(spans: Spans) -> None:
    controller = AbortController()
    output = agent(ScriptedModel([text_step(wait=True)]), spans).stream("hi", abort_signal=controller.signal)
    async for chunk in output.full_stream:
        if chunk.type == "text-delta":
            controller.abort()
    assert spans.tree() == ("invoke_agent Helper", [("chat mock-model-id", [])])
    for span in spans.finished:
        assert span.end_time is not None
        assert (span.attributes or {})["agentstream.aborted"] is True, span.name
        assert span.status.status_code is StatusCode.UNSET
    assert "gen_ai.response.finish_reasons" not in (spans.named("invoke_agent Helper").attributes or {})


async def test_consumer_leaving_mid_stream_ends_every_span(spans: Spans) -> None:
    output = agent(ScriptedModel([text_step(wait=True)]), spans).stream("hi")
    async for chunk in output.full_stream:
        if chunk.type == "text-delta":
            break
    await output.aclose()
    assert spans.tree() == ("invoke_agent Helper", [("chat mock-model-id", [])])
    assert all((s.attributes or {}).get("agentstream.aborted") is True for s in spans.finished)


async def test_abort_while_a_tool_runs_ends_its_span(spans: Spans) -> None:
    controller = AbortController()

    async def slow(args: dict[str, Any], ctx: ToolContext) -> str:
        controller.abort()
        await ctx.abort_signal.wait()  # type: ignore[union-attr]
        return "late"

    tool = Tool(id="weather", description="slow", input_schema=SCHEMA, execute=slow)
    a = Agent(
        id="helper",
        name="Helper",
        model=ScriptedModel([tool_step(), text_step()]),
        tools=[tool],
        instrument=spans.settings(),
    )
    await a.stream("hi", abort_signal=controller.signal).get_full_output()
    assert spans.tree() == ("invoke_agent Helper", [("chat mock-model-id", []), ("execute_tool weather", [])])
    assert all(s.end_time is not None for s in spans.finished)
    assert (spans.named("invoke_agent Helper").attributes or {})["agentstream.aborted"] is True


async def test_switches_global_per_agent_and_off(spans: Spans) -> None:
    await agent(ScriptedModel([text_step()]), None).stream("hi").text
    assert spans.finished == []  # nothing on: nothing traced

    instrument(spans.provider)
    await agent(ScriptedModel([text_step()]), None).stream("hi").text
    assert len(spans.finished) == 2
    await agent(ScriptedModel([text_step()]), None, instrument=False).stream("hi").text
    assert len(spans.finished) == 2  # instrument=False wins over the global switch

    instrument(enabled=False)
    await agent(ScriptedModel([text_step()]), None).stream("hi").text
    assert len(spans.finished) == 2
    # instrument=True with nothing global: OpenTelemetry's global provider (a no-op one here)
    await agent(ScriptedModel([text_step()]), None, instrument=True).stream("hi").text
    assert len(spans.finished) == 2


async def test_run_nests_under_the_context_it_was_created_in(spans: Spans) -> None:
    tracer = spans.provider.get_tracer("test")
    with tracer.start_as_current_span("request"):
        output = agent(ScriptedModel([text_step()]), spans).stream("hi")
    await output.text  # read outside the request span: the run still nests under it
    assert spans.tree() == ("request", [("invoke_agent Helper", [("chat mock-model-id", [])])])


async def test_agent_run_inside_a_tool_nests_under_the_tool_span(spans: Spans) -> None:
    inner = Agent(id="inner", model=ScriptedModel([text_step("inner answer")]))  # instrument=None

    async def ask(args: dict[str, Any], ctx: ToolContext) -> str:
        return await inner.stream("sub-question").text

    tool = Tool(id="weather", description="asks", input_schema=SCHEMA, execute=ask)
    a = Agent(
        id="helper",
        name="Helper",
        model=ScriptedModel([tool_step(), text_step()]),
        tools=[tool],
        instrument=spans.settings(),
    )
    await a.stream("hi").text
    assert spans.tree() == (
        "invoke_agent Helper",
        [
            ("chat mock-model-id", []),
            ("execute_tool weather", [("invoke_agent inner", [("chat mock-model-id", [])])]),
            ("chat mock-model-id", []),
        ],
    )


def test_bad_instrument_option_is_refused() -> None:
    with pytest.raises(
        TypeError,
        match="agent 'a': instrument must be True, False, None or an InstrumentationSettings, got str",
    ):
        Agent(id="a", model="demo", instrument="yes")  # type: ignore[arg-type]


def test_untraced_program_never_imports_opentelemetry() -> None:
    code = (
        "import asyncio, sys\n"
        "from agentstream import Agent\n"
        "out = asyncio.run(Agent(id='a', model='demo').generate('hi'))\n"
        "assert out.text, out\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('opentelemetry'))\n"
        "assert not loaded, loaded\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


async def test_the_agents_own_hooks_still_run_inside_the_traced_chain(spans: Spans) -> None:
    seen: list[str] = []

    class Recording(LoopHooks):
        def __init__(self) -> None:
            self.process_chunk = self.record

        def record(self, chunk: Any) -> Any:
            seen.append(f"chunk {chunk.type}")
            return chunk

        async def prepare_step(self, step_number: int, options: Any) -> Any:
            seen.append(f"prepare {step_number}")
            return options

        async def execute_tool(self, call: Any, tool: Any, context: Any, default: Any) -> Any:
            seen.append(f"tool {call.name}")
            return await default()

        async def end_of_run(self, steps: list[Any]) -> list[Any]:
            seen.append("end")
            return []

    a = Agent(
        id="helper",
        name="Helper",
        model=ScriptedModel([tool_step(), text_step()]),
        tools=[weather()],
        hooks=Recording(),
        instrument=spans.settings(),
    )
    assert await a.stream("hi").text == "Sunny in Oslo."
    assert [s for s in seen if not s.startswith("chunk")] == ["prepare 1", "tool weather", "prepare 2", "end"]
    assert "chunk text-delta" in seen
    assert len(spans.finished) == 4


async def test_a_tool_stopped_by_the_abort_is_aborted_not_failed(spans: Spans) -> None:
    controller = AbortController()

    async def stopped(args: dict[str, Any], ctx: ToolContext) -> str:
        controller.abort()
        raise AbortError("aborted")

    tool = Tool(id="weather", description="stops", input_schema=SCHEMA, execute=stopped)
    a = Agent(
        id="helper",
        name="Helper",
        model=ScriptedModel([tool_step(), text_step()]),
        tools=[tool],
        instrument=spans.settings(),
    )
    [c async for c in a.stream("hi", abort_signal=controller.signal).full_stream]
    tool_span = spans.named("execute_tool weather")
    assert (tool_span.attributes or {})["agentstream.aborted"] is True
    assert tool_span.status.status_code is StatusCode.UNSET

"""The loop's provider seams: request/response metadata, the rate-limit pause, the tool-execution hook,
repaired tool arguments and structured output through a real provider on the loopback server."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

import pytest

from agentstream._abort import AbortController
from agentstream.agent import Agent, LoopHooks, PendingToolCall
from agentstream.agent._loop import RunConfig, rate_limited, run_loop
from agentstream.chunks import BackgroundTaskStarted, BackgroundTaskStartedPayload, ChunkFrom, chunk_to_dict
from agentstream.chunks._codec import Chunk
from agentstream.models import CallOptions, ModelStream, OpenAIChatModel, StreamPart
from agentstream.testing import FakeClock, ScriptedModel
from agentstream.tools import Tool, ToolContext
from tests.models.conftest import API_KEY, ReplayServer, Reply

WEATHER_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}


def _tool_step(call_id: str = "call-1", args: str = '{"city": "Oslo"}') -> list[StreamPart]:
    return [
        {"type": "stream-start", "warnings": []},
        {"type": "tool-call", "toolCallId": call_id, "toolName": "weather", "input": args},
        {"type": "finish", "finishReason": "tool-calls", "usage": {"inputTokens": 1, "outputTokens": 1}},
    ]


def _text_step(text: str = "done") -> list[StreamPart]:
    return [
        {"type": "stream-start", "warnings": []},
        {"type": "text-start", "id": "t"},
        {"type": "text-delta", "id": "t", "delta": text},
        {"type": "text-end", "id": "t"},
        {"type": "finish", "finishReason": "stop", "usage": {"inputTokens": 1, "outputTokens": 1}},
    ]


class WireModel:
    """A scripted model that returns ``ModelStream`` objects, as the HTTP providers do."""

    specification_version = "v2"
    provider = "wire"
    model_id = "wire-1"

    def __init__(self, steps: list[list[StreamPart]], headers: list[dict[str, str]]) -> None:
        self.steps = steps
        self.headers = headers
        self.calls: list[CallOptions] = []

    def do_stream(self, options: CallOptions) -> ModelStream:
        index = len(self.calls)
        self.calls.append(options)
        stream = ModelStream()

        async def parts() -> AsyncGenerator[StreamPart, None]:
            stream.request = {"body": json.dumps({"call": index})}
            stream.response = {"headers": self.headers[index]}
            for part in self.steps[index]:
                yield part

        return stream.attach(parts())


def _weather_tool(ran: list[Any] | None = None) -> Tool:
    async def execute(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        if ran is not None:
            ran.append(args)
        return {"city": args["city"], "temperatureC": 21}

    return Tool(id="weather", description="weather", input_schema=WEATHER_SCHEMA, execute=execute)


def _config(model: Any, **kw: Any) -> RunConfig:
    defaults: dict[str, Any] = {
        "agent_id": "a",
        "run_id": "run-1",
        "message_id": "m-1",
        "model": model,
        "prompt": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
        "tools": {"weather": _weather_tool()},
        "signal": AbortController().signal,
        "now_ms": lambda: 0.0,
    }
    defaults.update(kw)
    return RunConfig(**defaults)


async def _collect(cfg: RunConfig) -> list[dict[str, Any]]:
    return [chunk_to_dict(c) async for c in run_loop(cfg)]


# -- request body and response headers ------------------------------------------------------------


async def test_step_start_request_and_response_headers_from_the_provider() -> None:
    model = WireModel([_tool_step(), _text_step()], [{"x-request-id": "r1"}, {"x-request-id": "r2"}])
    chunks = await _collect(_config(model))
    starts = [c for c in chunks if c["type"] == "step-start"]
    assert [s["payload"]["request"] for s in starts] == [{"body": '{"call": 0}'}, {"body": '{"call": 1}'}]
    finishes = [c for c in chunks if c["type"] == "step-finish"]
    assert [f["payload"]["metadata"]["headers"] for f in finishes] == [
        {"x-request-id": "r1"},
        {"x-request-id": "r2"},
    ]
    assert finishes[0]["payload"]["metadata"]["request"] == {"body": '{"call": 0}'}


async def test_scripted_model_reports_an_empty_request() -> None:
    chunks = await _collect(_config(ScriptedModel([_text_step()])))
    (start,) = [c for c in chunks if c["type"] == "step-start"]
    assert start["payload"]["request"] == {}
    (finish,) = [c for c in chunks if c["type"] == "step-finish"]
    assert "headers" not in finish["payload"]["metadata"]


async def test_real_provider_body_reaches_step_start_and_response_metadata() -> None:
    server = ReplayServer()
    await server.start()
    try:
        body = (
            "".join(
                f"data: {json.dumps(e)}\n\n"
                for e in [
                    {
                        "id": "c1",
                        "model": "gpt-4o",
                        "created": 0,
                        "choices": [{"index": 0, "delta": {"content": "Hi"}}],
                    },
                    {
                        "id": "c1",
                        "model": "gpt-4o",
                        "created": 0,
                        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                    },
                ]
            )
            + "data: [DONE]\n\n"
        )
        server.replies.append(Reply(body=body, headers={"x-ratelimit-remaining-tokens": "90000"}))
        model = OpenAIChatModel("gpt-4o", base_url=server.url + "/v1", api_key=API_KEY)
        output = Agent(id="a", name="A", instructions="Be brief.", model=model).stream("hello")
        chunks = [chunk_to_dict(c) async for c in output.full_stream]
        (start,) = [c for c in chunks if c["type"] == "step-start"]
        assert json.loads(start["payload"]["request"]["body"]) == server.received[-1].body
        (finish,) = [c for c in chunks if c["type"] == "step-finish"]
        assert finish["payload"]["metadata"]["headers"]["x-ratelimit-remaining-tokens"] == "90000"
        assert (await output.response)["headers"]["x-ratelimit-remaining-tokens"] == "90000"
    finally:
        await server.stop()


# -- rate-limit pause -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "pauses"),
    [
        ("1999", True),
        ("1", True),
        ("1500.7", True),
        (" 12abc", True),
        ("0", False),
        ("2000", False),
        ("-5", False),
        ("abc", False),
        ("", False),
    ],
)
def test_rate_limited_parses_like_parse_int(value: str, pauses: bool) -> None:
    assert rate_limited({"x-ratelimit-remaining-tokens": value}) is pauses
    assert rate_limited({"X-RateLimit-Remaining-Tokens": value}) is pauses


def test_rate_limited_without_the_header() -> None:
    assert not rate_limited(None) and not rate_limited({}) and not rate_limited({"x-other": "5"})


def _pause_seen(clock: FakeClock) -> tuple[Callable[[float], Awaitable[None]], asyncio.Event]:
    """``clock.sleep``, and an event set once the loop calls it (the run is paused)."""
    pausing = asyncio.Event()

    async def sleep(seconds: float) -> None:
        pausing.set()
        await clock.sleep(seconds)

    return sleep, pausing


async def test_rate_limit_pause_waits_ten_virtual_seconds_before_the_next_step() -> None:
    clock = FakeClock()
    low = {"x-ratelimit-remaining-tokens": "1500"}
    model = WireModel([_tool_step(), _text_step()], [low, low])
    seen: list[str] = []
    sleep, pausing = _pause_seen(clock)

    async def consume() -> None:
        async for chunk in run_loop(_config(model, sleep=sleep)):
            seen.append(chunk.type)

    task = asyncio.create_task(consume())
    await asyncio.wait_for(pausing.wait(), 10)  # the tool ran, step 1 finished, the loop pauses
    assert seen[-1] == "step-finish" and len(model.calls) == 1
    await clock.advance(9.9)
    for _ in range(20):  # loop turns, not wall time: a woken sleeper would call the model in these
        await asyncio.sleep(0)
    assert len(model.calls) == 1, "the next model call waits 10 s"
    await clock.advance(0.1)
    await asyncio.wait_for(task, 1)  # no pause after the last step: the run ends without more time
    assert len(model.calls) == 2 and seen[-1] == "finish"


async def test_no_pause_when_enough_tokens_remain() -> None:
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    model = WireModel([_tool_step(), _text_step()], [{"x-ratelimit-remaining-tokens": "2000"}, {}])
    await _collect(_config(model, sleep=sleep))
    assert slept == [] and len(model.calls) == 2
    model = WireModel([_tool_step(), _text_step()], [{"x-ratelimit-remaining-tokens": "10"}, {}])
    await _collect(_config(model, sleep=sleep))
    assert slept == [10.0]


async def test_agent_sleep_option_is_the_rate_limit_pause() -> None:
    """``Agent.stream(..., sleep=...)`` (like ``clock=``, also as a default option) reaches the loop."""
    slept: list[tuple[str, float]] = []

    def recorder(tag: str) -> Any:
        async def sleep(seconds: float) -> None:
            slept.append((tag, seconds))

        return sleep

    low = [{"x-ratelimit-remaining-tokens": "1999"}, {}]
    agent = Agent(id="a", model=WireModel([_tool_step(), _text_step()], low), tools=[_weather_tool()])
    assert await agent.stream("go", sleep=recorder("option")).text == "done"
    agent = Agent(
        id="b",
        model=WireModel([_tool_step(), _text_step()], low),
        tools=[_weather_tool()],
        default_options={"sleep": recorder("default")},
    )
    assert (await agent.generate("go")).text == "done"
    assert slept == [("option", 10.0), ("default", 10.0)]


async def test_abort_during_the_pause_ends_the_run() -> None:
    clock = FakeClock()
    ctrl = AbortController()
    model = WireModel([_tool_step(), _text_step()], [{"x-ratelimit-remaining-tokens": "5"}, {}])
    seen: list[str] = []
    sleep, pausing = _pause_seen(clock)

    async def consume() -> None:
        async for chunk in run_loop(_config(model, sleep=sleep, signal=ctrl.signal)):
            seen.append(chunk.type)

    task = asyncio.create_task(consume())
    await asyncio.wait_for(pausing.wait(), 10)
    assert seen[-1] == "step-finish"
    ctrl.abort()
    await asyncio.wait_for(task, 1)
    assert seen[-2:] == ["abort", "finish"] and len(model.calls) == 1


# -- repaired tool arguments ------------------------------------------------------------------------


async def test_tool_runs_with_the_providers_repaired_arguments() -> None:
    ran: list[Any] = []
    step = [
        {"type": "stream-start", "warnings": []},
        {"type": "tool-input-start", "id": "call-1", "toolName": "weather"},
        {"type": "tool-input-delta", "id": "call-1", "delta": "{city: 'Oslo',}"},
        {"type": "tool-input-end", "id": "call-1"},
        {"type": "tool-call", "toolCallId": "call-1", "toolName": "weather", "input": "{city: 'Oslo',}"},
        {"type": "finish", "finishReason": "tool-calls", "usage": {}},
    ]
    cfg = _config(ScriptedModel([step, _text_step()]), tools={"weather": _weather_tool(ran)})
    chunks = await _collect(cfg)
    assert ran == [{"city": "Oslo"}]
    (result,) = [c for c in chunks if c["type"] == "tool-result"]
    assert result["payload"]["args"] == {"city": "Oslo"}
    assert result["payload"]["result"] == {"city": "Oslo", "temperatureC": 21}


async def test_unrepairable_arguments_still_run_with_an_empty_object() -> None:
    step = [
        {"type": "stream-start", "warnings": []},
        {"type": "tool-input-start", "id": "call-1", "toolName": "weather"},
        {"type": "tool-input-delta", "id": "call-1", "delta": "{{{"},
        {"type": "tool-input-end", "id": "call-1"},
        {"type": "tool-call", "toolCallId": "call-1", "toolName": "weather", "input": "{{{"},
        {"type": "finish", "finishReason": "tool-calls", "usage": {}},
    ]
    chunks = await _collect(_config(ScriptedModel([step, _text_step()])))
    (result,) = [c for c in chunks if c["type"] == "tool-result"]
    assert result["payload"]["args"] == {} and result["payload"]["result"]["error"] is True


# -- the tool-execution seam ------------------------------------------------------------------------


class Dispatching(LoopHooks):
    """What the background-task package does: dispatch instead of running, announce the task."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, Any, str]] = []

    async def execute_tool(
        self, call: PendingToolCall, tool: Tool, context: ToolContext, default: Any
    ) -> Any:
        self.seen.append((call.call_id, call.args, tool.id))
        context.writer.emit(
            BackgroundTaskStarted(
                run_id=context.run_id,
                from_=ChunkFrom.AGENT,
                payload=BackgroundTaskStartedPayload(
                    task_id="task-1", tool_name=call.name, tool_call_id=call.call_id
                ),
            )
        )
        return {"status": "running", "taskId": "task-1"}


async def test_execute_tool_hook_replaces_the_run_and_streams_background_task_started() -> None:
    ran: list[Any] = []
    hooks = Dispatching()
    on_chunk: list[str] = []
    cfg = _config(
        ScriptedModel([_tool_step(), _text_step()]),
        tools={"weather": _weather_tool(ran)},
        hooks=hooks,
        on_chunk=lambda c: on_chunk.append(c.type),
    )
    chunks = await _collect(cfg)
    assert ran == [], "the hook did not call default(): the tool did not run"
    assert hooks.seen == [("call-1", {"city": "Oslo"}, "weather")]
    types = [c["type"] for c in chunks]
    assert types.index("background-task-started") < types.index("tool-result")
    (started,) = [c for c in chunks if c["type"] == "background-task-started"]
    assert started["payload"] == {"taskId": "task-1", "toolName": "weather", "toolCallId": "call-1"}
    (result,) = [c for c in chunks if c["type"] == "tool-result"]
    assert result["payload"]["result"] == {"status": "running", "taskId": "task-1"}
    assert on_chunk.index("background-task-started") < on_chunk.index("tool-result")


async def test_default_execute_tool_runs_the_tool_and_hook_errors_become_tool_errors() -> None:
    ran: list[Any] = []

    class Wrapping(LoopHooks):
        async def execute_tool(
            self, call: PendingToolCall, tool: Tool, context: ToolContext, default: Any
        ) -> Any:
            if call.call_id == "call-2":
                raise RuntimeError("dispatch failed")
            return {"wrapped": await default()}

    step = [
        {"type": "stream-start", "warnings": []},
        {"type": "tool-call", "toolCallId": "call-1", "toolName": "weather", "input": '{"city": "Oslo"}'},
        {"type": "tool-call", "toolCallId": "call-2", "toolName": "weather", "input": '{"city": "Bergen"}'},
        {"type": "finish", "finishReason": "tool-calls", "usage": {}},
    ]
    cfg = _config(
        ScriptedModel([step, _text_step()]), tools={"weather": _weather_tool(ran)}, hooks=Wrapping()
    )
    chunks = await _collect(cfg)
    assert ran == [{"city": "Oslo"}]
    by_type = {c["type"]: c for c in chunks if c["type"] in ("tool-result", "tool-error")}
    assert by_type["tool-result"]["payload"]["result"] == {"wrapped": {"city": "Oslo", "temperatureC": 21}}
    assert by_type["tool-error"]["payload"]["toolCallId"] == "call-2"
    assert by_type["tool-error"]["payload"]["error"]["message"] == "dispatch failed"

    plain = await _collect(
        _config(ScriptedModel([_tool_step(), _text_step()]), tools={"weather": _weather_tool(ran)})
    )
    assert ran[-1] == {"city": "Oslo"} and any(c["type"] == "tool-result" for c in plain)


async def test_tool_writer_emit_streams_any_chunk() -> None:
    async def execute(args: dict[str, Any], ctx: ToolContext) -> str:
        chunk: Chunk = BackgroundTaskStarted(
            run_id=ctx.run_id,
            from_=ChunkFrom.AGENT,
            payload=BackgroundTaskStartedPayload(
                task_id="t", tool_name=ctx.tool_name, tool_call_id=ctx.tool_call_id
            ),
        )
        ctx.writer.emit(chunk)
        return "ok"

    tool = Tool(id="weather", description="w", input_schema=WEATHER_SCHEMA, execute=execute)
    chunks = await _collect(_config(ScriptedModel([_tool_step(), _text_step()]), tools={"weather": tool}))
    assert [c["type"] for c in chunks].count("background-task-started") == 1


# -- structured output through a real provider ------------------------------------------------------


async def test_structured_output_through_openai_chat() -> None:
    server = ReplayServer()
    await server.start()
    try:
        pieces = ['{"city"', ': "Oslo"}']
        events = [
            {"id": "c1", "model": "gpt-4o", "created": 0, "choices": [{"index": 0, "delta": {"content": p}}]}
            for p in pieces
        ] + [
            {
                "id": "c1",
                "model": "gpt-4o",
                "created": 0,
                "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
            }
        ]
        server.replies.append(
            Reply(body="".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n")
        )
        model = OpenAIChatModel("gpt-4o", base_url=server.url + "/v1", api_key=API_KEY)
        schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
        output = Agent(id="a", name="A", instructions="", model=model).stream(
            "a city", structured_output={"schema": schema}
        )
        assert await output.object == {"city": "Oslo"}
        sent = server.received[-1].body
        assert sent["response_format"]["type"] == "json_schema"
        assert sent["response_format"]["json_schema"]["name"] == "response"
        assert sent["response_format"]["json_schema"]["schema"]["properties"] == schema["properties"]
    finally:
        await server.stop()


# -- fidelity: usage after an empty "other" step, isContinued after max_steps ----------------------


async def test_empty_other_step_keeps_the_provider_usage() -> None:
    """Mastra: ``error``, then ``step-finish`` and ``finish`` carrying the provider's usage (4 in, 0 out)."""
    empty = [
        {"type": "stream-start", "warnings": []},
        {
            "type": "finish",
            "finishReason": "other",
            "usage": {"inputTokens": 4, "outputTokens": 0, "totalTokens": 4},
        },
    ]
    output = Agent(id="a", model=ScriptedModel([empty])).stream("hi")
    chunks = [chunk_to_dict(c) async for c in output.full_stream]
    assert [c["type"] for c in chunks] == ["start", "step-start", "error", "step-finish", "finish"]
    assert "without producing any content" in chunks[2]["payload"]["error"]["message"]
    for chunk in chunks[3:]:
        usage = chunk["payload"]["output"]["usage"]
        assert (usage["inputTokens"], usage["outputTokens"], usage["totalTokens"]) == (4, 0, 4)
        assert chunk["payload"]["stepResult"]["reason"] == "error"
    assert (await output.usage).input_tokens == 4


@pytest.mark.parametrize(
    "stop", [{"max_steps": 1}, {"stop_when": lambda steps: len(steps) >= 1}], ids=["max_steps", "stop_when"]
)
async def test_a_run_stopped_after_a_tool_step_says_it_does_not_continue(stop: dict[str, Any]) -> None:
    ran: list[Any] = []
    model = ScriptedModel([_tool_step(), _text_step()])
    agent = Agent(id="a", model=model, tools=[_weather_tool(ran)])
    chunks = [chunk_to_dict(c) async for c in agent.stream("hi", **stop).full_stream]
    assert ran == [{"city": "Oslo"}]  # the tool ran; the model is not called again
    assert len(model.calls) == 1
    (step_finish,) = [c for c in chunks if c["type"] == "step-finish"]
    assert step_finish["payload"]["stepResult"] == {
        "reason": "tool-calls",
        "isContinued": False,
        "warnings": [],
    }
    assert chunks[-1]["type"] == "finish"
    assert chunks[-1]["payload"]["stepResult"]["isContinued"] is False


async def test_a_tool_step_within_max_steps_continues() -> None:
    chunks = await _collect(_config(ScriptedModel([_tool_step(), _text_step()]), max_steps=2))
    flags = [c["payload"]["stepResult"]["isContinued"] for c in chunks if c["type"] == "step-finish"]
    assert flags == [True, False]


# -- the seams -------------------------------------------------------------------------------------


class RecordingHooks(LoopHooks):
    def __init__(self) -> None:
        self.seen: list[str] = []

    async def process_input(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        self.seen.append("process_input")
        return [{"role": "system", "content": "be brief"}, *messages]

    async def prepare_step(self, step_number: int, options: CallOptions) -> CallOptions:
        self.seen.append(f"prepare_step {step_number}")
        return {**options, "temperature": 0.25}

    async def after_tools(self, step: Any, results: list[Any]) -> None:
        self.seen.append(f"after_tools {step.number}")

    async def end_of_step(self, step: Any) -> bool | None:
        self.seen.append(f"end_of_step {step.number}")
        return None

    async def end_of_run(self, steps: list[Any]) -> list[Chunk]:
        self.seen.append(f"end_of_run {len(steps)}")
        return [
            BackgroundTaskStarted(
                run_id="run-1",
                from_=ChunkFrom.AGENT,
                payload=BackgroundTaskStartedPayload(task_id="t", tool_name="weather", tool_call_id="call-1"),
            )
        ]


async def test_hooks_are_called_at_each_seam_in_order() -> None:
    hooks = RecordingHooks()
    model = ScriptedModel([_tool_step(), _text_step()])
    chunks = await _collect(_config(model, hooks=hooks))
    assert hooks.seen == [
        "process_input",
        "prepare_step 1",
        "after_tools 1",
        "end_of_step 1",
        "prepare_step 2",
        "after_tools 2",
        "end_of_step 2",
        "end_of_run 2",
    ]
    assert [c["type"] for c in chunks][-2:] == ["background-task-started", "finish"]
    assert model.calls[0].prompt[0] == {"role": "system", "content": "be brief"}
    assert model.calls[1].options["temperature"] == 0.25


async def test_end_of_step_can_stop_the_run() -> None:
    class Stop(LoopHooks):
        async def end_of_step(self, step: Any) -> bool | None:
            return False

    model = ScriptedModel([_tool_step(), _text_step()])
    chunks = await _collect(_config(model, hooks=Stop()))
    assert len(model.calls) == 1
    (step_finish,) = [c for c in chunks if c["type"] == "step-finish"]
    assert step_finish["payload"]["stepResult"]["isContinued"] is False


async def test_on_chunk_sync_async_and_failing_callbacks_all_see_every_delta_in_order(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """``on_chunk`` on the per-token path: a plain callback is called with no coroutine, an async
    one is awaited before the next chunk, and one that raises is logged while the run goes on."""
    step = [
        {"type": "stream-start", "warnings": []},
        {"type": "text-start", "id": "t"},
        *({"type": "text-delta", "id": "t", "delta": d} for d in ("a", "b", "c")),
        {"type": "text-end", "id": "t"},
        {"type": "finish", "finishReason": "stop", "usage": {"inputTokens": 1}},
    ]
    seen: list[str] = []

    def plain(chunk: Any) -> None:
        if chunk.type == "text-delta":
            seen.append(chunk.payload.text)

    async def awaited(chunk: Any) -> None:
        await asyncio.sleep(0)
        if chunk.type == "text-delta":
            seen.append(chunk.payload.text.upper())

    def failing(chunk: Any) -> None:
        raise RuntimeError("callback broke")

    for callback in (plain, awaited, failing):
        output = Agent(id="a", model=ScriptedModel([step])).stream("go", on_chunk=callback)
        assert await output.text == "abc"
    assert seen == ["a", "b", "c", "A", "B", "C"]
    assert "on_chunk callback failed" in caplog.text

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from typing import Any

import pytest

from agentstream.chunks import Chunk, TextDelta, ToolCall, ToolCallDelta, chunk_to_dict, decode_chunk
from agentstream.stream import (
    AbortEvent,
    ErrorEvent,
    FinishEvent,
    ModelOutput,
    StepResult,
    TripwireInfo,
    UnresolvedResultError,
    Usage,
)

R = "run-1"


def c(type_: str, payload: dict[str, Any] | None = None, **top: Any) -> Chunk:
    raw: dict[str, Any] = {"type": type_, "runId": R, "from": "AGENT", **top}
    if payload is not None:
        raw["payload"] = payload
    return decode_chunk(raw)


def text(t: str, id_: str = "t1") -> Chunk:
    return c("text-delta", {"id": id_, "text": t})


def step_finish(reason: str, usage: dict[str, Any]) -> Chunk:
    return c("step-finish", {"stepResult": {"reason": reason}, "output": {"usage": usage}, "metadata": {}})


def finish(reason: str = "stop") -> Chunk:
    return c("finish", {"stepResult": {"reason": reason}, "output": {"usage": {}}, "metadata": {}})


async def source(chunks: Iterable[Chunk], started: list[bool] | None = None) -> AsyncIterator[Chunk]:
    if started is not None:
        started.append(True)
    for chunk in chunks:
        await asyncio.sleep(0)
        yield chunk


def tool_run() -> list[Chunk]:
    """Step 1 streams a tool call and runs it; step 2 answers."""
    return [
        c("start", {"id": "agent", "messageId": "m1"}),
        c("step-start", {"request": {"body": "1"}, "messageId": "m1"}),
        text("Let me check. "),
        c("tool-call-input-streaming-start", {"toolCallId": "call-1", "toolName": "weather"}),
        c("tool-call-delta", {"argsTextDelta": '{"city":', "toolCallId": "call-1"}),
        c("tool-call-delta", {"argsTextDelta": '"Paris"}', "toolCallId": "call-1"}),
        c("tool-call-input-streaming-end", {"toolCallId": "call-1"}),
        c("tool-call", {"toolCallId": "call-1", "toolName": "weather", "args": {"city": "Paris"}}),
        c("tool-result", {"toolCallId": "call-1", "toolName": "weather", "result": {"t": 21}}),
        step_finish("tool-calls", {"inputTokens": 20, "outputTokens": 8, "totalTokens": 28, "raw": {"a": 1}}),
        c("step-start", {"request": {"body": "2"}, "messageId": "m1"}),
        text("It is 21°C."),
        step_finish("stop", {"inputTokens": 40, "outputTokens": 9, "reasoningTokens": 2, "raw": {"a": 2}}),
        finish("stop"),
    ]


async def collect(output: ModelOutput) -> list[Chunk]:
    return [chunk async for chunk in output.full_stream]


async def test_tool_run_accounting_matches_mastra() -> None:
    steps: list[StepResult] = []
    finishes: list[FinishEvent] = []
    output = ModelOutput(source(tool_run()), run_id=R, on_step_finish=steps.append, on_finish=finishes.append)
    chunks = await collect(output)

    types = [ch.type for ch in chunks]
    # the synthetic tool-call follows the streaming end; the provider's duplicate is swallowed
    assert types.count("tool-call") == 1
    assert types.index("tool-call") == types.index("tool-call-input-streaming-end") + 1
    deltas = [ch for ch in chunks if isinstance(ch, ToolCallDelta)]
    assert [d.payload.tool_name for d in deltas] == ["weather", "weather"]
    call = next(ch for ch in chunks if isinstance(ch, ToolCall))
    assert call.payload.args == {"city": "Paris"}

    usage = {"inputTokens": 60, "outputTokens": 17, "totalTokens": 28, "reasoningTokens": 2, "raw": {"a": 2}}
    assert (await output.usage).to_wire() == usage
    assert (await output.usage).input_tokens == 60 and (await output.usage).raw == {"a": 2}
    assert (await output.total_usage).total_tokens == 28
    assert chunk_to_dict(chunks[-1])["payload"]["output"]["usage"] == usage
    # the three texts differ on purpose (spec §13.6)
    assert await output.text == "It is 21°C."
    assert (await output.get_full_output()).text == "Let me check. It is 21°C."
    assert finishes[0].text == "Let me check. It is 21°C."
    assert await output.finish_reason == "stop"
    assert output.status == "success"
    assert [s.step_type for s in steps] == ["initial", "tool-result"]
    assert [s.finish_reason for s in steps] == ["tool-calls", "stop"]
    assert steps[0].text == "Let me check. " and [tc.payload.tool_call_id for tc in steps[0].tool_calls] == [
        "call-1"
    ]
    assert len(await output.tool_results) == 1
    assert await output.request == {"body": "2"}
    assert len(finishes) == 1


async def test_text_without_tools_is_all_text() -> None:
    output = ModelOutput(source([text("a"), text("b"), step_finish("stop", {}), finish()]), run_id=R)
    assert await output.text == "ab"
    assert await output.object is None


async def test_consumers_replay_and_never_steal_from_each_other() -> None:
    gate = asyncio.Event()

    async def gated() -> AsyncIterator[Chunk]:
        yield text("a")
        yield text("b")
        await gate.wait()
        yield text("c")
        yield finish()

    output = ModelOutput(gated(), run_id=R)
    first = output.full_stream
    got_first = [await first.__anext__(), await first.__anext__()]
    late = output.full_stream  # attaches mid-run: replays a, b
    got_late = [await late.__anext__(), await late.__anext__()]
    gate.set()
    got_first += [ch async for ch in first]
    got_late += [ch async for ch in late]
    assert got_first == got_late
    assert [ch.payload.text for ch in got_first if isinstance(ch, TextDelta)] == ["a", "b", "c"]
    after_end = await collect(output)
    assert after_end == got_first
    assert [t async for t in output.text_stream] == ["a", "b", "c"]


async def test_closing_one_consumer_detaches_only_it() -> None:
    gate = asyncio.Event()

    async def gated() -> AsyncIterator[Chunk]:
        yield text("a")
        await gate.wait()
        yield text("b")
        yield finish()

    output = ModelOutput(gated(), run_id=R)
    one, two = output.full_stream, output.full_stream
    assert isinstance(await one.__anext__(), TextDelta)
    await one.aclose()
    gate.set()
    assert [ch.type for ch in [ch async for ch in two]] == ["text-delta", "text-delta", "finish"]
    assert output.status == "success"


@pytest.mark.looptime
async def test_consumption_is_lazy() -> None:
    started: list[bool] = []
    output = ModelOutput(source([text("a"), finish()], started), run_id=R)
    await asyncio.sleep(60)  # a virtual minute of an idle loop: nothing pulled the source
    assert started == []
    assert await output.finish_reason == "stop"
    assert started == [True]


async def test_slow_consumer_does_not_slow_the_producer() -> None:
    produced: list[int] = []

    async def fast() -> AsyncIterator[Chunk]:
        for i in range(1000):
            produced.append(i)
            yield text(str(i))
        yield finish()

    output = ModelOutput(fast(), run_id=R)
    slow = output.full_stream
    await slow.__anext__()
    await output.consume_stream()
    assert len(produced) == 1000  # the producer ran to the end while the consumer read one chunk
    rest = [ch async for ch in slow]
    assert len(rest) == 1000


async def test_error_rejects_every_pending_result_and_keeps_chunks() -> None:
    errors: list[ErrorEvent] = []
    boom = RuntimeError("provider exploded")
    chunks = [text("partial"), c("error", {"error": {"name": "X", "message": "m"}})]
    chunks[1] = chunks[1].__class__(run_id=R, payload=chunks[1].payload.__class__(error=boom))  # type: ignore[call-arg,union-attr]
    output = ModelOutput(source(chunks), run_id=R, on_error=errors.append)
    seen = await collect(output)
    assert [ch.type for ch in seen] == ["text-delta", "error"]
    for name in ("text", "usage", "steps", "finish_reason", "tool_calls"):
        with pytest.raises(RuntimeError, match="provider exploded"):
            await getattr(output, name)
    assert output.status == "failed" and output.error is boom
    assert errors == [ErrorEvent(error=boom)]
    with pytest.raises(RuntimeError, match="provider exploded"):
        await output.get_full_output()


async def test_source_raising_becomes_an_error_chunk() -> None:
    async def broken() -> AsyncIterator[Chunk]:
        yield text("a")
        raise ValueError("loop failed")

    output = ModelOutput(broken(), run_id=R)
    seen = await collect(output)
    assert seen[-1].type == "error"
    assert chunk_to_dict(seen[-1])["payload"]["error"] == {"name": "ValueError", "message": "loop failed"}
    with pytest.raises(ValueError, match="loop failed"):
        await output.text


async def test_unresolved_results_reject_clearly_when_the_stream_ends_without_finish() -> None:
    output = ModelOutput(source([text("a")]), run_id=R)
    await output.consume_stream()
    with pytest.raises(
        UnresolvedResultError, match="result 'text' was not resolved or rejected when stream finished"
    ):
        await output.text
    assert await output.object is None


async def test_tripwire_terminates_the_stream_and_resolves_results() -> None:
    trip = decode_chunk({"type": "tripwire", "payload": {"reason": "blocked", "processorId": "p1"}})
    output = ModelOutput(source([text("a"), trip, text("lost"), finish()]), run_id=R)
    seen = await collect(output)
    assert [ch.type for ch in seen] == ["text-delta", "tripwire"]
    assert output.tripwire == TripwireInfo(reason="blocked", processor_id="p1")
    assert await output.finish_reason == "other"
    assert await output.text == "a"


def _suspended_chunk() -> Any:
    return c(
        "tool-call-suspended",
        {
            "toolCallId": "c1",
            "toolName": "book",
            "suspendPayload": {"q": 1},
            "args": {},
            "resumeSchema": "{}",
        },
    )


async def test_suspension_resolves_partially_without_on_finish() -> None:
    # The recorded runs win over spec §3.4: the suspended leg does not call onFinish.
    finishes: list[FinishEvent] = []
    output = ModelOutput(source([text("a"), _suspended_chunk()]), run_id=R, on_finish=finishes.append)
    seen = await collect(output)
    assert [ch.type for ch in seen] == ["text-delta", "tool-call-suspended"]
    assert output.status == "suspended"
    assert finishes == []
    assert await output.finish_reason == "suspended"
    assert await output.text == "a"
    assert await output.resume_schema == {}
    payload = await output.suspend_payload
    assert payload.tool_call_id == "c1" and payload.suspend_payload == {"q": 1}


async def test_on_suspended_gets_the_state_before_the_chunk_is_delivered() -> None:
    seen_then: list[int] = []
    states: list[dict[str, Any]] = []

    async def keep(state: dict[str, Any]) -> None:
        seen_then.append(len(output._log))
        states.append(state)

    chunks = [text("a"), step_finish("tool-calls", {"inputTokens": 3}), text("b"), _suspended_chunk()]
    output = ModelOutput(source(chunks), run_id=R, on_suspended=keep)
    await collect(output)
    assert seen_then == [3]  # the suspension chunk was not in the log yet
    (state,) = states
    assert state["text"] == {"text": "a", "stepText": "b"}  # the settled text, and the step in flight
    assert state["usage"] == {"inputTokens": 3} and len(state["steps"]) == 1


async def test_a_failing_on_suspended_fails_the_run() -> None:
    async def broken(state: dict[str, Any]) -> None:
        raise OSError("disk full")

    output = ModelOutput(source([text("a"), _suspended_chunk()]), run_id=R, on_suspended=broken)
    seen = await collect(output)
    assert [ch.type for ch in seen] == ["text-delta", "error"]
    assert output.status == "failed"
    with pytest.raises(OSError, match="disk full"):
        await output.text


async def test_restored_state_continues_the_accounting() -> None:
    states: list[dict[str, Any]] = []

    async def keep(state: dict[str, Any]) -> None:
        states.append(state)

    first = [
        text("a"),
        step_finish("tool-calls", {"inputTokens": 3, "outputTokens": 1}),
        text("b"),
        _suspended_chunk(),
    ]
    await collect(ModelOutput(source(first), run_id=R, on_suspended=keep))
    steps: list[Any] = []
    finishes: list[FinishEvent] = []
    second = [
        step_finish("tool-calls", {"inputTokens": 5}),
        text("c"),
        step_finish("stop", {}),
        finish("stop"),
    ]
    resumed = ModelOutput(source(second), run_id=R, on_step_finish=steps.append, on_finish=finishes.append)
    resumed.restore_state(states[0])
    await collect(resumed)
    assert [s.text for s in await resumed.steps] == ["a", "b", "c"]
    assert [s.text for s in steps] == ["b", "c"]  # only this leg's steps reach on_step_finish
    assert (await resumed.usage).input_tokens == 8
    assert finishes[0].text == "abc"
    with pytest.raises(RuntimeError, match="before the output has seen any chunk"):
        resumed.restore_state(states[0])


async def test_abort_reports_aborted_and_partial_text() -> None:
    finishes: list[FinishEvent] = []
    aborts: list[AbortEvent] = []
    chunks = [text("a"), step_finish("stop", {}), text("part"), c("abort", {}), finish("tripwire")]
    output = ModelOutput(source(chunks), run_id=R, on_finish=finishes.append, on_abort=aborts.append)
    await collect(output)
    assert output.status == "canceled"
    assert await output.finish_reason == "aborted"
    assert output.tripwire is None
    assert aborts[0].text == "part" and len(aborts[0].steps) == 1
    assert finishes == []  # recorded Mastra runs: on_abort, never on_finish, for an aborted run


async def test_raising_callback_loses_no_chunk(caplog: pytest.LogCaptureFixture) -> None:
    def bad(_: object) -> None:
        raise RuntimeError("callback bug")

    output = ModelOutput(source(tool_run()), run_id=R, on_step_finish=bad, on_finish=bad)
    seen = await collect(output)
    assert seen[-1].type == "finish" and len(seen) == len(tool_run())
    assert "callback raised" in caplog.text


async def test_raw_chunks_are_dropped_unless_asked() -> None:
    raw = c("raw", {"anything": 1})
    assert [ch.type for ch in await collect(ModelOutput(source([raw, finish()]), run_id=R))] == ["finish"]
    kept = await collect(ModelOutput(source([raw, finish()]), run_id=R, include_raw_chunks=True))
    assert [ch.type for ch in kept] == ["raw", "finish"]


async def test_experimental_transform_is_fresh_per_access_and_not_on_text_stream() -> None:
    made: list[int] = []

    def factory() -> Any:
        made.append(1)

        async def upper(chunks: Any) -> AsyncIterator[Chunk]:
            async for ch in chunks:
                if isinstance(ch, TextDelta):
                    ch = TextDelta(
                        run_id=ch.run_id,
                        from_=ch.from_,
                        payload=ch.payload.__class__(id="t1", text=ch.payload.text.upper()),
                    )
                yield ch

        return upper

    output = ModelOutput(source([text("a"), finish()]), run_id=R, experimental_transform=factory)
    assert [ch.payload.text for ch in await collect(output) if isinstance(ch, TextDelta)] == ["A"]
    assert [ch.payload.text for ch in await collect(output) if isinstance(ch, TextDelta)] == ["A"]
    assert made == [1, 1]
    assert [t async for t in output.text_stream] == ["a"]


async def test_pipe_through_and_aclose_stop_the_run() -> None:
    cancelled: list[bool] = []
    closed: list[bool] = []

    async def endless() -> AsyncIterator[Chunk]:
        try:
            while True:
                await asyncio.sleep(0)
                yield text("x")
        finally:
            closed.append(True)

    output = ModelOutput(endless(), run_id=R, on_cancel=lambda: cancelled.append(True))

    async def first_two(chunks: Any) -> AsyncIterator[Chunk]:
        n = 0
        async for ch in chunks:
            yield ch
            n += 1
            if n == 2:
                return

    assert len([ch async for ch in output.full_stream.pipe_through(first_two)]) == 2
    await output.aclose()
    assert cancelled == [True] and closed == [True]
    with pytest.raises(UnresolvedResultError):
        await output.text
    assert [ch.type for ch in await collect(output)][-1] == "text-delta"  # ended, replayable


async def test_error_then_finish_resolves_from_finish_as_recorded_mastra_runs_do() -> None:
    finishes: list[FinishEvent] = []
    errors: list[ErrorEvent] = []
    boom = ConnectionError("Overloaded")
    err = c("error", {"error": "x"})
    err = err.__class__(run_id=R, payload=err.payload.__class__(error=boom))  # type: ignore[call-arg,union-attr]
    chunks = [text("Once"), err, step_finish("error", {}), finish("error")]
    output = ModelOutput(source(chunks), run_id=R, on_finish=finishes.append, on_error=errors.append)
    assert [ch.type for ch in await collect(output)] == ["text-delta", "error", "step-finish", "finish"]
    assert await output.text == "Once"
    assert await output.finish_reason == "error"
    assert await output.usage == Usage() and await output.total_usage == Usage(total_tokens=0)
    with pytest.raises(ConnectionError):
        await output.object
    assert output.status == "failed"
    assert finishes == [] and errors == [ErrorEvent(error=boom)]


async def test_goal_continue_truncates_replay_and_results_but_not_usage() -> None:
    goal = decode_chunk({"type": "goal", "runId": R, "from": "AGENT", "payload": {"shouldContinue": True}})
    chunks = [
        text("draft "),
        goal,
        step_finish("stop", {"inputTokens": 5, "outputTokens": 1}),
        text("final answer"),
        step_finish("stop", {"inputTokens": 7, "outputTokens": 2}),
        finish(),
    ]
    output = ModelOutput(source(chunks), run_id=R)
    early = output.full_stream  # attached before the goal: keeps everything it was promised
    seen_early = [ch async for ch in early]
    assert len(seen_early) == len(chunks)
    late = await collect(output)  # a new consumer replays only the round the goal kept
    assert [ch.type for ch in late] == ["text-delta", "step-finish", "finish"]
    assert await output.text == "final answer"
    steps = await output.steps
    assert [s.text for s in steps] == ["final answer"]
    assert await output.usage == Usage(input_tokens=12, output_tokens=3)


async def test_goal_without_continue_changes_nothing() -> None:
    goal = decode_chunk({"type": "goal", "runId": R, "from": "AGENT", "payload": {"shouldContinue": False}})
    output = ModelOutput(source([text("a"), goal, step_finish("stop", {}), finish()]), run_id=R)
    assert len(await collect(output)) == 4
    assert await output.text == "a"

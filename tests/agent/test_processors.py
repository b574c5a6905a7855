"""Processors on the agent loop beyond the recordings: every phase's tripwire, retries and their
budget, tool results, API errors, writer, data parts, options and bad input."""

from __future__ import annotations

import logging
from typing import Any

import msgspec
import pytest

from agentstream import Agent, tool
from agentstream.agent import Tripwire
from agentstream.chunks import Chunk, DataChunk, TextDelta, chunk_to_dict
from agentstream.testing import ScriptedModel
from agentstream.tools import ToolContext

USAGE = {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}


def text_step(*deltas: str, reason: str = "stop") -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = [{"type": "text-start", "id": "t"}]
    parts += [{"type": "text-delta", "id": "t", "delta": d} for d in deltas]
    parts += [{"type": "text-end", "id": "t"}, {"type": "finish", "finishReason": reason, "usage": USAGE}]
    return parts


def tool_step(city: str = "Paris") -> list[dict[str, Any]]:
    return [
        {"type": "tool-call", "toolCallId": "c1", "toolName": "weather", "input": f'{{"city": "{city}"}}'},
        {"type": "finish", "finishReason": "tool-calls", "usage": USAGE},
    ]


@tool
async def weather(city: str) -> dict[str, Any]:
    """Weather."""
    return {"city": city, "temperatureC": 21}


def agent(model: ScriptedModel, **kwargs: Any) -> Agent:
    return Agent(id="a", instructions="Be brief.", model=model, tools=[weather], **kwargs)


async def chunks_of(output: Any) -> list[Chunk]:
    return [c async for c in output.full_stream]


def texts(prompt: list[dict[str, Any]]) -> list[str]:
    out = []
    for m in prompt:
        content = m["content"]
        out.append(content if isinstance(content, str) else "".join(p.get("text", "") for p in content))
    return out


class Blocker:
    def __init__(self, pid: str, method: str, *, retry: bool = False, when: str = "") -> None:
        self.id = pid
        self.calls: list[dict[str, Any]] = []
        self.retry, self.when = retry, when
        setattr(self, method, self._hit)

    async def _hit(self, *, abort: Any, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        part = kwargs.get("part")
        if part is not None and not isinstance(part, TextDelta):
            return part
        text = part.payload.text if part is not None else kwargs.get("text") or ""
        if self.when in text:
            abort(f"blocked by {self.id}", retry=self.retry, metadata={"n": len(self.calls)})
        return kwargs.get("part") or kwargs.get("messages")


# ---------------------------------------------------------------------------------------- input


async def test_input_tripwire_is_one_chunk_and_the_model_is_never_called() -> None:
    model = ScriptedModel([text_step("hi")])
    output = agent(model, input_processors=[Blocker("guard", "process_input")]).stream("hello", run_id="r1")
    chunks = await chunks_of(output)
    assert [chunk_to_dict(c) for c in chunks] == [
        {
            "type": "tripwire",
            "runId": "r1",
            "from": "AGENT",
            "payload": {"reason": "blocked by guard", "metadata": {"n": 1}, "processorId": "guard"},
        }
    ]
    assert model.calls == []
    assert output.tripwire is not None and output.tripwire.processor_id == "guard"
    assert await output.text == "" and await output.finish_reason == "other"
    assert output.status == "running"


async def test_process_input_sees_system_messages_apart_and_abort_without_reason() -> None:
    seen: dict[str, Any] = {}

    class Guard:
        id = "guard"

        async def process_input(self, *, messages: Any, system_messages: Any, abort: Any, **_: Any) -> None:
            seen["messages"], seen["system"] = messages, system_messages
            abort()

    output = agent(ScriptedModel([]), input_processors=[Guard()]).stream("hello")
    (chunk,) = await chunks_of(output)
    assert chunk.payload.reason == "Tripwire triggered by guard"
    assert texts(seen["system"]) == ["Be brief."] and texts(seen["messages"]) == ["hello"]


async def test_input_step_and_llm_request_rewrite_each_call_llm_request_only_for_that_call() -> None:
    class StepTagger:
        id = "tagger"

        async def process_input_step(
            self, *, messages: list[dict[str, Any]], step_number: int, **_: Any
        ) -> Any:
            return [*messages, {"role": "user", "content": [{"type": "text", "text": f"step {step_number}"}]}]

        async def process_llm_request(self, *, prompt: list[dict[str, Any]], **_: Any) -> Any:
            return [{"role": "system", "content": "request-only"}, *prompt]

    model = ScriptedModel([tool_step(), text_step("done")])
    output = agent(model, input_processors=[StepTagger()]).stream("hello")
    assert await output.text == "done"
    first, second = (texts(c.prompt) for c in model.calls)
    assert first == ["request-only", "Be brief.", "hello", "step 0"]
    # neither rewrite was kept: the second call starts again from the conversation
    assert second[:3] == ["request-only", "Be brief.", "hello"] and second[-1] == "step 1"
    assert second.count("request-only") == 1 and "step 0" not in second


async def test_input_step_tripwire_ends_the_run_before_that_model_call() -> None:
    class SecondCallGuard:
        id = "second"

        async def process_input_step(self, *, step_number: int, abort: Any, **_: Any) -> None:
            if step_number == 1:
                abort("no second call")

    model = ScriptedModel([tool_step(), text_step("never")])
    output = agent(model, input_processors=[SecondCallGuard()]).stream("hello")
    kinds = [c.type for c in await chunks_of(output)]
    assert kinds[-3:] == ["tool-result", "step-finish", "tripwire"]
    assert len(model.calls) == 1
    assert output.tripwire is not None and output.tripwire.reason == "no second call"


# ---------------------------------------------------------------------------------------- output stream


async def test_stream_tripwire_on_the_first_delta_drops_it_and_ends_the_stream() -> None:
    model = ScriptedModel([text_step("bad", "more")])
    output = agent(model, output_processors=[Blocker("s", "process_output_stream")]).stream("x")
    chunks = await chunks_of(output)
    assert [c.type for c in chunks] == ["start", "step-start", "text-start", "tripwire"]
    assert chunks[-1].run_id is None and chunks[-1].payload.reason == "blocked by s"
    assert await output.text == ""


async def test_stream_processors_chain_in_order_and_drop_ends_the_chain() -> None:
    seen: list[str] = []

    class Upper:
        id = "upper"

        async def process_output_stream(self, *, part: Chunk, **_: Any) -> Chunk | None:
            if isinstance(part, TextDelta):
                if part.payload.text == "drop":
                    return None
                payload = msgspec.structs.replace(part.payload, text=part.payload.text.upper())
                return msgspec.structs.replace(part, payload=payload)
            return part

    class Spy:
        id = "spy"

        async def process_output_stream(
            self, *, part: Chunk, stream_parts: list[Chunk], state: dict[str, Any], **_: Any
        ) -> Chunk:
            state["n"] = state.get("n", 0) + 1
            if isinstance(part, TextDelta):
                seen.append(f"{part.payload.text}:{len(stream_parts)}:{state['n']}")
            return part

    model = ScriptedModel([text_step("a", "drop", "b")])
    output = agent(model, output_processors=[Upper(), Spy()]).stream("x")
    assert await output.text == "AB"
    assert seen == ["A:2:2", "B:3:3"]  # text-start, A, B: the dropped part never reached the spy
    steps = await output.steps
    assert steps[0].text == "AB"
    assert model.calls and (await output.finish_reason) == "stop"


async def test_a_failing_stream_processor_is_logged_and_the_part_kept(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Broken:
        id = "broken"

        async def process_output_stream(self, **_: Any) -> Chunk:
            raise RuntimeError("oops")

    output = agent(ScriptedModel([text_step("a", "b")]), output_processors=[Broken()]).stream("x")
    with caplog.at_level(logging.ERROR, logger="agentstream.processors"):
        assert await output.text == "ab"
    assert "broken" in caplog.text


async def test_writer_streams_data_chunks_before_the_part_and_data_parts_are_opt_in() -> None:
    data_seen: dict[str, list[str]] = {"plain": [], "data": []}

    class Announcer:
        id = "plain"

        async def process_output_stream(self, *, part: Chunk, writer: Any, **_: Any) -> Chunk:
            data_seen["plain"].append(part.type)
            if isinstance(part, TextDelta):
                writer.custom({"type": "data-note", "data": {"saw": part.payload.text}})
            return part

    class DataWatcher:
        id = "data"
        process_data_parts = True

        async def process_output_stream(self, *, part: Chunk, **_: Any) -> Chunk:
            data_seen["data"].append(part.type)
            return part

    @tool
    async def progress(context: ToolContext) -> str:
        """Reports progress as a data part."""
        context.writer.custom({"type": "data-progress", "data": {"pct": 50}})
        return "done"

    model = ScriptedModel(
        [
            [
                {"type": "tool-call", "toolCallId": "c1", "toolName": "progress", "input": "{}"},
                {"type": "finish", "finishReason": "tool-calls", "usage": USAGE},
            ],
            text_step("hi"),
        ]
    )
    a = Agent(id="a", model=model, tools=[progress], output_processors=[Announcer(), DataWatcher()])
    chunks = await chunks_of(a.stream("x"))
    i = next(i for i, c in enumerate(chunks) if isinstance(c, TextDelta))
    assert isinstance(chunks[i - 1], DataChunk) and chunks[i - 1].data == {"saw": "hi"}
    # the tool's data part reached only the processor that opted in
    assert "data-progress" in data_seen["data"] and "data-progress" not in data_seen["plain"]
    assert any(isinstance(c, DataChunk) and c.type == "data-progress" for c in chunks)
    assert data_seen["data"].count("text-delta") == 1


async def test_a_tool_result_chunk_blocked_by_a_stream_processor_ends_the_stream() -> None:
    class NoResults:
        id = "no-results"

        async def process_output_stream(self, *, part: Chunk, abort: Any, **_: Any) -> Chunk:
            if part.type == "tool-result":
                abort()
            return part

    model = ScriptedModel([tool_step(), text_step("never")])
    output = agent(model, output_processors=[NoResults()]).stream("x")
    chunks = await chunks_of(output)
    assert [c.type for c in chunks][-2:] == ["tool-call", "tripwire"]
    assert chunks[-1].payload.reason == "Stream part blocked by no-results"
    assert len(model.calls) == 1


# ---------------------------------------------------------------------------------------- output step


async def test_retry_without_budget_is_a_plain_tripwire(caplog: pytest.LogCaptureFixture) -> None:
    guard = Blocker("g", "process_output_step", retry=True)
    model = ScriptedModel([text_step("first")])
    with caplog.at_level(logging.WARNING, logger="agentstream.processors"):
        output = agent(model, output_processors=[guard]).stream("x")
        assert await output.finish_reason == "tripwire"
    assert "max_processor_retries is not set" in caplog.text
    assert output.tripwire is not None and output.tripwire.retry is True
    # Mastra (llm-execution-step.ts): a denied retry is an abort that leaves the answer in the
    # response messages, and the output's text is the last response message's
    assert await output.text == "first" and len(model.calls) == 1


async def test_retries_are_consecutive_and_bounded_with_one_feedback_message_each() -> None:
    guard = Blocker("g", "process_output_step", retry=True, when="bad")
    model = ScriptedModel([text_step("bad 1"), text_step("bad 2"), text_step("bad 3")])
    output = agent(model, output_processors=[guard], max_processor_retries=2).stream("x")
    chunks = await chunks_of(output)
    finishes = [c.payload.step_result for c in chunks if c.type == "step-finish"]
    assert [f["reason"] for f in finishes] == ["retry", "retry", "tripwire"]
    assert [c["retry_count"] for c in guard.calls] == [0, 1, 2]
    feedback = [t for t in texts(model.calls[2].prompt) if t.startswith("[Processor Feedback]")]
    assert feedback == [
        "[Processor Feedback] Your previous response was not accepted: blocked by g. Please try again with the feedback in mind.",
        "[Processor Feedback] Your previous response was not accepted: blocked by g. Please try again with the feedback in mind.",
    ]
    assert "bad 1" not in " ".join(texts(model.calls[2].prompt))  # rejected answers are rolled back
    # the retried answers are rolled back; the last one, denied, stays (as in Mastra)
    assert await output.finish_reason == "tripwire" and await output.text == "bad 3"
    assert [s.text for s in await output.steps] == ["", "", ""]
    # Mastra's processorRetryCount / processorRetryFeedback on each step-finish and the finish
    wire = [chunk_to_dict(c)["payload"] for c in chunks if c.type in ("step-finish", "finish")]
    assert [w["processorRetryCount"] for w in wire] == [1, 2, 0, 0]
    assert [w.get("processorRetryFeedback") for w in wire] == [feedback[0], feedback[1], None, None]


async def test_retry_count_resets_after_a_step_that_passes() -> None:
    guard = Blocker("g", "process_output_step", retry=True, when="bad")
    model = ScriptedModel([text_step("bad"), tool_step(), text_step("bad"), text_step("good")])
    output = agent(model, output_processors=[guard], max_processor_retries=1).stream("x", max_steps=10)
    assert await output.text == "good"
    assert [c["retry_count"] for c in guard.calls] == [0, 1, 0, 1]
    counts = [
        chunk_to_dict(c)["payload"]["processorRetryCount"]
        for c in await chunks_of(output)
        if c.type == "step-finish"
    ]
    assert counts == [1, 0, 1, 0]


async def test_output_step_sees_the_step_number_tool_calls_and_finish_reason() -> None:
    seen: list[tuple[int, str, list[str]]] = []

    class Watch:
        id = "w"

        async def process_output_step(
            self, *, step_number: int, finish_reason: str, tool_calls: Any, **_: Any
        ) -> None:
            seen.append((step_number, finish_reason, [c["toolName"] for c in tool_calls]))

    await agent(ScriptedModel([tool_step(), text_step("ok")]), output_processors=[Watch()]).generate("x")
    assert seen == [(0, "tool-calls", ["weather"]), (1, "stop", [])]


# ---------------------------------------------------------------------------------------- tool results


async def test_tool_result_processor_replaces_what_is_committed() -> None:
    class Round:
        id = "round"

        async def process_tool_result(self, *, tool_name: str, args: Any, result: Any, **_: Any) -> Any:
            return {**result, "temperatureC": "about 20", "tool": tool_name, "asked": args["city"]}

    model = ScriptedModel([tool_step(), text_step("ok")])
    output = agent(model, output_processors=[Round()]).stream("x")
    (result,) = await output.tool_results
    assert result.payload.result == {
        "city": "Paris",
        "temperatureC": "about 20",
        "tool": "weather",
        "asked": "Paris",
    }
    tool_message = model.calls[1].prompt[-1]
    assert tool_message["content"][0]["output"]["value"]["temperatureC"] == "about 20"


async def test_tool_result_tripwire_is_not_committed_and_ends_the_stream() -> None:
    class Block:
        id = "tool-guard"

        async def process_tool_result(self, *, abort: Any, **_: Any) -> Any:
            abort("tool output withheld")

    model = ScriptedModel([tool_step(), text_step("never")])
    output = agent(model, output_processors=[Block()]).stream("x")
    chunks = await chunks_of(output)
    assert [c.type for c in chunks][-2:] == ["tool-call", "tripwire"]
    assert await output.tool_results == [] and len(model.calls) == 1
    assert output.tripwire is not None and output.tripwire.processor_id == "tool-guard"


# ---------------------------------------------------------------------------------------- output result


async def test_output_result_tripwire_empties_the_result_but_not_the_stream() -> None:
    finished: list[Any] = []
    guard = Blocker("final", "process_output_result")
    output = agent(ScriptedModel([text_step("answer")]), output_processors=[guard]).stream(
        "x", on_finish=finished.append
    )
    kinds = [c.type for c in await chunks_of(output)]
    assert kinds[-2:] == ["step-finish", "finish"] and "tripwire" not in kinds
    assert await output.text == "" and await output.finish_reason == "other"
    assert output.tripwire is not None and output.tripwire.reason == "blocked by final"
    assert finished[0].text == "answer"
    assert (
        guard.calls[0]["result"]["text"] == "answer" and guard.calls[0]["result"]["finish_reason"] == "stop"
    )


# ---------------------------------------------------------------------------------------- API errors


class Retry:
    id = "retry-api"

    def __init__(self) -> None:
        self.errors: list[str] = []

    async def process_api_error(self, *, error: BaseException, retry_count: int, **_: Any) -> dict[str, bool]:
        self.errors.append(f"{error}:{retry_count}")
        return {"retry": True}


async def test_api_error_processor_retries_the_call_and_the_error_is_never_streamed() -> None:
    model = ScriptedModel(
        [{"throws": {"name": "APICallError", "message": "context too long"}}, text_step("ok")]
    )
    processor = Retry()
    output = agent(model, error_processors=[processor]).stream("x")
    chunks = await chunks_of(output)
    assert "error" not in [c.type for c in chunks]
    assert await output.text == "ok" and len(model.calls) == 2
    assert processor.errors == ["context too long:0"]


async def test_api_error_retries_stop_at_the_default_budget_of_three() -> None:
    fail = {"throws": {"name": "APICallError", "message": "no"}}
    model = ScriptedModel([fail, fail, fail, fail, text_step("never")])
    processor = Retry()
    output = agent(model, error_processors=[processor]).stream("x")
    kinds = [c.type for c in await chunks_of(output)]
    assert "error" in kinds and len(model.calls) == 4
    assert processor.errors == ["no:0", "no:1", "no:2"]
    assert output.status == "failed" and str(output.error) == "no"


async def test_api_error_without_error_processors_is_not_retried() -> None:
    model = ScriptedModel([{"throws": {"name": "APICallError", "message": "no"}}, text_step("never")])
    output = agent(model, max_processor_retries=5).stream("x")
    assert "error" in [c.type for c in await chunks_of(output)] and len(model.calls) == 1


# ---------------------------------------------------------------------------------------- options


async def test_call_options_replace_the_agent_processors() -> None:
    agent_level = Blocker("agent-level", "process_input")
    model = ScriptedModel([text_step("ok")])
    a = agent(model, input_processors=[agent_level])
    output = a.stream("x", input_processors=[])  # the call's list replaces the agent's, even empty
    assert await output.text == "ok" and output.tripwire is None and not agent_level.calls
    model = ScriptedModel([text_step("ok")])
    a = agent(model, input_processors=[agent_level])
    call_level = Blocker("call-level", "process_input", when="never-matches")
    output = a.stream("x", input_processors=[call_level])
    assert await output.text == "ok" and call_level.calls and not agent_level.calls


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"input_processors": "guard"}, "input_processors must be a list of processors, got str"),
        ({"output_processors": [object()]}, r"output_processors\[0\]: a processor needs a non-empty str id"),
        (
            {"input_processors": [Blocker("b", "process_output_stream")]},
            r"input_processors\[0\] \('b'\) has none of",
        ),
        ({"max_processor_retries": -1}, "max_processor_retries must be an int >= 0 or None, got -1"),
    ],
)
def test_bad_processor_configuration_is_named(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises((TypeError, ValueError), match=message):
        agent(ScriptedModel([]), **kwargs)


def test_tripwire_data_is_mastras_json() -> None:
    trip = Tripwire("r", retry=True, metadata={"a": 1}, processor_id="p")
    assert trip.data() == {"reason": "r", "retry": True, "metadata": {"a": 1}, "processorId": "p"}
    assert Tripwire("r").data() == {"reason": "r"}


async def test_output_step_messages_are_the_conversation_with_the_answer() -> None:
    seen: list[list[str]] = []

    class Watch:
        id = "w"

        async def process_output_step(self, *, messages: list[dict[str, Any]], **_: Any) -> None:
            seen.append([m["role"] for m in messages])

    await agent(ScriptedModel([tool_step(), text_step("ok")]), output_processors=[Watch()]).generate("x")
    assert seen == [["user", "assistant"], ["user", "assistant", "tool", "assistant"]]


async def test_processors_get_the_runs_abort_signal_and_the_writer() -> None:
    from agentstream._abort import AbortController, AbortSignal

    seen: list[Any] = []

    class Capture:
        id = "cap"

        async def process_input(self, *, abort_signal: Any, writer: Any, retry_count: int, **_: Any) -> None:
            seen.extend([abort_signal, writer, retry_count])

    controller = AbortController()
    output = agent(ScriptedModel([text_step("ok")]), input_processors=[Capture()]).stream(
        "x", abort_signal=controller.signal
    )
    assert await output.text == "ok"
    signal, writer, retry_count = seen
    assert isinstance(signal, AbortSignal) and not signal.aborted and retry_count == 0
    controller.abort()
    assert signal.aborted  # the run's signal follows the caller's
    assert callable(writer.custom)


async def test_chunks_written_in_other_phases_are_streamed() -> None:
    class Notes:
        id = "notes"

        async def process_input(self, *, writer: Any, **_: Any) -> None:
            writer.custom({"type": "data-note", "data": "input checked"})

        async def process_output_result(self, *, writer: Any, result: dict[str, Any], **_: Any) -> None:
            writer.custom({"type": "data-note", "data": f"result has {len(result['text'])} characters"})

    a = Agent(
        id="a",
        model=ScriptedModel([text_step("hello")]),
        input_processors=[Notes()],
        output_processors=[Notes()],
    )
    chunks = await chunks_of(a.stream("x"))
    notes = [(i, c.data) for i, c in enumerate(chunks) if isinstance(c, DataChunk)]
    kinds = [c.type for c in chunks]
    assert [n for _, n in notes] == ["input checked", "result has 5 characters"]
    assert notes[0][0] < kinds.index("text-delta") and kinds[notes[1][0] + 1] == "finish"

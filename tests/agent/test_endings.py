"""The endings table (docs/architecture.md, "Endings"): every way a run ends, and what the output
reads after it (status, finish reason, text, tripwire, the last chunks, whether ``on_finish`` ran).

Each row is Mastra's behaviour: recorded (``tests/data/conformance/agent/<vector>``) where a
vector exists, else read from its source (``packages/core/src/stream/base/output.ts``,
``loop/workflows/agentic-execution/llm-execution-step.ts``), as the row's ``source`` says.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest

from agentstream import Agent, tool
from agentstream._abort import AbortController
from agentstream.chunks import chunk_to_dict
from agentstream.testing import ScriptedModel
from tests.agent.test_deadlines import FakeClock, HangingModel, _run_on

USAGE = {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}


def _text(*deltas: str) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = [{"type": "text-start", "id": "t"}]
    parts += [{"type": "text-delta", "id": "t", "delta": d} for d in deltas]
    return [
        *parts,
        {"type": "text-end", "id": "t"},
        {"type": "finish", "finishReason": "stop", "usage": USAGE},
    ]


def _call() -> list[dict[str, Any]]:
    return [
        {"type": "tool-call", "toolCallId": "c1", "toolName": "weather", "input": '{"city": "Paris"}'},
        {"type": "finish", "finishReason": "tool-calls", "usage": USAGE},
    ]


@tool
async def weather(city: str) -> dict[str, Any]:
    """Weather."""
    return {"city": city}


class Guard:
    """Blocks in one phase, on the word ``bad``."""

    id = "guard"

    def __init__(self, phase: str, *, retry: bool = False) -> None:
        self.phase = phase
        self.retry = retry

    async def process_input(self, *, messages: Any, abort: Any, **_: Any) -> None:
        if self.phase == "input":
            abort("no input")

    async def process_input_step(self, *, step_number: int, abort: Any, **_: Any) -> None:
        if self.phase == "input-step" and step_number == 1:
            abort("no second call")

    async def process_output_stream(self, *, part: Any, abort: Any, **_: Any) -> Any:
        if self.phase == "output-stream" and part.type == "text-delta" and "bad" in part.payload.text:
            abort("no bad words")
        return part

    async def process_output_step(self, *, text: str, abort: Any, **_: Any) -> None:
        if self.phase == "output-step" and "bad" in text:
            abort("no bad answers", retry=self.retry)

    async def process_tool_result(self, *, result: Any, abort: Any, **_: Any) -> Any:
        if self.phase == "tool-result":
            abort("no results")
        return result

    async def process_output_result(self, *, abort: Any, **_: Any) -> None:
        if self.phase == "result":
            abort("no result")


@dataclass(frozen=True)
class Row:
    """One ending and what the output reads after it."""

    status: str
    finish_reason: str | None
    """``None``: the result rejects (the run failed)."""
    text: str | None
    tripwire: str | None
    """The tripwire's reason, if any."""
    last: tuple[str, ...]
    """The stream's last chunk types."""
    on_finish: bool
    source: str


async def _finished() -> Any:
    return Agent(id="a", model=ScriptedModel([_text("all ", "good")])), {}


async def _failed_step() -> Any:
    return Agent(id="a", model=ScriptedModel([{"throws": {"name": "APICallError", "message": "down"}}])), {}


async def _aborted() -> Any:
    ctrl = AbortController()
    model = HangingModel()
    asyncio.get_running_loop().call_later(0.05, ctrl.abort)
    return Agent(id="a", model=model), {"abort_signal": ctrl.signal}


def _guarded(phase: str, steps: list[Any], **kw: Any) -> Callable[[], Awaitable[Any]]:
    async def make() -> Any:
        guard = Guard(phase, retry=kw.pop("retry", False))
        agent = Agent(
            id="a",
            model=ScriptedModel(steps),
            tools=[weather],
            input_processors=[guard],
            output_processors=[guard],
            **kw,
        )
        return agent, {}

    return make


async def _suspended() -> Any:
    return Agent(id="a", model=ScriptedModel([_call()]), tools=[weather], require_tool_approval=True), {}


ENDINGS: dict[str, tuple[Callable[[], Awaitable[Any]], Row]] = {
    "finished": (
        _finished,
        Row("success", "stop", "all good", None, ("step-finish", "finish"), True, "text-deltas.json"),
    ),
    "failed-step": (
        _failed_step,
        Row("failed", "error", "", None, ("error", "step-finish", "finish"), False, "model-throws.json"),
    ),
    "aborted": (
        _aborted,
        Row(
            "canceled", "aborted", "partial", None, ("abort", "finish"), False, "abort-after-first-delta.json"
        ),
    ),
    "tripwire-input": (
        _guarded("input", [_text("never")]),
        Row("running", "other", "", "no input", ("tripwire",), False, "output.ts 'tripwire' case"),
    ),
    "tripwire-input-step": (
        _guarded("input-step", [_call(), _text("never")]),
        Row("running", "other", "", "no second call", ("step-finish", "tripwire"), False, "output.ts"),
    ),
    "tripwire-output-stream": (
        _guarded("output-stream", [_text("fine, ", "bad", " rest")]),
        Row(
            "running",
            "other",
            "fine, ",
            "no bad words",
            ("text-delta", "tripwire"),
            False,
            "output-processor-tripwire-second-step.json",
        ),
    ),
    "tripwire-output-step": (
        _guarded("output-step", [_call(), _text("a bad answer")]),
        Row(
            "success",
            "tripwire",
            "a bad answer",
            "no bad answers",
            ("step-finish", "finish"),
            True,
            "llm-execution-step.ts; output.ts 'finish' case (last response message)",
        ),
    ),
    "tripwire-output-step-with-tool-call": (
        _guarded(
            "output-step", [[{"type": "text-delta", "id": "t", "delta": "bad "}, *_call()], _text("no")]
        ),
        Row(
            "success",
            "tripwire",
            "",
            "no bad answers",
            ("step-finish", "finish"),
            True,
            "output-processor-step-tripwire.json",
        ),
    ),
    "tripwire-output-step-retry-denied": (
        _guarded("output-step", [_text("a bad answer")], retry=True),
        Row(
            "success",
            "tripwire",
            "a bad answer",
            "no bad answers",
            ("step-finish", "finish"),
            True,
            "llm-execution-step.ts (retry without max_processor_retries: an abort)",
        ),
    ),
    "tripwire-tool-result": (
        _guarded("tool-result", [_call(), _text("never")]),
        Row("running", "other", "", "no results", ("tool-call", "tripwire"), False, "output.ts"),
    ),
    "tripwire-result": (
        _guarded("result", [_text("the answer")]),
        Row(
            "success",
            "other",
            "",
            "no result",
            ("step-finish", "finish"),
            True,
            "output-processor-result-retry.json",
        ),
    ),
    "suspended": (
        _suspended,
        Row(
            "suspended",
            "suspended",
            "",
            None,
            ("tool-call", "tool-call-approval"),
            False,
            "tool-approval-required.json",
        ),
    ),
}


async def _read(output: Any) -> tuple[list[str], Any, Any]:
    types: list[str] = []
    async for chunk in output.full_stream:
        types.append(chunk_to_dict(chunk)["type"])
    try:
        reason = await output.finish_reason
    except Exception:
        reason = None
    try:
        text = await output.text
    except Exception:
        text = None
    return types, reason, text


@pytest.mark.parametrize("name", list(ENDINGS))
async def test_every_ending_reads_as_its_row(name: str) -> None:
    make, row = ENDINGS[name]
    agent, options = await make()
    finished: list[Any] = []
    output = agent.stream("question", on_finish=finished.append, **options)
    types, reason, text = await _read(output)
    tripwire = output.tripwire.reason if output.tripwire is not None else None
    observed = (output.status, reason, text, tripwire, tuple(types[-len(row.last) :]), bool(finished))
    assert observed == (row.status, row.finish_reason, row.text, row.tripwire, row.last, row.on_finish)


async def test_total_timeout_ends_with_the_error_alone() -> None:
    clock = FakeClock()
    output = Agent(id="a", model=HangingModel()).stream(
        "hi", sleep=clock.sleep, model_settings={"timeout": {"total_ms": 1000}}
    )
    chunks = await _run_on(clock, output, 1.0)
    types = [c["type"] for c in chunks]
    assert types[-1] == "error" and "step-finish" not in types and "finish" not in types
    assert output.status == "failed"
    with pytest.raises(Exception, match="total timeout of 1000 ms exceeded"):
        await output.text

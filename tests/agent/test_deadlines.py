"""The loop's timers (``model_settings.timeout``) on an injected clock: no wall-clock waits."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from agentstream._abort import AbortController
from agentstream.agent import Agent
from agentstream.agent._deadlines import Deadlines, LoopClock, StepTimeoutError
from agentstream.chunks import chunk_to_dict
from agentstream.models import CallOptions, StreamPart
from agentstream.testing import FakeClock


class HangingModel:
    """Sends ``stream-start`` (and optionally some text), then waits until the call is aborted."""

    specification_version = "v2"
    provider = "hang"
    model_id = "hang-1"

    def __init__(self, *, first: bool = True, then: list[StreamPart] | None = None) -> None:
        self.first = first
        self.then = then
        self.calls = 0

    async def do_stream(self, options: CallOptions) -> AsyncIterator[StreamPart]:
        self.calls += 1
        signal = options["abort_signal"]
        assert signal is not None
        if self.then is not None and self.calls > 1:
            for part in self.then:
                yield part
            return
        if self.first:
            yield {"type": "stream-start", "warnings": []}
            yield {"type": "text-start", "id": "t"}
            yield {"type": "text-delta", "id": "t", "delta": "partial"}
        await signal.wait()
        signal.throw_if_aborted()


async def _run_on(clock: FakeClock, output: Any, seconds: float) -> list[dict[str, Any]]:
    chunks: list[dict[str, Any]] = []

    async def consume() -> None:
        async for chunk in output.full_stream:
            chunks.append(chunk_to_dict(chunk))

    task = asyncio.ensure_future(consume())
    for _ in range(5):
        await asyncio.sleep(0)
    await clock.advance(seconds)
    await asyncio.wait_for(task, 5)  # a safety net only: fake time drives the run
    return chunks


def _agent(model: Any) -> Agent:
    return Agent(id="a", model=model)


async def test_step_timeout_fires_on_fake_time_and_the_run_goes_on() -> None:
    clock = FakeClock()
    done = [
        {"type": "text-start", "id": "u"},
        {"type": "text-delta", "id": "u", "delta": "ok"},
        {"type": "text-end", "id": "u"},
        {"type": "finish", "finishReason": "stop", "usage": {}},
    ]
    model = HangingModel(then=done)
    output = _agent(model).stream(
        "hi", sleep=clock.sleep, clock=clock.now_ms, model_settings={"timeout": {"step_ms": 1500}}
    )
    chunks = await _run_on(clock, output, 1.5)
    types = [c["type"] for c in chunks]
    assert types[:5] == ["start", "step-start", "text-start", "text-delta", "error"]
    assert chunks[4]["payload"]["error"]["message"] == "step timeout of 1500 ms exceeded"
    finish = next(c for c in chunks if c["type"] == "step-finish")
    assert finish["payload"]["stepResult"]["reason"] == "error"
    assert model.calls == 1  # a step error ends the run (nothing continues after an errored step)


async def test_first_chunk_timeout_names_the_limit() -> None:
    clock = FakeClock()
    output = _agent(HangingModel(first=False)).stream(
        "hi",
        sleep=clock.sleep,
        model_settings={"timeout": {"firstChunkMs": 200}},  # Mastra's name works too
    )
    chunks = await _run_on(clock, output, 0.2)
    errors = [c for c in chunks if c["type"] == "error"]
    assert [e["payload"]["error"]["message"] for e in errors] == ["no first chunk within 200 ms"]


async def test_total_timeout_fails_the_run_without_finish() -> None:
    clock = FakeClock()
    output = _agent(HangingModel()).stream(
        "hi", sleep=clock.sleep, model_settings={"timeout": {"total_ms": 3000}}
    )
    chunks = await _run_on(clock, output, 3.0)
    assert [c["type"] for c in chunks][-1] == "error"
    assert "step-finish" not in [c["type"] for c in chunks] and "finish" not in [c["type"] for c in chunks]
    assert chunks[-1]["payload"]["error"]["message"] == "total timeout of 3000 ms exceeded"


async def test_timers_are_cancelled_with_the_run() -> None:
    clock = FakeClock()
    user = AbortController()
    deadlines = Deadlines(
        {"total_ms": 10, "step_ms": 10, "first_chunk_ms": 10}, LoopClock(sleep=clock.sleep), user.signal
    )
    step = deadlines.step()
    step.close()
    deadlines.close()
    await clock.advance(1)
    assert not step.signal.aborted and not deadlines.total_expired


def test_classify() -> None:
    user = AbortController()
    deadlines = Deadlines(None, LoopClock(), user.signal)
    step = deadlines.step()
    exc = ValueError("boom")
    assert step.classify(exc) == (False, None, exc)
    step.ctrl.abort(StepTimeoutError("step"))
    aborted, timed_out, _ = step.classify(exc)
    assert not aborted and isinstance(timed_out, TimeoutError) and str(timed_out) == "step"
    own = TimeoutError("own")
    assert step.classify(own)[1] is own
    user.abort()
    assert step.classify(exc)[0] is True

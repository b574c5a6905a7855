"""The durable-execution seam (`create_run(checkpoint=...)`) with an in-memory checkpoint: a re-run
of the same run replays what was recorded (no completed step runs again, the same chunks come out,
the state comes back) and runs only what was not; slot order does not depend on timing."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from agentstream import Mastra
from agentstream.chunks import chunk_to_dict
from agentstream.workflows import RecordedStepError, Slot, StepContext, create_step, create_workflow

_VOLATILE = {"stepCallId", "startedAt", "endedAt", "suspendedAt", "resumedAt", "timestamp"}


class MemoryCheckpoint:
    """Slots numbered in reservation order; a slot with a record returns it without running."""

    def __init__(self, records: dict[int, Any] | None = None, *, stop_after: int | None = None) -> None:
        self.records: dict[int, Any] = records if records is not None else {}
        self.names: list[str] = []
        self.stop_after = stop_after  # simulate a crash: slots from this number on never complete

    def reserve(self, name: str) -> Slot:
        number = len(self.names)
        self.names.append(name)

        async def run(body: Callable[[], Awaitable[Any]]) -> Any:
            if number in self.records:
                return copy.deepcopy(self.records[number])
            value = await body()
            if self.stop_after is None or number < self.stop_after:
                self.records[number] = json.loads(json.dumps(value))  # what a database would keep
            return value

        return run

    async def sleep(self, seconds: float) -> None:
        self.reserve("sleep")


def _clean(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items() if k not in _VOLATILE}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def _build(calls: list[str]) -> Mastra:
    async def first(c: StepContext) -> Any:
        calls.append("first")
        c.writer.custom({"type": "data-note", "data": {"from": "first"}})
        c.writer.write({"progress": 1})
        c.set_state({"seen": ["first"]})
        return {"n": c.input_data["n"] + 1}

    def double(c: StepContext) -> Any:
        calls.append(f"double {c.input_data}")
        return c.input_data * 2

    async def branch(c: StepContext) -> Any:
        calls.append(f"branch {c.step_id}")
        await asyncio.sleep(0.01 if c.step_id == "left" else 0)  # finishes after its sibling
        return {"side": c.step_id, "state": c.state}

    def to_items(c: StepContext) -> Any:
        return [1, 2, 3, 4]

    def last(c: StepContext) -> Any:
        calls.append("last")
        return {"items": c.input_data, "state": c.state}

    workflow = (
        create_workflow(id="w")
        .then(create_step(id="first", execute=first))
        .parallel([create_step(id="left", execute=branch), create_step(id="right", execute=branch)])
        .map(to_items, id="items")
        .foreach(create_step(id="double", execute=double), concurrency=2)
        .sleep(1)
        .then(create_step(id="last", execute=last))
        .commit()
    )
    return Mastra(workflows={"w": workflow})


async def _run(mastra: Mastra, checkpoint: MemoryCheckpoint, run_id: str) -> tuple[list[Any], Any]:
    run = await mastra.get_workflow("w").create_run(run_id, checkpoint=checkpoint, sleep=_no_sleep)
    output = run.stream(input_data={"n": 1})
    chunks = [_clean(chunk_to_dict(c)) async for c in output.full_stream]
    return chunks, (await output.result).to_dict()


def _without_run_id(chunks: list[Any]) -> list[Any]:
    return json.loads(json.dumps(chunks).replace('"r2-uninterrupted"', '"r2"'))


async def _no_sleep(_seconds: float) -> None:
    return None


async def test_a_replay_runs_no_recorded_step_and_streams_the_same_chunks() -> None:
    calls: list[str] = []
    mastra = _build(calls)
    first_time = MemoryCheckpoint()
    chunks, result = await _run(mastra, first_time, "r1")
    assert result["status"] == "success"
    assert result["result"] == {"items": [2, 4, 6, 8], "state": {"seen": ["first"]}}
    ran_once = list(calls)
    calls.clear()
    # The same run again (the run's snapshot now says it ran): everything comes from the records.
    again = MemoryCheckpoint(first_time.records)
    chunks_again, result_again = await _run(mastra, again, "r1")
    assert calls == []
    assert chunks_again == chunks
    assert _clean(result_again) == _clean(result)
    assert again.names == first_time.names  # the same slots, in the same order
    assert ran_once.count("first") == 1 and len(ran_once) == 8


async def test_a_re_run_after_a_crash_runs_only_what_was_not_recorded() -> None:
    calls: list[str] = []
    mastra = _build(calls)
    crashed = MemoryCheckpoint(stop_after=3)  # load, first, left: recorded; the rest was in flight
    await _run(mastra, crashed, "r2")
    calls.clear()
    again = MemoryCheckpoint(crashed.records)
    chunks, result = await _run(mastra, again, "r2")
    assert "first" not in calls and "branch left" not in calls
    assert "branch right" in calls and "last" in calls
    # The state `first` set came from its record.
    assert result["result"]["state"] == {"seen": ["first"]}
    assert [c["data"] for c in chunks if c["type"] == "data-note"] == [{"from": "first"}]
    # Chunk for chunk what an uninterrupted run of the same input streams (no chunk twice or lost).
    reference, _ = await _run(mastra, MemoryCheckpoint(), "r2-uninterrupted")
    assert _without_run_id(chunks) == _without_run_id(reference)


async def test_a_recorded_failure_and_suspension_replay_as_they_happened() -> None:
    attempts: list[str] = []

    async def flaky(c: StepContext) -> Any:
        attempts.append("flaky")
        raise ValueError("the upstream said no")

    async def ask(c: StepContext) -> Any:
        attempts.append("ask")
        return await c.suspend({"question": "ok?"})

    failing = create_workflow(id="f").then(create_step(id="flaky", execute=flaky)).commit()
    asking = create_workflow(id="a").then(create_step(id="ask", execute=ask)).commit()
    mastra = Mastra(workflows={"f": failing, "a": asking})
    for key in ("f", "a"):
        first_time = MemoryCheckpoint()
        run = await mastra.get_workflow(key).create_run(f"{key}1", checkpoint=first_time)
        first = await run.start(input_data={})
        replay = await mastra.get_workflow(key).create_run(
            f"{key}1", checkpoint=MemoryCheckpoint(first_time.records)
        )
        again = await replay.start(input_data={})
        assert again.status == first.status
        if key == "f":
            assert isinstance(again.error, RecordedStepError)
            assert (again.error.name, str(again.error)) == ("ValueError", "the upstream said no")
        else:
            assert again.suspend_payload == {"ask": {"question": "ok?"}}
    assert attempts == ["flaky", "ask"]


@pytest.mark.parametrize("concurrency", [1, 3])
async def test_foreach_slots_follow_the_items_not_their_finishing_order(concurrency: int) -> None:
    async def slow_first(c: StepContext) -> Any:
        await asyncio.sleep(0.02 if c.input_data == 0 else 0)
        return c.input_data * 10

    workflow = (
        create_workflow(id="fe")
        .foreach(create_step(id="times", execute=slow_first), concurrency=concurrency)
        .commit()
    )
    mastra = Mastra(workflows={"fe": workflow})
    checkpoint = MemoryCheckpoint()
    run = await mastra.get_workflow("fe").create_run("fe1", checkpoint=checkpoint)
    result = await run.start(input_data=[0, 1, 2, 3])
    assert result.result == [0, 10, 20, 30]
    # Slot 0 is the snapshot load, slot 1 the foreach entry's own; item i's record is slot 2 + i.
    assert [checkpoint.records[2 + i]["output"] for i in range(4)] == [0, 10, 20, 30]

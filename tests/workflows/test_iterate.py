"""The `foreach` and `sleep` entries (`_iterate`): item order, concurrency, progress, the chunks Mastra
streams for them, the injected sleep."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

from agentstream.chunks import (
    WorkflowStepProgress,
    WorkflowStepResult,
    WorkflowStepWaiting,
    chunk_to_dict,
)
from agentstream.workflows import (
    StepContext,
    create_step,
    create_workflow,
)

from ._support import add, chunks_of


async def test_foreach_keeps_item_order_reports_progress_and_respects_concurrency() -> None:
    running = 0
    peak = 0

    async def slow_double(c: StepContext) -> Any:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        running -= 1
        return c.input_data * 2

    wf = (
        create_workflow(id="f").foreach(create_step(id="double", execute=slow_double), concurrency=3).commit()
    )
    run = await wf.create_run()
    output = run.stream(input_data=list(range(10)))
    chunks = await chunks_of(output)
    progress = [c for c in chunks if isinstance(c, WorkflowStepProgress)]
    assert [p.payload.completed_count for p in progress] == list(range(1, 11))
    assert all(p.payload.total_count == 10 for p in progress)
    assert (await output.result).result == [i * 2 for i in range(10)]
    assert peak == 3


async def test_foreach_streams_one_start_and_one_bare_result_for_the_whole_list() -> None:
    # Mastra's executeForeach (handlers/control-flow.ts): items run with skipEmits; the start has no
    # stepCallId, the result no payload or startedAt; every progress names the step.
    wf = (
        create_workflow(id="fe").foreach(create_step(id="twice", execute=lambda c: c.input_data * 2)).commit()
    )
    run = await wf.create_run("r", clock=lambda: 5)
    chunks = [chunk_to_dict(c) for c in await chunks_of(run.stream(input_data=[1, 2]))]
    assert [c["type"] for c in chunks] == [
        "workflow-start",
        "workflow-step-start",
        "workflow-step-progress",
        "workflow-step-progress",
        "workflow-step-result",
        "workflow-finish",
    ]
    assert chunks[1]["payload"] == {
        "stepName": "twice",
        "id": "twice",
        "payload": [1, 2],
        "startedAt": 5,
        "status": "running",
    }
    assert chunks[2]["payload"] == {
        "stepName": "twice",
        "id": "twice",
        "completedCount": 1,
        "totalCount": 2,
        "currentIndex": 0,
        "iterationStatus": "success",
        "iterationOutput": 2,
    }
    assert chunks[4]["payload"] == {
        "stepName": "twice",
        "id": "twice",
        "status": "success",
        "output": [2, 4],
        "endedAt": 5,
    }


async def test_foreach_item_failure_fails_the_step_and_needs_a_list() -> None:
    def check(c: StepContext) -> Any:
        if c.input_data == 2:
            raise ValueError("two is not allowed")
        return c.input_data

    wf = create_workflow(id="f2").foreach(create_step(id="check", execute=check)).commit()
    result = await (await wf.create_run()).start(input_data=[1, 2, 3])
    assert result.status == "failed" and str(result.error) == "two is not allowed"
    result = await (await wf.create_run()).start(input_data={"not": "a list"})
    assert result.status == "failed" and "must be a list, got dict" in str(result.error)


async def test_sleep_passes_the_data_through_and_waits_with_the_injected_sleep() -> None:
    waits: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        waits.append(seconds)

    past = datetime.now(UTC) - timedelta(days=1)
    wf = (
        create_workflow(id="s")
        .then(add(1))
        .sleep(250)
        .sleep(lambda c: c.input_data["value"] * 100)
        .sleep_until(past)
        .then(add(2))
        .commit()
    )
    run = await wf.create_run(clock=lambda: datetime.now(UTC).timestamp() * 1000, sleep=fake_sleep)
    output = run.stream(input_data={"value": 1})
    chunks = await chunks_of(output)
    assert waits == [0.25, 0.2]
    waiting = [chunk_to_dict(c)["payload"] for c in chunks if isinstance(c, WorkflowStepWaiting)]
    assert len(waiting) == 3 and all(w["stepName"] == w["id"] for w in waiting)
    # Mastra's sleep result (handlers/entry.ts) is bare: {id, endedAt, status, output}
    sleeps = [
        chunk_to_dict(c)["payload"]
        for c in chunks
        if isinstance(c, WorkflowStepResult) and c.payload.id.startswith("sleep_")
    ]
    assert [sorted(p) for p in sleeps] == [["endedAt", "id", "output", "status", "stepName"]] * 3
    path = (await output.result).step_execution_path
    assert path == ["add-1", *(p["id"] for p in sleeps), "add-2"]  # sleeps are on the path (entry.ts)
    assert (await output.result).result == {"value": 4}

"""Per-step overhead of workflows: a 100-step sequential workflow and a 1,000-item ``foreach`` with
concurrency 10, on in-memory storage and on SQLite, as ratios to a plain loop (and a plain
10-wide ``asyncio`` fan-out) calling the same step functions, measured in the same run.

Run: ``.venv/bin/python bench/bench_workflows.py [ROUNDS]`` (default 5; the best round is reported).
Everything streamed is read, as a client would (``full_stream``), and the result awaited.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from agentstream import Mastra
from agentstream.storage import SQLiteStore, Storage
from agentstream.workflows import StepContext, Workflow, create_step, create_workflow

STEPS = 100
ITEMS = 1000
CONCURRENCY = 10


async def add_one(context: StepContext) -> dict[str, int]:
    return {"value": context.input_data["value"] + 1}


async def double(context: StepContext) -> int:
    await asyncio.sleep(0)  # one real suspension per item, as any I/O-bound step has
    return int(context.input_data) * 2


class _Ctx:
    """The smallest stand-in for a context that the same step functions accept."""

    __slots__ = ("input_data",)

    def __init__(self, input_data: Any) -> None:
        self.input_data = input_data


def sequential() -> Workflow:
    wf = create_workflow(id="seq")
    for i in range(STEPS):
        wf.then(create_step(id=f"s{i}", execute=add_one))
    return wf.commit()


def fan_out() -> Workflow:
    return (
        create_workflow(id="each")
        .foreach(create_step(id="double", execute=double), concurrency=CONCURRENCY)
        .commit()
    )


async def plain_loop() -> float:
    start = time.perf_counter()
    value: Any = {"value": 0}
    for _ in range(STEPS):
        value = await add_one(_Ctx(value))  # type: ignore[arg-type]
    assert value == {"value": STEPS}
    return time.perf_counter() - start


async def plain_fan_out() -> float:
    start = time.perf_counter()
    semaphore = asyncio.Semaphore(CONCURRENCY)
    items = list(range(ITEMS))

    async def one(i: int) -> int:
        async with semaphore:
            return await double(_Ctx(i))  # type: ignore[arg-type]

    results = await asyncio.gather(*(one(i) for i in items))
    assert results[-1] == (ITEMS - 1) * 2
    return time.perf_counter() - start


async def workflow_run(workflow: Workflow, input_data: Any) -> float:
    start = time.perf_counter()
    run = await workflow.create_run()
    output = run.stream(input_data=input_data)
    async for _ in output.full_stream:
        pass
    result = await output.result
    assert result.status == "success", result.error
    return time.perf_counter() - start


async def measure(storage: Storage | None, rounds: int) -> tuple[float, float]:
    seq, each = sequential(), fan_out()
    Mastra(workflows={"seq": seq, "each": each}, storage=storage)
    await workflow_run(seq, {"value": 0})  # warm up (and create the SQLite schema)
    best_seq = min([await workflow_run(seq, {"value": 0}) for _ in range(rounds)])
    best_each = min([await workflow_run(each, list(range(ITEMS))) for _ in range(rounds)])
    return best_seq, best_each


async def main(rounds: int) -> None:
    base_seq = min([await plain_loop() for _ in range(rounds)])
    base_each = min([await plain_fan_out() for _ in range(rounds)])
    print(f"plain loop of {STEPS} steps: {base_seq / STEPS * 1e6:.2f} µs/step")
    print(f"plain {CONCURRENCY}-wide fan-out of {ITEMS} items: {base_each / ITEMS * 1e6:.2f} µs/item")
    with tempfile.TemporaryDirectory() as tmp:
        for name, storage in (("in-memory", None), ("SQLite", SQLiteStore(Path(tmp) / "bench.db"))):
            seq, each = await measure(storage, rounds)
            print(
                f"{name:9s} {STEPS}-step workflow: {seq / STEPS * 1e6:8.2f} µs/step "
                f"(overhead {(seq - base_seq) / STEPS * 1e6:.2f} µs/step, ratio {seq / base_seq:.1f}x)"
            )
            print(
                f"{name:9s} foreach {ITEMS} items x{CONCURRENCY}: {each / ITEMS * 1e6:8.2f} µs/item "
                f"(overhead {(each - base_each) / ITEMS * 1e6:.2f} µs/item, ratio {each / base_each:.1f}x)"
            )
            if storage is not None:
                await storage.close()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 5))

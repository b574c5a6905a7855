"""What the Mastra API's traces and runs cost: keeping spans in storage, and listing stored runs.

Run: ``.venv/bin/python bench/bench_mastra_api.py [RUNS]`` (default 300 agent runs, 2,000 stored
workflow runs). CPU time of this process, best of 3 rounds, each measured against its reference
in the same run:

* spans — ``RUNS`` traced agent runs (a tool call and an answer: 3 spans each) whose spans go to
  a `SpanRecorder` into SQLite (saved, flushed), against the same runs exporting to OpenTelemetry's
  in-memory exporter (the reference: tracing with nothing stored);
* runs — a page of 20 runs of one workflow (``list_workflow_runs``, newest first, among 2,000 in
  SQLite) against 20 single-run reads (``load_workflow_snapshot``, the reference).
"""

from __future__ import annotations

import asyncio
import gc
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentstream.agent import Agent
from agentstream.storage import SQLiteStore, TraceQuery, WorkflowRunQuery
from agentstream.testing import ScriptedModel
from agentstream.tools import tool
from agentstream.tracing import InstrumentationSettings, SpanRecorder, flush_spans

USAGE = {"inputTokens": 3, "outputTokens": 2}


@tool
def weather(city: str) -> dict[str, Any]:
    """The weather in a city."""
    return {"city": city, "temperatureC": 21}


def _steps() -> list[list[dict[str, Any]]]:
    call = {"type": "tool-call", "toolCallId": "c1", "toolName": "weather", "input": '{"city": "Paris"}'}
    text = [
        {"type": "text-start", "id": "t"},
        {"type": "text-delta", "id": "t", "delta": "Sunny."},
        {"type": "text-end", "id": "t"},
    ]
    return [
        [{"type": "stream-start", "warnings": []}, call, {"type": "finish", "finishReason": "tool-calls", "usage": USAGE}],
        [{"type": "stream-start", "warnings": []}, *text, {"type": "finish", "finishReason": "stop", "usage": USAGE}],
    ]  # fmt: skip


async def _runs(n: int, provider: TracerProvider, storage: SQLiteStore | None) -> float:
    settings = InstrumentationSettings(tracer_provider=provider, include_content=True)
    gc.collect()
    start = time.process_time()
    for _ in range(n):
        agent = Agent(id="bench", model=ScriptedModel(_steps()), tools=[weather], instrument=settings)
        await agent.generate("Weather in Paris?")
    if storage is not None:
        await flush_spans(storage)
    return time.process_time() - start


async def spans(n: int, folder: Path) -> None:
    best_ref = best_rec = float("inf")
    for round_ in range(3):
        reference = TracerProvider()
        reference.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))
        best_ref = min(best_ref, await _runs(n, reference, None))
        storage = SQLiteStore(folder / f"spans-{round_}.db")
        recorded = TracerProvider()
        recorded.add_span_processor(SpanRecorder(storage))
        best_rec = min(best_rec, await _runs(n, recorded, storage))
        total = (await storage.list_traces(TraceQuery(per_page=1)))[1]
        assert total == n, total
        await storage.close()
    print(f"spans: {n} traced runs, in-memory exporter {best_ref / n * 1e3:.3f} ms/run (reference), "
          f"SpanRecorder into SQLite {best_rec / n * 1e3:.3f} ms/run: {best_rec / best_ref:.2f}x the reference")  # fmt: skip


async def runs(folder: Path, count: int = 2000) -> None:
    storage = SQLiteStore(folder / "runs.db")
    for i in range(count):
        await storage.persist_workflow_snapshot(
            "wf", f"r{i:05d}", {"status": "success", "runId": f"r{i:05d}"}
        )
    best_ref = best_list = float("inf")
    for _ in range(3):
        gc.collect()
        start = time.process_time()
        for i in range(20):
            await storage.load_workflow_snapshot("wf", f"r{i:05d}")
        best_ref = min(best_ref, time.process_time() - start)
        start = time.process_time()
        page, total = await storage.list_workflow_runs(
            WorkflowRunQuery(workflow_name="wf", page=3, per_page=20)
        )
        best_list = min(best_list, time.process_time() - start)
        assert total == count and len(page) == 20
    await storage.close()
    print(f"runs: a page of 20 among {count} {best_list * 1e3:.3f} ms, 20 single reads {best_ref * 1e3:.3f} ms "
          f"(reference): {best_list / best_ref:.2f}x the reference")  # fmt: skip


async def main(n: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        await spans(n, Path(folder))
        await runs(Path(folder))


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 300))

"""Checkpointed agent runs: the same run in-process (reference) and inside a DBOS workflow.

    .venv/bin/python bench/bench_checkpoint.py [TOKENS]     # deltas of the long answer (default 5000)

Needs scripts/postgres.sh's cluster (or AGENTSTREAM_TEST_PG_DSN); a fresh database is made and
dropped. DBOS runs in this process (as in a worker). Rows, each the best of 7 (the two
measured alternately), same run:

* tokens: one model call streaming TOKENS one-word deltas, read through ``full_stream``: the cost
  of the live step (one queue hop per part, the parts recorded at the end) per token.
* steps: a run of 4 model calls and 3 tool calls (short answers): the cost of 7 recorded steps
  (a PostgreSQL round trip or two each) per run; an empty workflow (start, record, result) is
  measured too, to give the cost per step.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

PG = os.environ.get("AGENTSTREAM_TEST_PG_DSN", "postgresql://postgres@127.0.0.1:54329/postgres")
USAGE = {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}
META = {"type": "response-metadata", "id": "r", "timestamp": {"$date": "2024-05-01T10:00:00.000Z"}}


def _answer(tokens: int) -> list[dict[str, Any]]:
    deltas = [{"type": "text-delta", "id": "t", "delta": "word "} for _ in range(tokens)]
    return [
        {"type": "stream-start", "warnings": []},
        META,
        {"type": "text-start", "id": "t"},
        *deltas,
        {"type": "text-end", "id": "t"},
        {"type": "finish", "finishReason": "stop", "usage": USAGE},
    ]


def _call(i: int) -> list[dict[str, Any]]:
    call = {
        "type": "tool-call",
        "toolCallId": f"c{i}",
        "toolName": "add",
        "input": json.dumps({"a": i, "b": 1}),
    }
    return [
        {"type": "stream-start", "warnings": []},
        META,
        call,
        {"type": "finish", "finishReason": "tool-calls", "usage": USAGE},
    ]


def _agent(script: list[list[dict[str, Any]]]) -> Any:
    from agentstream.agent import Agent
    from agentstream.testing import ScriptedModel
    from agentstream.tools import tool

    @tool
    async def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    return Agent(id="bench", model=ScriptedModel(script), tools=[add], default_options={"max_steps": 10})


async def _consume(script: list[list[dict[str, Any]]]) -> int:
    output = _agent(script).stream("go", clock=lambda: 0.0)
    count = 0
    async for _ in output.full_stream:
        count += 1
    return count


SCRIPTS: dict[str, list[list[dict[str, Any]]]] = {}
"""The workflow's argument is a key: its input is recorded, the script is not what is measured."""


def _workflow() -> Callable[[str], Awaitable[int]]:
    from dbos import DBOS

    @DBOS.workflow(name="bench.checkpoint.run")
    async def run(key: str) -> int:
        return await _consume(SCRIPTS[key]) if key else 0

    async def in_workflow(key: str) -> int:
        handle = await DBOS.start_workflow_async(run, key)
        result: int = await handle.get_result()
        return result

    return in_workflow


async def _best_pair(
    first: Callable[[], Awaitable[Any]], second: Callable[[], Awaitable[Any]], repeat: int = 7
) -> tuple[float, float]:
    """Fastest wall time of each, measured alternately (the shared machine's noise hits both)."""
    best = [float("inf"), float("inf")]
    for _ in range(repeat):
        for i, fn in enumerate((first, second)):
            start = time.perf_counter()
            await fn()
            best[i] = min(best[i], time.perf_counter() - start)
    return best[0], best[1]


async def _bench(tokens: int) -> None:
    in_workflow = _workflow()
    SCRIPTS["tokens"] = [_answer(tokens)]
    SCRIPTS["steps"] = [_call(i) for i in range(3)] + [_answer(5)]
    await in_workflow("steps")  # warm up (DBOS's first workflow opens its connections)
    for name, key, count, unit in (
        ("tokens", "tokens", tokens, "token"),
        ("steps (4 model + 3 tool calls)", "steps", 1, "run"),
    ):
        script = SCRIPTS[key]
        reference, checkpointed = await _best_pair(
            lambda script=script: _consume(script),  # type: ignore[misc]
            lambda key=key: in_workflow(key),  # type: ignore[misc]
        )
        per = 1e6 if unit == "token" else 1e3
        label = "us" if unit == "token" else "ms"
        print(
            f"{name:<32} in-process {reference / count * per:9.2f} {label}/{unit}   "
            f"checkpointed {checkpointed / count * per:9.2f} {label}/{unit}   "
            f"{checkpointed / reference:6.2f}x reference"
        )
        if key == "steps":
            empty, _ = await _best_pair(lambda: in_workflow(""), lambda: asyncio.sleep(0))
            print(
                f"{'  a workflow doing nothing':<32} {empty * 1e3:9.2f} ms/run; so per recorded step "
                f"{(checkpointed - reference - empty) / 7 * 1e3:6.2f} ms"
            )


def main() -> None:
    import psycopg
    from dbos import DBOS

    import agentstream.durable  # noqa: F401  (the checkpoint seam)

    tokens = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    name = f"bench_ckpt_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(PG, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = PG.rpartition("/")[0] + f"/{name}"
    try:
        DBOS(config={"name": "bench-checkpoint", "system_database_url": url})
        DBOS.launch()
        try:
            asyncio.run(_bench(tokens))
        finally:
            DBOS.destroy(workflow_completion_timeout_sec=0)
    finally:
        with psycopg.connect(PG, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


if __name__ == "__main__":
    main()

"""The Mastra of the workflow-run tests, loaded by the servers and by the workers (``--app``): run
snapshots in the PostgreSQL database named by ``AGENTSTREAM_TEST_WORKFLOW_DB``. Each step appends
``<what> <pid>`` to the file named by the run's input ``log``, so a test sees which process ran
what and how often; step two of ``three`` waits until the file named by ``gate`` exists."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from agentstream import Mastra
from agentstream.storage import PostgresStore
from agentstream.workflows import StepContext, create_step, create_workflow

FILES = {
    "type": "object",
    "properties": {"log": {"type": "string"}, "gate": {"type": "string"}},
    "required": ["log", "gate"],
}


def _log(path: str, line: str) -> None:
    with open(path, "a") as f:
        f.write(f"{line} {os.getpid()}\n")


async def one(c: StepContext) -> Any:
    _log(c.input_data["log"], "one")
    c.writer.custom({"type": "data-one", "data": {"pid": os.getpid()}})
    c.set_state({"after": "one"})
    return c.input_data


async def two(c: StepContext) -> Any:
    _log(c.input_data["log"], "two-started")
    while not Path(c.input_data["gate"]).exists():
        await asyncio.sleep(0.02)
    _log(c.input_data["log"], "two")
    return {**c.input_data, "state": c.state}


def three(c: StepContext) -> Any:
    _log(c.input_data["log"], "three")
    return {"done": True, "state": c.input_data["state"]}


async def ask(c: StepContext) -> Any:
    if c.resume_data is None:
        _log(c.input_data["log"], "asked")
        return await c.suspend({"question": "publish?"})
    _log(c.input_data["log"], "answered")
    return {"approved": c.resume_data["approved"], "log": c.input_data["log"]}


def publish(c: StepContext) -> Any:
    _log(c.input_data["log"], "published")
    return {"published": c.input_data["approved"], "pid": os.getpid()}


def mastra() -> Mastra:
    three_steps = (
        create_workflow(id="three", input_schema=FILES)
        .then(create_step(id="one", execute=one))
        .then(create_step(id="two", execute=two))
        .then(create_step(id="three", execute=three))
        .commit()
    )
    approval = (
        create_workflow(id="approval")
        .then(
            create_step(
                id="ask",
                execute=ask,
                resume_schema={
                    "type": "object",
                    "properties": {"approved": {"type": "boolean"}},
                    "required": ["approved"],
                },
            )
        )
        .then(create_step(id="publish", execute=publish))
        .commit()
    )
    # ``three``'s steps two and three as a nested workflow: one DBOS step on a worker.
    inner = (
        create_workflow(id="inner")
        .then(create_step(id="two", execute=two))
        .then(create_step(id="three", execute=three))
        .commit()
    )
    nested = (
        create_workflow(id="nested", input_schema=FILES)
        .then(create_step(id="one", execute=one))
        .then(inner)
        .commit()
    )
    storage = PostgresStore(os.environ["AGENTSTREAM_TEST_WORKFLOW_DB"])
    # ``approval`` as the step of another workflow: its suspension suspends ``review``.
    review = create_workflow(id="review").then(approval).commit()
    workflows = {
        "three": three_steps,
        "approval": approval,
        "nested": nested,
        "inner": inner,
        "review": review,
    }
    return Mastra(workflows=workflows, storage=storage)

"""The workflow vectors' workflows, written in Python per each step's ``behaviour``."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agentstream import Agent
from agentstream.testing import ScriptedModel
from agentstream.workflows import StepContext, Workflow, create_step, create_workflow
from tests.agent.vector_tools import tools_for

FROZEN_MS = 946684800000


class JSError(Exception):
    """A plain JavaScript ``Error``: its wire name is ``Error``."""

    name = "Error"


class JSAbortError(Exception):
    """``fetch``'s abort: an Error whose ``name`` is ``AbortError``."""

    name = "AbortError"


@dataclass
class Harness:
    """What the recording harness did around the run."""

    workflow: Workflow
    running: asyncio.Event = field(default_factory=asyncio.Event)
    cancel_when_running: bool = False
    sleeps: list[float] = field(default_factory=list)


def _schemas(vector: dict[str, Any], step_id: str) -> dict[str, Any]:
    spec = next(s for s in vector["workflow"]["steps"] if s["id"] == step_id)
    out = {"input_schema": spec.get("inputSchema"), "output_schema": spec.get("outputSchema")}
    for key, name in (("suspendSchema", "suspend_schema"), ("resumeSchema", "resume_schema")):
        if key in spec:
            out[name] = spec[key]
    return out


def _workflow(vector: dict[str, Any], **options: Any) -> Workflow:
    spec = vector["workflow"]
    retry = spec.get("retryConfig")
    return create_workflow(
        id=spec["id"],
        input_schema=spec.get("inputSchema"),
        output_schema=spec.get("outputSchema"),
        retry_config=retry,
        **options,
    )


def _step(vector: dict[str, Any], step_id: str, execute: Callable[[StepContext], Any]) -> Any:
    return create_step(id=step_id, execute=execute, **_schemas(vector, step_id))


def _never(ctx: StepContext) -> Any:
    return {"value": -1}


def sequential_then(v: dict[str, Any], h: Harness) -> Workflow:
    return (
        h.workflow.then(_step(v, "add-one", lambda c: {"value": c.input_data["value"] + 1}))
        .then(
            _step(
                v,
                "describe",
                lambda c: {"doubled": c.input_data["value"] * 2, "label": f"value={c.input_data['value']}"},
            )
        )
        .commit()
    )


def bail_early(v: dict[str, Any], h: Harness) -> Workflow:
    return (
        h.workflow.then(_step(v, "gate", lambda c: c.bail({"value": c.input_data["value"] * 6})))
        .then(_step(v, "never", _never))
        .commit()
    )


def branch(v: dict[str, Any], h: Harness) -> Workflow:
    async def collect(c: StepContext) -> Any:
        # Python has no `undefined`: the branch output holds only the branches that ran.
        data = c.input_data
        return {"branches": list(data), "total": sum(x["value"] for x in data.values())}

    return (
        h.workflow.branch(
            [
                (lambda c: c.input_data["value"] < 0, _step(v, "negative", lambda c: {"value": 0})),
                (
                    lambda c: c.input_data["value"] > 5,
                    _step(v, "big", lambda c: {"value": c.input_data["value"] * 100}),
                ),
                (
                    lambda c: c.input_data["value"] % 2 == 1,
                    _step(v, "odd", lambda c: {"value": c.input_data["value"] + 1}),
                ),
            ]
        )
        .then(_step(v, "collect", collect))
        .commit()
    )


def cancel_during_step(v: dict[str, Any], h: Harness) -> Workflow:
    async def long_task(c: StepContext) -> Any:
        h.running.set()
        await c.abort_signal.wait()
        return {"value": c.input_data["value"], "aborted": c.abort_signal.aborted}

    h.cancel_when_running = True
    return h.workflow.then(_step(v, "long-task", long_task)).then(_step(v, "never", _never)).commit()


def cancel_step_throws(v: dict[str, Any], h: Harness) -> Workflow:
    async def fetch_like(c: StepContext) -> Any:
        h.running.set()
        await c.abort_signal.wait()
        raise JSAbortError("This operation was aborted")

    h.cancel_when_running = True
    return h.workflow.then(_step(v, "fetch-like", fetch_like)).then(_step(v, "never", _never)).commit()


def _increment(c: StepContext) -> Any:
    return {"value": c.input_data["value"] + 1}


def dountil_loop(v: dict[str, Any], h: Harness) -> Workflow:
    return h.workflow.dountil(
        _step(v, "increment", _increment), lambda c: c.input_data["value"] >= 3
    ).commit()


def dowhile_loop(v: dict[str, Any], h: Harness) -> Workflow:
    return h.workflow.dowhile(_step(v, "increment", _increment), lambda c: c.input_data["value"] < 3).commit()


def invalid_step_output(v: dict[str, Any], h: Harness) -> Workflow:
    return (
        h.workflow.then(_step(v, "sloppy", lambda c: {"value": "not a number"}))
        .then(_step(v, "strict", _increment))
        .commit()
    )


def step_retries(v: dict[str, Any], h: Harness) -> Workflow:
    calls = [0]

    def flaky(c: StepContext) -> Any:
        calls[0] += 1
        if calls[0] < 3:
            raise JSError(f"Transient failure {calls[0]}")
        return {"value": c.input_data["value"], "attempts": 3}

    return h.workflow.then(_step(v, "flaky", flaky)).commit()


def step_throws(v: dict[str, Any], h: Harness) -> Workflow:
    def boom(c: StepContext) -> Any:
        raise JSError(f"Boom at value {c.input_data['value']}")

    return (
        h.workflow.then(_step(v, "ok", _increment))
        .then(_step(v, "boom", boom))
        .then(_step(v, "never", _never))
        .commit()
    )


def step_writer_output(v: dict[str, Any], h: Harness) -> Workflow:
    async def export(c: StepContext) -> Any:
        c.writer.write({"stage": "started", "job": c.input_data["job"]})
        c.writer.write({"stage": "halfway", "percent": 50})
        c.writer.write({"type": "data-wrapped", "data": {"via": "write"}})
        c.writer.custom({"type": "data-progress", "data": {"percent": 100}, "id": "progress-1"})
        c.writer.custom({"type": "data-notice", "data": {"text": "almost done"}, "transient": True})
        return {"job": c.input_data["job"], "status": "complete"}

    return h.workflow.then(_step(v, "export", export)).commit()


def suspend_resume(v: dict[str, Any], h: Harness) -> Workflow:
    async def approve(c: StepContext) -> Any:
        if c.resume_data is None:
            c.writer.write({"phase": "before-suspend"})
            return await c.suspend({"question": f"Approve value {c.input_data['value']}?"})
        c.writer.write({"phase": "after-resume"})
        c.writer.custom({"type": "data-approval", "data": {"approved": c.resume_data["approved"]}})
        return {"value": c.input_data["value"], "approved": c.resume_data["approved"]}

    def finalize(c: StepContext) -> Any:
        return {
            "message": ("approved" if c.input_data["approved"] else "rejected") + f" {c.input_data['value']}"
        }

    return h.workflow.then(_step(v, "approve", approve)).then(_step(v, "finalize", finalize)).commit()


def agent_step(v: dict[str, Any], h: Harness) -> Workflow:
    spec = v["agents"][0]
    agent = Agent(
        id=spec["id"],
        name=spec["name"],
        instructions=spec["instructions"],
        model=ScriptedModel(v["modelSteps"]),
        tools=tools_for({"agent": spec}),
    )

    def shout(c: StepContext) -> Any:
        return {"text": c.input_data["text"].upper(), "length": len(c.input_data["text"])}

    return (
        h.workflow.then(create_step(agent, clock=lambda: FROZEN_MS)).then(_step(v, "shout", shout)).commit()
    )


BUILDERS: dict[str, Callable[[dict[str, Any], Harness], Workflow]] = {
    "sequential-then": sequential_then,
    "bail-early": bail_early,
    "branch": branch,
    "cancel-during-step": cancel_during_step,
    "cancel-step-throws": cancel_step_throws,
    "dountil-loop": dountil_loop,
    "dowhile-loop": dowhile_loop,
    "invalid-step-output": invalid_step_output,
    "step-retries": step_retries,
    "step-throws": step_throws,
    "step-writer-output": step_writer_output,
    "suspend-resume": suspend_resume,
    "agent-step": agent_step,
}


def build(vector: dict[str, Any]) -> Harness:
    """The vector's workflow (committed) with its harness."""
    harness = Harness(workflow=_workflow(vector))
    harness.workflow = BUILDERS[vector["name"]](vector, harness)
    return harness

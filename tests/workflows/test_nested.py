"""Workflows used as steps of other workflows (`_nested`): their steps in the outer run's stream, a
fresh run per execution, shared state, suspending and resuming through them."""

from __future__ import annotations

from typing import Any

import pytest

from agentstream import Mastra
from agentstream.chunks import (
    chunk_to_dict,
)
from agentstream.storage import BaseStore
from agentstream.workflows import (
    StepContext,
    Workflow,
    WorkflowResumeError,
    create_step,
    create_workflow,
)

from ._support import add, approval_workflow, chunks_of


async def test_nested_workflow_steps_stream_as_steps_of_the_outer_run() -> None:
    # Mastra relays a nested run's events into the outer run (workflow.ts, Workflow.execute): the
    # inner steps are top-level steps with prefixed ids and the outer runId; writer.write and
    # custom data-* chunks written inside are top level too
    def inner_a(c: StepContext) -> Any:
        c.writer.write({"note": "working"})
        c.writer.custom({"type": "data-progress", "data": {"pct": 50}})
        return {"value": c.input_data["value"] + 1}

    inner = (
        create_workflow(id="inner-wf")
        .then(create_step(id="inner-a", execute=inner_a))
        .then(add(2, "inner-b"))
        .commit()
    )
    outer = create_workflow(id="outer").then(inner).then(add(10)).commit()
    run = await outer.create_run("run-9", clock=lambda: 7)
    output = run.stream(input_data={"value": 0})
    chunks = [chunk_to_dict(c) for c in await chunks_of(output)]
    assert (await output.result).result == {"value": 13}
    assert {c.get("runId") for c in chunks} == {"run-9"}
    kinds = [(c["type"], (c.get("payload") or {}).get("id")) for c in chunks]
    assert kinds == [
        ("workflow-start", None),
        ("workflow-step-start", "inner-wf"),
        ("workflow-step-start", "inner-wf.inner-a"),
        ("workflow-step-output", None),
        ("data-progress", None),
        ("workflow-step-result", "inner-wf.inner-a"),
        ("workflow-step-start", "inner-wf.inner-b"),
        ("workflow-step-result", "inner-wf.inner-b"),
        ("workflow-step-result", "inner-wf"),
        ("workflow-step-start", "add-10"),
        ("workflow-step-result", "add-10"),
        ("workflow-finish", None),
    ]
    start = chunks[2]
    assert start["from"] == "WORKFLOW" and start["payload"]["stepName"] == "inner-wf.inner-a"
    assert start["payload"]["payload"] == {"value": 0} and start["payload"]["startedAt"] == 7
    assert chunks[3] == {
        "type": "workflow-step-output",
        "runId": "run-9",
        "from": "USER",
        "payload": {"output": {"note": "working"}, "runId": "run-9", "stepName": "inner-a"},
    }
    assert chunks[4] == {"type": "data-progress", "data": {"pct": 50}, "runId": "run-9", "from": "WORKFLOW"}
    assert outer.serialized_step_graph()[0]["step"]["component"] == "WORKFLOW"


async def test_a_nested_workflow_runs_afresh_for_every_foreach_item_and_loop_round() -> None:
    inner = create_workflow(id="inner").then(add(1)).then(add(2)).commit()
    each = create_workflow(id="each").foreach(inner, concurrency=2).commit()
    result = await (await each.create_run()).start(input_data=[{"value": 0}, {"value": 10}, {"value": 20}])
    assert (result.status, result.result) == ("success", [{"value": 3}, {"value": 13}, {"value": 23}])

    until = create_workflow(id="until").dountil(inner, lambda c: c.input_data["value"] >= 9).commit()
    result = await (await until.create_run()).start(input_data={"value": 0})
    assert (result.status, result.result) == ("success", {"value": 9})


async def test_a_retried_nested_workflow_step_runs_the_child_again() -> None:
    calls: list[int] = []

    def flaky(c: StepContext) -> Any:
        calls.append(c.input_data["value"])
        if len(calls) == 1:
            raise RuntimeError("flaky")
        return c.input_data

    inner = create_workflow(id="inner").then(create_step(id="flaky", execute=flaky)).commit()
    outer = create_workflow(id="outer", retry_config={"attempts": 1}).then(inner).commit()
    run = await outer.create_run()
    result = await run.start(input_data={"value": 5})
    assert (result.status, result.result, calls) == ("success", {"value": 5}, [5, 5])
    # The child's saved run is its last execution's.
    snapshot = await inner.storage.load_workflow_snapshot("inner", f"{run.run_id}.inner")
    assert snapshot is not None and snapshot["status"] == "success"


async def test_nested_conversion_names_the_tool_workflow_parts() -> None:
    from agentstream.ai_sdk import WorkflowUIChunkConverter

    wf = create_workflow(id="n").then(add(1)).commit()
    output = (await wf.create_run("r")).stream(input_data={"value": 0})
    converter = WorkflowUIChunkConverter(nested=True)
    parts = [p for c in await chunks_of(output) for p in converter.convert(c)]
    assert {p["type"] for p in parts} == {"data-tool-workflow", "data-tool-workflow-step"}
    assert parts[-1]["data"]["status"] == "success"


async def test_a_nested_workflow_shares_the_parents_state() -> None:
    def count(c: StepContext) -> Any:
        c.set_state({"seen": [*c.state["seen"], c.step_id]})
        return c.input_data

    inner = create_workflow(id="inner").then(create_step(id="in-1", execute=count)).commit()
    outer = (
        create_workflow(id="outer")
        .then(create_step(id="out-1", execute=count))
        .then(inner)
        .then(create_step(id="out-2", execute=lambda c: {"state": c.state}))
        .commit()
    )
    run = await outer.create_run()
    result = await run.start(input_data={}, initial_state={"seen": []})
    assert result.result == {"state": {"seen": ["out-1", "in-1"]}}


async def test_a_nested_workflow_suspends_its_parent_and_resumes_where_it_stopped(store: BaseStore) -> None:
    inner = approval_workflow()
    outer = (
        create_workflow(id="outer")
        .then(add(1, id="before"))
        .then(inner)
        .then(create_step(id="after", execute=lambda c: {"done": c.input_data}))
        .commit()
    )
    Mastra(workflows={"outer": outer, "approval": inner}, storage=store)
    run = await outer.create_run()
    result = await run.start(input_data={"value": 1})
    # The parent suspends at the nested step, on the path to the child's own suspended step.
    assert result.status == "suspended" and result.suspended == [["approval", "approve"]]
    meta = result.suspend_payload["approval"]["__workflow_meta"]
    assert result.suspend_payload["approval"]["question"] == "ok?"
    assert meta == {"runId": f"{run.run_id}.approval", "path": ["approve"]}

    # From storage, in a new run object (another process would do the same); the child's resume
    # schema is checked before anything runs, naming the child's step.
    again = await outer.create_run(run.run_id)
    with pytest.raises(WorkflowResumeError, match="Invalid resume data for step 'approve'"):
        again.resume_stream(step=["approval", "approve"], resume_data={"approved": "yes"})
    resumed = await again.resume(step=["approval", "approve"], resume_data={"approved": True})
    assert resumed.status == "success"
    assert resumed.result == {"done": {"approved": True, "asked": {"question": "ok?"}}}
    child = await inner.storage.load_workflow_snapshot("approval", meta["runId"])
    assert child is not None and child["status"] == "success"


async def test_a_workflow_nested_twice_suspends_and_resumes_through_both() -> None:
    inner = approval_workflow()
    middle = create_workflow(id="middle").then(inner).commit()
    outer = create_workflow(id="outer").then(middle).commit()
    run = await outer.create_run()
    result = await run.start(input_data={})
    assert result.status == "suspended" and result.suspended == [["middle", "approval", "approve"]]
    resumed = await run.resume(resume_data={"approved": False})  # the only suspended step
    assert resumed.status == "success" and resumed.result == {"approved": False, "asked": {"question": "ok?"}}


async def test_a_nested_workflow_not_registered_itself_is_saved_where_its_parent_is(store: BaseStore) -> None:
    def build() -> Workflow:
        return create_workflow(id="outer").then(approval_workflow()).commit()

    # Two Mastras over one store, each with its own workflow objects: two processes.
    first = Mastra(workflows={"outer": build()}, storage=store).get_workflow("outer")
    run = await first.create_run("r-nested")
    assert (await run.start(input_data={})).status == "suspended"
    second = Mastra(workflows={"outer": build()}, storage=store).get_workflow("outer")
    resumed = await (await second.create_run("r-nested")).resume(resume_data={"approved": True})
    assert resumed.status == "success" and resumed.result == {"approved": True, "asked": {"question": "ok?"}}

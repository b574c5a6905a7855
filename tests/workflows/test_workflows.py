"""The workflow layer beyond the recorded vectors: every builder method, the step context, validation
errors, cancel, watch, the run lifecycle and snapshots in every storage backend."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

import pydantic
import pytest

from agentstream import Mastra, tool
from agentstream.chunks import (
    WorkflowStepFinish,
    WorkflowStepResult,
    WorkflowStepStart,
    chunk_to_dict,
    zero_workflow_usage,
)
from agentstream.storage import BaseStore
from agentstream.workflows import (
    StepContext,
    WorkflowDefinitionError,
    WorkflowError,
    WorkflowInputValidationError,
    WorkflowResumeError,
    create_step,
    create_workflow,
)

from ._support import NUMBER, add, approval_workflow, chunks_of

# ------------------------------------------------------------------------------------- building


def test_builder_errors_name_what_is_wrong() -> None:
    with pytest.raises(WorkflowDefinitionError, match="two different steps have the id 'add-1'"):
        create_workflow(id="w").then(add(1)).then(add(1))
    with pytest.raises(WorkflowDefinitionError, match="has no steps"):
        create_workflow(id="w").commit()
    with pytest.raises(WorkflowDefinitionError, match=r"retry_config\.attempts must be an int >= 0, got -1"):
        create_workflow(id="w", retry_config={"attempts": -1})
    with pytest.raises(WorkflowDefinitionError, match="unknown key"):
        create_workflow(id="w", retry_config={"tries": 1})
    with pytest.raises(WorkflowDefinitionError, match=r"foreach\(concurrency\) must be an int >= 1"):
        create_workflow(id="w").foreach(add(1), concurrency=0)
    with pytest.raises(WorkflowDefinitionError, match="expected a Step"):
        create_workflow(id="w").then("add")  # type: ignore[arg-type]
    with pytest.raises(WorkflowDefinitionError, match="timezone-aware"):
        create_workflow(id="w").sleep_until(datetime(2030, 1, 1))
    committed = create_workflow(id="w").then(add(1)).commit()
    with pytest.raises(WorkflowDefinitionError, match="is committed"):
        committed.then(add(2))


async def test_a_workflow_must_be_committed_to_run() -> None:
    with pytest.raises(WorkflowDefinitionError, match=r"not committed; call \.commit\(\)"):
        await create_workflow(id="w").then(add(1)).create_run()


def test_serialized_step_graph_names_every_entry() -> None:
    wf = (
        create_workflow(id="g")
        .then(add(1))
        .parallel([add(2), add(3)])
        .map(lambda c: {"value": c.input_data["add-2"]["value"]}, id="pick")
        .dountil(add(4), lambda c: True)
        .sleep(5)
        .commit()
    )
    kinds = [e["type"] for e in wf.serialized_step_graph()]
    assert kinds == ["step", "parallel", "step", "loop", "sleep"]
    assert wf.serialized_step_graph()[0] == {"type": "step", "step": {"id": "add-1", "canSuspend": False}}
    assert wf.describe()["steps"]["pick"]["canSuspend"] is False


# ------------------------------------------------------------------------------------- running


async def test_parallel_runs_every_step_on_the_same_input_and_announces_them_first() -> None:
    wf = (
        create_workflow(id="p")
        .parallel([add(1), add(10)])
        .then(
            create_step(
                id="sum",
                execute=lambda c: {"value": c.input_data["add-1"]["value"] + c.input_data["add-10"]["value"]},
            )
        )
        .commit()
    )
    run = await wf.create_run()
    output = run.stream(input_data={"value": 1})
    chunks = await chunks_of(output)
    kinds = [
        (c.type, getattr(c.payload, "id", None))
        for c in chunks
        if isinstance(c, (WorkflowStepStart, WorkflowStepResult))
    ]
    assert kinds[:2] == [("workflow-step-start", "add-1"), ("workflow-step-start", "add-10")]
    result = await output.result
    assert result.status == "success" and result.result == {"value": 13}


def test_map_step_ids_are_the_workflow_id_and_the_mappings_ordinal() -> None:
    def build() -> list[str]:
        wf = (
            create_workflow(id="m")
            .map(lambda c: c.input_data)
            .then(add(1))
            .map(lambda c: c.input_data, id="mapping_m_1")
            .map(lambda c: c.input_data)
            .commit()
        )
        return list(wf.steps)

    # the same ids every time the workflow is built (a snapshot resumes in another process); an id
    # taken explicitly is skipped
    assert build() == build() == ["mapping_m_0", "add-1", "mapping_m_1", "mapping_m_2"]


async def test_context_gives_init_data_step_results_and_state() -> None:
    def first(c: StepContext) -> Any:
        c.set_state({**c.state, "seen": ["first"]})
        return {"value": c.input_data["value"] * 2}

    def second(c: StepContext) -> Any:
        c.set_state({**c.state, "seen": [*c.state["seen"], "second"]})
        return {
            "init": c.get_init_data(),
            "first": c.get_step_result("first"),
            "never": c.get_step_result("nope"),
            "state": c.state,
            "mapped": c.input_data,
        }

    first_step = create_step(id="first", execute=first)
    wf = (
        create_workflow(id="ctx")
        .then(first_step)
        .map(lambda c: {"doubled": c.input_data["value"], "again": c.get_step_result(first_step)["value"]})
        .then(create_step(id="second", execute=second))
        .commit()
    )
    result = await (await wf.create_run()).start(input_data={"value": 3}, initial_state={"tenant": "t1"})
    assert result.result == {
        "init": {"value": 3},
        "first": {"value": 6},
        "never": None,
        "state": {"tenant": "t1", "seen": ["first", "second"]},
        "mapped": {"doubled": 6, "again": 6},
    }


async def test_pydantic_schemas_validate_and_parse() -> None:
    class In(pydantic.BaseModel):
        value: int

    class Out(pydantic.BaseModel):
        label: str

    step = create_step(
        id="label", input_schema=In, output_schema=Out, execute=lambda c: Out(label=f"v{c.input_data.value}")
    )
    wf = create_workflow(id="pyd", input_schema=In).then(step).commit()
    assert (await (await wf.create_run()).start(input_data={"value": 2})).result == {"label": "v2"}
    with pytest.raises(
        WorkflowInputValidationError, match=r"- value: Invalid input: expected number, received string"
    ):
        await (await wf.create_run()).start(input_data={"value": "two"})


async def test_invalid_workflow_input_runs_nothing_and_the_stream_ends_failed_with_it() -> None:
    ran = []
    wf = (
        create_workflow(id="in", input_schema=NUMBER)
        .then(create_step(id="s", execute=lambda c: ran.append(1)))
        .commit()
    )
    run = await wf.create_run("r")
    output = run.stream(input_data={"value": "x"})  # does not raise: the stream tells (as Mastra's)
    chunks = [chunk_to_dict(c) for c in await chunks_of(output)]
    message = "Invalid input data: \n- value: Invalid input: expected number, received string"
    assert chunks == [
        {"type": "workflow-start", "runId": "r", "from": "WORKFLOW", "payload": {"workflowId": "in"}},
        {
            "type": "workflow-finish",
            "runId": "r",
            "from": "WORKFLOW",
            "payload": {
                "workflowStatus": "failed",
                "output": {"usage": zero_workflow_usage()},
                "metadata": {
                    # MastraError.toJSON(): no name
                    "error": {
                        "message": message,
                        "domain": "MASTRA_WORKFLOW",
                        "category": "USER",
                        "code": "WORKFLOW_SCHEMA_VALIDATION_FAILED",
                        "details": {},
                    },
                    "errorMessage": message,
                },
            },
        },
    ]
    with pytest.raises(WorkflowInputValidationError) as info:
        await output.result
    assert info.value.issues[0].path == ("value",)
    usage = await output.usage
    assert (output.status, run.status, usage.to_wire()) == ("failed", "failed", zero_workflow_usage())
    assert not ran
    # start() raises it (Mastra's start throws the schema error)
    with pytest.raises(WorkflowInputValidationError, match="- value: Invalid input"):
        await (await wf.create_run()).start(input_data={})


async def test_a_bad_step_output_fails_the_next_steps_input_check_naming_the_field() -> None:
    # Mastra checks no step output against its outputSchema (the invalid-step-output recording):
    # the step that reads it fails its input check
    bad_out = create_step(id="bad", output_schema=NUMBER, execute=lambda c: {"value": "x"})
    strict = create_step(id="strict", input_schema=NUMBER, execute=lambda c: c.input_data)
    wf = create_workflow(id="o").then(bad_out).then(strict).commit()
    result = await (await wf.create_run()).start(input_data={})
    assert result.status == "failed"
    assert result.steps["bad"]["status"] == "success"
    assert (
        str(result.error)
        == "Step input validation failed: \n- value: Invalid input: expected number, received string"
    )
    assert result.to_dict()["error"]["code"] == "WORKFLOW_STEP_INPUT_VALIDATION_FAILED"


async def test_step_retries_override_the_workflow_config() -> None:
    calls = []

    def flaky(c: StepContext) -> Any:
        calls.append(c.retry_count)
        if len(calls) < 2:
            raise RuntimeError("flaky")
        return {"ok": True}

    wf = create_workflow(id="r").then(create_step(id="flaky", execute=flaky, retries=1)).commit()
    assert (await (await wf.create_run()).start(input_data={})).result == {"ok": True}
    assert calls == [0, 1]


async def test_tool_as_a_step() -> None:
    @tool
    async def shout(text: str) -> dict[str, str]:
        """Upper-case the text."""
        return {"text": text.upper()}

    wf = create_workflow(id="t").then(create_step(shout)).commit()
    assert (await (await wf.create_run()).start(input_data={"text": "hi"})).result == {"text": "HI"}
    result = await (await wf.create_run()).start(input_data={"txt": "hi"})
    assert result.status == "failed" and "Step input validation failed" in str(result.error)


# ------------------------------------------------------------------------------------- lifecycle


async def test_stream_twice_returns_the_same_output_and_a_finished_run_cannot_start_again() -> None:
    wf = create_workflow(id="once").then(add(1)).commit()
    run = await wf.create_run()
    output = run.stream(input_data={"value": 1})
    assert run.stream(input_data={"value": 1}) is output
    await output.result
    late = [c.type for c in await chunks_of(output)]
    assert late[0] == "workflow-start" and late[-1] == "workflow-finish"


async def test_watch_sees_internal_events_until_unwatched() -> None:
    wf = create_workflow(id="watch").then(add(1)).then(add(2)).commit()
    run = await wf.create_run()
    seen: list[str] = []
    unwatch = run.watch(lambda c: seen.append(c.type))
    output = run.stream(input_data={"value": 1})
    assert not any(isinstance(c, WorkflowStepFinish) for c in await chunks_of(output))
    assert seen.count("workflow-step-finish") == 2
    unwatch()
    unwatch()


async def test_cancel_interrupts_a_step_that_ignores_the_signal_after_the_grace_period() -> None:
    started = asyncio.Event()

    async def stubborn(c: StepContext) -> Any:
        started.set()
        await asyncio.Event().wait()

    wf = create_workflow(id="stubborn").then(create_step(id="s", execute=stubborn)).then(add(1)).commit()
    run = await wf.create_run(cancel_grace_ms=0)
    output = run.stream(input_data={"value": 1})
    await started.wait()
    await run.cancel()
    chunks = [chunk_to_dict(c) for c in await chunks_of(output)]
    assert [c["type"] for c in chunks] == [
        "workflow-start",
        "workflow-step-start",
        "workflow-step-result",
        "workflow-canceled",
        "workflow-finish",
    ]
    assert chunks[2]["payload"]["error"]["name"] == "AbortError"
    assert output.status == "canceled" and (await output.result).status == "canceled"


async def test_resume_errors_name_what_is_wrong() -> None:
    wf = approval_workflow()
    run = await wf.create_run()
    with pytest.raises(WorkflowResumeError, match="is pending, not suspended"):
        run.resume_stream(step="approve", resume_data={"approved": True})
    assert (await run.start(input_data={})).status == "suspended"
    assert run.suspended_steps == ["approve"]
    with pytest.raises(
        WorkflowResumeError, match=r"step 'nope' of run .* is not suspended \(suspended: \['approve'\]\)"
    ):
        run.resume_stream(step="nope", resume_data={"approved": True})
    with pytest.raises(
        WorkflowResumeError, match="- approved: Invalid input: expected boolean, received string"
    ):
        run.resume_stream(step="approve", resume_data={"approved": "yes"})
    result = await run.resume(resume_data={"approved": True})
    assert result.result == {"approved": True, "asked": {"question": "ok?"}}
    with pytest.raises(WorkflowResumeError, match="is success, not suspended"):
        run.resume_stream(resume_data={"approved": True})


async def test_cancel_a_suspended_run() -> None:
    wf = approval_workflow()
    run = await wf.create_run("r-cancel")
    await run.start(input_data={})
    await run.cancel()
    assert run.status == "canceled"
    again = await wf.create_run("r-cancel")
    assert again.status == "canceled"
    with pytest.raises(WorkflowResumeError, match="is canceled"):
        again.resume_stream(resume_data={"approved": True})


async def test_workflow_canceled_carries_an_empty_payload_on_the_wire() -> None:
    # Mastra's entry.ts publishes {type: 'workflow-canceled', payload: {}} (the cancel vectors too)
    import json

    from agentstream.chunks import WorkflowCanceled, encode_chunk

    started = asyncio.Event()

    async def wait(c: StepContext) -> Any:
        started.set()
        await c.abort_signal.wait()
        return {}

    wf = create_workflow(id="cw").then(create_step(id="wait", execute=wait)).commit()
    run = await wf.create_run("r-c")
    output = run.stream(input_data={})
    await started.wait()
    await run.cancel()
    (canceled,) = [c for c in await chunks_of(output) if isinstance(c, WorkflowCanceled)]
    assert json.loads(encode_chunk(canceled)) == {
        "type": "workflow-canceled",
        "runId": "r-c",
        "from": "WORKFLOW",
        "payload": {},
    }


async def test_suspend_payload_is_checked_against_the_suspend_schema() -> None:
    step = create_step(
        id="s",
        suspend_schema={"type": "object", "properties": {"n": {"type": "number"}}, "required": ["n"]},
        execute=lambda c: c.suspend({"n": "one"}),
    )
    result = await (await create_workflow(id="ss").then(step).commit().create_run()).start(input_data={})
    assert result.status == "failed" and "- n: Invalid input: expected number, received string" in str(
        result.error
    )


# ------------------------------------------------------------------------------------- snapshots


async def test_a_suspended_run_resumes_from_storage_in_a_new_run_object(store: BaseStore) -> None:
    wf = approval_workflow()
    mastra = Mastra(workflows={"approval": wf}, storage=store)
    assert mastra.get_workflow("approval") is wf and mastra.get_workflows() == {"approval": wf}
    first = await mastra.get_workflow("approval").create_run("run-x")
    assert (await first.start(input_data={"n": 1})).status == "suspended"
    snapshot = await store.load_workflow_snapshot("approval", "run-x")
    assert isinstance(snapshot, dict) and snapshot["status"] == "suspended"
    assert snapshot["suspendedPaths"] == {"approve": [0]}

    second = await wf.create_run("run-x")
    assert second.status == "suspended" and second.suspended_steps == ["approve"]
    result = await second.resume(step="approve", resume_data={"approved": False})
    assert result.status == "success" and result.input == {"n": 1}
    assert result.result == {"approved": False, "asked": {"question": "ok?"}}
    final = await store.load_workflow_snapshot("approval", "run-x")
    assert isinstance(final, dict) and final["status"] == "success" and final["result"] == result.result


async def test_only_one_of_two_concurrent_resumes_wins(store: BaseStore) -> None:
    wf = approval_workflow()
    Mastra(workflows={"approval": wf}, storage=store)
    await (await wf.create_run("run-y")).start(input_data={})
    a, b = await wf.create_run("run-y"), await wf.create_run("run-y")
    out_a = a.resume_stream(resume_data={"approved": True})
    out_b = b.resume_stream(resume_data={"approved": True})
    results = await asyncio.gather(out_a.result, out_b.result, return_exceptions=True)
    wins = [r for r in results if not isinstance(r, BaseException)]
    losses = [r for r in results if isinstance(r, WorkflowResumeError)]
    assert len(wins) == 1 and len(losses) == 1 and "resumed elsewhere" in str(losses[0])
    loser = out_a if isinstance(results[0], BaseException) else out_b
    finish = [chunk_to_dict(c) async for c in loser.full_stream][-1]
    assert finish["payload"]["workflowStatus"] == "failed"
    assert "resumed elsewhere" in finish["payload"]["metadata"]["errorMessage"]


async def test_unknown_workflow_in_mastra() -> None:
    mastra = Mastra(workflows={"a": create_workflow(id="a").then(add(1)).commit()})
    with pytest.raises(KeyError, match=r"workflow 'b' is not registered \(registered: a\)"):
        mastra.get_workflow("b")
    with pytest.raises(TypeError, match="Mastra workflows must be Workflow instances"):
        Mastra(workflows={"x": object()})  # type: ignore[dict-item]
    await mastra.aclose()


async def test_a_crashing_step_function_is_a_step_failure_not_a_crash() -> None:
    wf = create_workflow(id="crash").then(create_step(id="s", execute=lambda c: 1 / 0)).commit()
    output = (await wf.create_run()).stream(input_data={})
    chunks = [chunk_to_dict(c) for c in await chunks_of(output)]
    assert chunks[2]["payload"]["error"] == {"name": "ZeroDivisionError", "message": "division by zero"}
    assert (await output.result).status == "failed"
    with pytest.raises(WorkflowError):
        output_again = (await wf.create_run("same")).stream(input_data={})
        await output_again.result
        (await wf.create_run("same")).stream(input_data={})


async def test_cancel_interrupts_stubborn_parallel_and_foreach_steps() -> None:
    started = asyncio.Event()

    async def stubborn(c: StepContext) -> Any:
        started.set()
        await asyncio.Event().wait()

    for wf in (
        create_workflow(id="par")
        .parallel([create_step(id="a", execute=stubborn), create_step(id="b", execute=stubborn)])
        .commit(),
        create_workflow(id="each").foreach(create_step(id="a", execute=stubborn), concurrency=2).commit(),
    ):
        started.clear()
        run = await wf.create_run(cancel_grace_ms=0)
        output = run.stream(input_data=[1, 2, 3])
        await started.wait()
        await run.cancel()
        kinds = [c.type for c in await chunks_of(output)]
        assert kinds[-2:] == ["workflow-canceled", "workflow-finish"], (wf.id, kinds)
        assert (await output.result).status == "canceled"


async def test_a_watcher_added_while_the_run_streams_sees_the_rest() -> None:
    gate = asyncio.Event()

    async def wait(c: StepContext) -> Any:
        await gate.wait()
        return c.input_data

    wf = create_workflow(id="late-watch").then(create_step(id="w", execute=wait)).commit()
    run = await wf.create_run()
    output = run.stream(input_data={})
    seen: list[str] = []
    await asyncio.sleep(0)
    run.watch(lambda c: seen.append(c.type))
    gate.set()
    await output.result
    assert seen == ["workflow-step-result", "workflow-step-finish"]


async def test_context_knows_its_run_workflow_and_mastra() -> None:
    seen: dict[str, Any] = {}

    def look(c: StepContext) -> Any:
        seen.update(run_id=c.run_id, workflow_id=c.workflow_id, step_id=c.step_id, mastra=c.mastra)
        return {}

    wf = create_workflow(id="who").then(create_step(id="look", execute=look)).commit()
    mastra = Mastra(workflows={"who": wf})
    await (await mastra.get_workflow("who").create_run("run-7")).start(input_data={})
    assert seen == {"run_id": "run-7", "workflow_id": "who", "step_id": "look", "mastra": mastra}


async def test_agent_step_with_structured_output() -> None:
    from agentstream import Agent
    from agentstream.testing import ScriptedModel

    answer = '{"city": "Oslo", "celsius": 4}'
    model = ScriptedModel(
        [
            [
                {"type": "stream-start", "warnings": []},
                {"type": "text-start", "id": "t"},
                {"type": "text-delta", "id": "t", "delta": answer},
                {"type": "text-end", "id": "t"},
                {
                    "type": "finish",
                    "finishReason": "stop",
                    "usage": {"inputTokens": 5, "outputTokens": 7, "totalTokens": 12},
                },
            ]
        ]
    )
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}, "celsius": {"type": "number"}},
        "required": ["city", "celsius"],
    }
    agent = Agent(id="forecaster", model=model)
    wf = create_workflow(id="so").then(create_step(agent, structured_output={"schema": schema})).commit()
    output = (await wf.create_run()).stream(input_data={"prompt": "Oslo?"})
    result = await output.result
    assert result.status == "success", result.error
    assert result.result == {"city": "Oslo", "celsius": 4}
    usage = await output.usage
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (5, 7, 12)
    with pytest.warns(DeprecationWarning, match="usage.input_tokens"):
        assert usage["inputTokens"] == 5  # the dict access of earlier releases, for one more
    with pytest.warns(DeprecationWarning):
        assert usage == {**zero_workflow_usage(), "inputTokens": 5, "outputTokens": 7, "totalTokens": 12}


async def test_a_tripwire_in_an_agent_step_fails_the_step_and_ends_the_run_tripwire() -> None:
    # Mastra's agent step forwards the tripwire and throws it (createStepFromAgent); the step fails
    # with error + tripwire, nothing after it runs, the run ends "tripwire" (default.ts fmtReturnValue)
    from agentstream import Agent
    from agentstream.testing import ScriptedModel

    class Guard:
        id = "guard"

        async def process_output_stream(self, *, part: Any, abort: Any, **_: Any) -> Any:
            if getattr(part, "type", "") == "text-delta" and "secret" in part.payload.text:
                abort("no secrets", metadata={"why": "policy"})
            return part

    model = ScriptedModel(
        [
            [
                {"type": "stream-start", "warnings": []},
                {"type": "text-start", "id": "t"},
                {"type": "text-delta", "id": "t", "delta": "the secret is 42"},
                {"type": "text-end", "id": "t"},
                {"type": "finish", "finishReason": "stop", "usage": {"inputTokens": 2, "outputTokens": 3}},
            ]
        ]
    )
    ran: list[Any] = []
    agent = Agent(id="talker", model=model, output_processors=[Guard()])
    wf = (
        create_workflow(id="tw")
        .then(create_step(agent))
        .then(create_step(id="after", execute=lambda c: ran.append(c.input_data)))
        .commit()
    )
    output = (await wf.create_run("r")).stream(input_data={"prompt": "tell me"})
    chunks = [chunk_to_dict(c) for c in await chunks_of(output)]
    results = [c["payload"] for c in chunks if c["type"] == "workflow-step-result"]
    assert len(results) == 1 and results[0]["id"] == "talker" and results[0]["status"] == "failed"
    tripwire = {"reason": "no secrets", "metadata": {"why": "policy"}, "processorId": "guard"}
    assert results[0]["tripwire"] == tripwire
    assert results[0]["error"]["message"] == "no secrets"
    forwarded = [c["payload"]["output"]["type"] for c in chunks if c["type"] == "workflow-step-output"]
    assert forwarded[-1] == "tripwire"
    assert chunks[-1]["payload"]["workflowStatus"] == "tripwire"
    result = await output.result
    assert (result.status, output.status, ran) == ("tripwire", "tripwire", [])
    assert result.to_dict()["tripwire"] == tripwire and "error" not in result.to_dict()
    assert result.steps["talker"]["tripwire"] == tripwire


async def test_suspend_inside_parallel_resumes_each_branch_in_turn() -> None:
    def ask(name: str) -> Any:
        async def execute(c: StepContext) -> Any:
            if c.resume_data is None:
                return await c.suspend({"who": name})
            return {"answer": c.resume_data}

        return create_step(id=name, execute=execute)

    wf = (
        create_workflow(id="par-suspend")
        .parallel([ask("a"), ask("b"), add(1, id="plain")])
        .then(
            create_step(id="join", execute=lambda c: {"keys": sorted(c.input_data), "a": c.input_data["a"]})
        )
        .commit()
    )
    run = await wf.create_run()
    first = await run.start(input_data={"value": 1})
    assert first.status == "suspended" and sorted(run.suspended_steps) == ["a", "b"]
    assert first.suspend_payload == {"a": {"who": "a"}, "b": {"who": "b"}}
    second = await run.resume(step="a", resume_data="yes")
    assert second.status == "suspended" and run.suspended_steps == ["b"]
    third = await run.resume(step="b", resume_data="no")
    assert third.status == "success"
    assert third.result == {"keys": ["a", "b", "plain"], "a": {"answer": "yes"}}


async def test_suspend_inside_a_loop_resumes_the_iteration_and_goes_on() -> None:
    async def count(c: StepContext) -> Any:
        value = c.input_data["value"]
        if value == 2 and c.resume_data is None:
            return await c.suspend({"at": value})
        return {"value": value + (c.resume_data or {}).get("jump", 1)}

    wf = (
        create_workflow(id="loop-suspend")
        .dountil(create_step(id="count", execute=count), lambda c: c.input_data["value"] >= 10)
        .commit()
    )
    run = await wf.create_run()
    assert (await run.start(input_data={"value": 0})).status == "suspended"
    output = run.resume_stream(step="count", resume_data={"jump": 5})
    chunks = [chunk_to_dict(c) for c in await chunks_of(output)]
    starts = [c["payload"] for c in chunks if c["type"] == "workflow-step-start"]
    assert [s["metadata"]["iterationCount"] for s in starts] == [3, 4, 5, 6]  # 2 -> 7 -> 8 -> 9 -> 10
    assert starts[0]["resumePayload"] == {"jump": 5}
    assert (await output.result).result == {"value": 10}


async def test_a_branch_suspended_in_one_run_object_resumes_in_another() -> None:
    async def gate(c: StepContext) -> Any:
        if c.resume_data is None:
            return await c.suspend({})
        return {"opened": True}

    wf = (
        create_workflow(id="branch-suspend")
        .branch(
            [(lambda c: True, create_step(id="gate", execute=gate)), (lambda c: False, add(1, id="skip"))]
        )
        .commit()
    )
    await (await wf.create_run("b1")).start(input_data={"value": 1})
    result = await (await wf.create_run("b1")).resume(resume_data={})
    assert result.status == "success" and result.result == {"gate": {"opened": True}}
